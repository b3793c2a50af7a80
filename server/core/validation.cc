#include "server/core/validation.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/base/status_macros.h"
#include "model/tokenizer/utf8.h"

namespace textgen::server {

absl::Status FieldError(absl::StatusCode code, absl::string_view field, absl::string_view problem) {
  return WithField(absl::Status(code, absl::StrCat(field, " ", problem)), field);
}

absl::Status WithField(absl::Status status, absl::string_view field) {
  if (!status.ok()) status.SetPayload(kFieldPayload, absl::Cord(field));
  return status;
}

std::optional<std::string> ErrorField(const absl::Status& status) {
  const absl::optional<absl::Cord> field = status.GetPayload(kFieldPayload);
  if (!field.has_value()) return std::nullopt;
  return std::string(*field);
}

namespace {

using absl::StrCat;

// Prints a float the way a person typed it ("0.7", "nan", "-inf").
std::string Num(float value) { return absl::StrFormat("%g", value); }

// Checks lo <= value <= hi (or lo < value when lo_open) and that value is finite.
absl::Status CheckRange(float value, float lo, float hi, bool lo_open, absl::string_view field) {
  const bool ok = std::isfinite(value) && (lo_open ? value > lo : value >= lo) && value <= hi;
  if (ok) return absl::OkStatus();
  return InvalidField(field, StrCat("must be in ", lo_open ? "(" : "[", Num(lo), ", ", Num(hi),
                                    "], got ", Num(value)));
}

absl::Status ValidateSampling(const v1::SamplingParameters& in, int vocab_size,
                              const ValidationOptions& options, model::SamplingParams& out) {
  if (in.has_temperature()) {
    const float t = in.temperature();
    if (!std::isfinite(t) || t < 0 || t > kMaxTemperature) {
      return InvalidField("sampling.temperature",
                          StrCat("must be a finite number in [0, ", Num(kMaxTemperature),
                                 "] (0 = greedy), got ", Num(t)));
    }
    out.temperature = t;
  }
  if (in.top_k() < 0) {
    return InvalidField("sampling.top_k", StrCat("must be >= 0 (0 = disabled), got ", in.top_k()));
  }
  out.top_k = in.top_k();
  if (in.has_top_p()) {
    if (absl::Status s = CheckRange(in.top_p(), 0, 1, /*lo_open=*/true, "sampling.top_p");
        !s.ok()) {
      return s;
    }
    out.top_p = in.top_p();
  }
  if (absl::Status s = CheckRange(in.min_p(), 0, 1, /*lo_open=*/false, "sampling.min_p"); !s.ok()) {
    return s;
  }
  out.min_p = in.min_p();
  if (in.has_repetition_penalty()) {
    const float r = in.repetition_penalty();
    if (!std::isfinite(r) || r <= 0) {
      return InvalidField("sampling.repetition_penalty",
                          StrCat("must be a finite number > 0 (1 = off), got ", Num(r)));
    }
    out.repetition_penalty = r;
  }
  for (const auto& [value, field] :
       {std::pair{in.presence_penalty(), "sampling.presence_penalty"},
        std::pair{in.frequency_penalty(), "sampling.frequency_penalty"}}) {
    if (absl::Status s = CheckRange(value, -kMaxPenalty, kMaxPenalty, /*lo_open=*/false, field);
        !s.ok()) {
      return s;
    }
  }
  out.presence_penalty = in.presence_penalty();
  out.frequency_penalty = in.frequency_penalty();
  out.logit_bias.clear();
  if (in.logit_bias_size() > options.max_logit_bias_entries) {
    return InvalidField(
        "sampling.logit_bias",
        StrCat("has ", in.logit_bias_size(), " entries; at most ", options.max_logit_bias_entries,
               " are allowed (--max-logit-bias-entries)"));
  }
  out.logit_bias.reserve(in.logit_bias_size());
  for (const auto& [id, bias] : in.logit_bias()) {
    if (id < 0 || id >= vocab_size) {
      return InvalidField(
          "sampling.logit_bias",
          StrCat("has token id ", id, ", outside the vocabulary [0, ", vocab_size, ")"));
    }
    if (!std::isfinite(bias) || bias < -kMaxLogitBias || bias > kMaxLogitBias) {
      return InvalidField(StrCat("sampling.logit_bias[", id, "]"),
                          StrCat("must be in [", Num(-kMaxLogitBias), ", ", Num(kMaxLogitBias),
                                 "], got ", Num(bias)));
    }
    out.logit_bias.emplace_back(id, bias);
  }
  // Map order is unspecified; sort so equal requests give equal parameters.
  std::sort(out.logit_bias.begin(), out.logit_bias.end());
  return absl::OkStatus();
}

absl::Status ValidateStopping(const v1::StoppingCriteria& in, int vocab_size,
                              const ValidationOptions& options, StoppingParams& out) {
  if (in.stop_size() > options.max_stop_strings) {
    return InvalidField("stopping.stop",
                        StrCat("has ", in.stop_size(), " strings; at most ",
                               options.max_stop_strings, " are allowed (--max-stop-strings)"));
  }
  for (int i = 0; i < in.stop_size(); ++i) {
    const std::string& stop = in.stop(i);
    const std::string field = StrCat("stopping.stop[", i, "]");
    if (stop.empty()) return InvalidField(field, "is empty");
    if (stop.size() > static_cast<size_t>(options.max_stop_string_bytes)) {
      return InvalidField(
          field, StrCat("is ", stop.size(), " bytes; at most ", options.max_stop_string_bytes,
                        " are allowed (--max-stop-string-bytes)"));
    }
    TEXTGEN_RETURN_IF_ERROR(WithField(model::CheckUtf8(stop, field), field));
    out.stop_strings.push_back(stop);
  }
  if (in.stop_token_ids_size() > options.max_stop_token_ids) {
    return InvalidField("stopping.stop_token_ids",
                        StrCat("has ", in.stop_token_ids_size(), " ids; at most ",
                               options.max_stop_token_ids, " are allowed (--max-stop-token-ids)"));
  }
  if (absl::Status s = ValidateTokenIds(in.stop_token_ids(), vocab_size, "stopping.stop_token_ids");
      !s.ok()) {
    return s;
  }
  out.stop_token_ids.assign(in.stop_token_ids().begin(), in.stop_token_ids().end());
  out.ignore_eos = in.ignore_eos();
  return absl::OkStatus();
}

// Tokenizes the prompt (text or ids) into `out`.
absl::Status ValidatePrompt(const v1::GenerateRequest& request, const model::Tokenizer& tokenizer,
                            bool add_bos, size_t max_prompt_bytes, ValidatedRequest& out) {
  switch (request.prompt_case()) {
    case v1::GenerateRequest::kText: {
      const std::string& text = request.text();
      if (text.empty()) {
        return InvalidField("text", "is empty; send some text or token ids");
      }
      if (text.size() > max_prompt_bytes) {
        return InvalidField("text", StrCat("is ", text.size(), " bytes; at most ", max_prompt_bytes,
                                           " are accepted (server flag --max-prompt-bytes)"));
      }
      TEXTGEN_RETURN_IF_ERROR(WithField(model::CheckUtf8(text, "text"), "text"));
      out.prompt_tokens = request.parse_special()
                              ? tokenizer.EncodeWithSpecialTokens(text, add_bos, {})
                              : tokenizer.Encode(text, add_bos);
      out.prompt_text = text;
      if (out.prompt_tokens.empty()) {
        return InvalidField("text", "encodes to no tokens");
      }
      return absl::OkStatus();
    }
    case v1::GenerateRequest::kTokens: {
      const auto& ids = request.tokens().ids();
      if (ids.empty()) {
        return InvalidField("tokens.ids", "is empty; send at least one token id");
      }
      if (absl::Status s = ValidateTokenIds(ids, tokenizer.vocab_size(), "tokens.ids"); !s.ok()) {
        return s;
      }
      out.prompt_tokens.assign(ids.begin(), ids.end());
      return absl::OkStatus();
    }
    default:
      return InvalidField("prompt", "is missing: set either text or tokens");
  }
}

// Resolves max_new_tokens against the server limit and the room left in the context.
absl::Status ResolveLength(const v1::StoppingCriteria& in, int prompt_tokens,
                           const ValidationOptions& options, StoppingParams& out) {
  const int64_t context = options.context_length;
  if (prompt_tokens >= context) {
    return FieldError(absl::StatusCode::kOutOfRange, "prompt",
                      StrCat("is ", prompt_tokens,
                             " tokens, leaving no room to generate in the model's context length "
                             "of ",
                             context, " tokens"));
  }
  const int64_t requested = in.max_new_tokens();
  if (requested > options.max_new_tokens_limit) {
    return InvalidField("stopping.max_new_tokens",
                        StrCat("must be in [1, ", options.max_new_tokens_limit,
                               "] (server limit), got ", requested));
  }
  if (requested == 0) {
    // Unset: the server default, shortened to what still fits in the context.
    out.max_new_tokens = static_cast<int>(
        std::min<int64_t>(options.default_max_new_tokens, context - prompt_tokens));
  } else if (prompt_tokens + requested > context) {
    return FieldError(
        absl::StatusCode::kOutOfRange, "stopping.max_new_tokens",
        StrCat("(", requested, ") + the prompt (", prompt_tokens,
               " tokens) = ", prompt_tokens + requested, " exceeds the model's context length of ",
               context, " tokens; ask for at most ", context - prompt_tokens, " new tokens"));
  } else {
    out.max_new_tokens = static_cast<int>(requested);
  }
  if (in.min_new_tokens() > static_cast<uint32_t>(out.max_new_tokens)) {
    return InvalidField(
        "stopping.min_new_tokens",
        StrCat("(", in.min_new_tokens(), ") must not exceed the new tokens allowed (",
               out.max_new_tokens, ")"));
  }
  out.min_new_tokens = static_cast<int>(in.min_new_tokens());
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRequestId(absl::string_view id) {
  if (id.size() > static_cast<size_t>(kMaxRequestIdLength)) {
    return InvalidField("request_id", StrCat("is ", id.size(), " characters; at most ",
                                             kMaxRequestIdLength, " are allowed"));
  }
  // Request ids go into log lines: printable ASCII only, so no one can forge a line.
  for (size_t i = 0; i < id.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(id[i]);
    if (c < 0x21 || c > 0x7E) {
      return InvalidField(
          "request_id",
          absl::StrFormat(
              "has byte 0x%02X at offset %d; only printable ASCII without spaces is allowed", c,
              i));
    }
  }
  return absl::OkStatus();
}

std::string SessionKey(absl::string_view principal, absl::string_view session_id) {
  if (principal.empty()) return std::string(session_id);
  return absl::StrCat(principal, "/", session_id);
}

absl::Status ValidateSessionId(absl::string_view session_id, absl::string_view field,
                               int max_bytes) {
  if (session_id.empty() || session_id.size() > static_cast<size_t>(max_bytes)) {
    return InvalidField(field, StrCat("must be 1..", max_bytes, " characters, got ",
                                      session_id.size(), " (--max-session-id-bytes)"));
  }
  for (size_t i = 0; i < session_id.size(); ++i) {
    const char c = session_id[i];
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' &&
        c != '-') {
      return InvalidField(
          field, absl::StrFormat("has character 0x%02X at offset %d; allowed are [A-Za-z0-9._:-]",
                                 static_cast<uint8_t>(c), i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSessionRoutingHeader(const std::vector<absl::string_view>& header_values,
                                       absl::string_view session_id) {
  if (header_values.empty()) return absl::OkStatus();
  if (header_values.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", kSessionRoutingHeader, " header was sent ", header_values.size(),
                     " times; send it once, with the request's session_id"));
  }
  const absl::string_view header = header_values.front();
  if (header == session_id) return absl::OkStatus();
  // Neither value is echoed: the header is unvalidated client input.
  if (session_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", kSessionRoutingHeader, " header names a session (", header.size(),
                     " bytes) but the request has no session_id; set session_id "
                     "to the same id, or drop the header"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the ", kSessionRoutingHeader, " header (", header.size(),
      " bytes) differs from session_id (", session_id.size(),
      " bytes); send the same id in both: load balancers route a session's turns by the header"));
}

absl::Status ValidateTokenIds(const google::protobuf::RepeatedField<int32_t>& ids, int vocab_size,
                              absl::string_view field) {
  for (int i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return InvalidField(
          StrCat(field, "[", i, "]"),
          StrCat("= ", ids[i], " is not a token id: the vocabulary is [0, ", vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

// Compiles the output constraint (from the compiler's cache when it has seen it before).
absl::Status ValidateConstraint(const v1::OutputConstraint& in, const model::JsonFraming* framing,
                                const ValidationOptions& options, ConstraintParams& out) {
  model::ConstraintSpec spec;
  const char* field = "";
  switch (in.kind_case()) {
    case v1::OutputConstraint::KIND_NOT_SET:
      return absl::OkStatus();
    case v1::OutputConstraint::kJsonSchema:
      spec = {model::ConstraintKind::kJsonSchema, in.json_schema(),
              framing ? *framing : model::JsonFraming{}};
      field = "constraint.json_schema";
      break;
    case v1::OutputConstraint::kJsonObject:
      if (!in.json_object()) return absl::OkStatus();
      // Framed, any object is the schema that says so (the JSON-object grammar has no frame).
      spec = framing ? model::ConstraintSpec{model::ConstraintKind::kJsonSchema,
                                             R"({"type":"object"})", *framing}
                     : model::ConstraintSpec{model::ConstraintKind::kJsonObject, "", {}};
      field = "constraint.json_object";
      break;
    case v1::OutputConstraint::kRegex:
      spec = {model::ConstraintKind::kRegex, in.regex(), {}};
      field = "constraint.regex";
      break;
    case v1::OutputConstraint::kGrammar:
      spec = {model::ConstraintKind::kGrammar, in.grammar(), {}};
      field = "constraint.grammar";
      break;
  }
  return CompileConstraint(spec, field, options, out);
}

absl::Status CompileConstraint(const model::ConstraintSpec& spec, const char* field,
                               const ValidationOptions& options, ConstraintParams& out) {
  if (options.constraints == nullptr || options.token_trie == nullptr) {
    return FieldError(absl::StatusCode::kUnimplemented, field,
                      "output constraints are not enabled on this server");
  }
  TEXTGEN_RETURN_IF_ERROR(WithField(model::CheckUtf8(spec.text, field), field));
  absl::StatusOr<model::CompiledConstraint> compiled = options.constraints->Compile(spec);
  if (!compiled.ok()) {
    // Parsers quote what they stopped at, which may be part of a character.
    return FieldError(compiled.status().code(), field,
                      StrCat("is refused: ", model::SanitizeUtf8(std::string_view(
                                                 compiled.status().message().data(),
                                                 compiled.status().message().size()))));
  }
  out.grammar = std::move(compiled->grammar);
  out.token_trie = options.token_trie;
  out.compile_seconds = compiled->compile_seconds;
  out.cache_hit = compiled->from_cache;
  return absl::OkStatus();
}

absl::Status CheckGenerates(const ValidationOptions& options) {
  if (options.generates) return absl::OkStatus();
  return absl::FailedPreconditionError(
      StrCat("model \"", options.model_name,
             "\" is an embedding model (an encoder without an LM head): it cannot generate "
             "text; call Embed (HTTP: POST /v1/embeddings)"));
}

absl::StatusOr<ValidatedRequest> ValidateRequest(const RequestFields& fields,
                                                 const model::Tokenizer& tokenizer,
                                                 const ValidationOptions& options,
                                                 const RequestContext& context,
                                                 const PromptBuilder& build_prompt) {
  absl::BitGen bitgen;
  const auto random = [&]() -> uint64_t {
    return context.random ? context.random() : absl::Uniform<uint64_t>(bitgen);
  };
  ValidatedRequest out;
  TEXTGEN_RETURN_IF_ERROR(CheckGenerates(options));
  TEXTGEN_RETURN_IF_ERROR(ValidateRequestId(fields.request_id));
  out.request_id =
      fields.request_id.empty() ? absl::StrFormat("req-%016x", random()) : fields.request_id;
  if (!fields.session_id.empty()) {
    if (absl::Status s =
            ValidateSessionId(fields.session_id, "session_id", options.max_session_id_bytes);
        !s.ok()) {
      return s;
    }
    out.session_id = SessionKey(context.principal, fields.session_id);
  }
  const int vocab_size = tokenizer.vocab_size();
  if (absl::Status s = ValidateSampling(fields.sampling, vocab_size, options, out.sampling);
      !s.ok()) {
    return s;
  }
  out.sampling.seed = fields.sampling.has_seed() ? fields.sampling.seed() : random();
  out.speculate = !fields.sampling.no_speculation();
  if (absl::Status s = ValidateStopping(fields.stopping, vocab_size, options, out.stopping);
      !s.ok()) {
    return s;
  }
  const v1::OutputOptions& output = fields.output;
  if (output.top_logprobs() > static_cast<uint32_t>(kMaxTopLogprobs)) {
    return InvalidField("output.top_logprobs", StrCat("must be in [0, ", kMaxTopLogprobs, "], got ",
                                                      output.top_logprobs()));
  }
  out.output.top_logprobs = static_cast<int>(output.top_logprobs());
  // Asking for alternatives implies asking for the chosen token's logprob too.
  out.output.logprobs = output.logprobs() || output.top_logprobs() > 0;
  out.output.echo = output.echo();
  out.sampling.top_logprobs = out.output.top_logprobs;

  TEXTGEN_RETURN_IF_ERROR(
      ValidateConstraint(fields.constraint, fields.json_framing, options, out.constraint));

  // The prompt last: tokenizing is the expensive part, do it only for otherwise-valid requests.
  TEXTGEN_RETURN_IF_ERROR(build_prompt(out));
  if (absl::Status s = ResolveLength(fields.stopping, static_cast<int>(out.prompt_tokens.size()),
                                     options, out.stopping);
      !s.ok()) {
    return s;
  }
  out.principal = context.principal;
  out.arrival_time = context.arrival_time;
  out.deadline = context.deadline;
  return out;
}

absl::StatusOr<ValidatedRequest> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                         const model::Tokenizer& tokenizer,
                                                         const ValidationOptions& options,
                                                         const RequestContext& context) {
  const RequestFields fields{request.request_id(), request.session_id(), request.sampling(),
                             request.stopping(),   request.output(),     request.constraint()};
  return ValidateRequest(fields, tokenizer, options, context, [&](ValidatedRequest& out) {
    return ValidatePrompt(request, tokenizer, options.add_bos, options.max_prompt_bytes, out);
  });
}

}  // namespace textgen::server
