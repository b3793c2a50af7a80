#include "client/generation_flags.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace textgen::client {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxUint32 = std::numeric_limits<uint32_t>::max();

// --logit-bias ID=BIAS, e.g. 13=-100.
FlagSpec LogitBiasFlag(std::vector<std::pair<int32_t, float>>* out) {
  return {"logit-bias", "ID=BIAS", "add BIAS to token ID's logit (repeatable)",
          [out](absl::string_view v) -> absl::Status {
            size_t eq = v.find('=');
            int32_t id;
            double bias;
            if (eq == absl::string_view::npos || !absl::SimpleAtoi(v.substr(0, eq), &id) ||
                !absl::SimpleAtod(v.substr(eq + 1), &bias) || !std::isfinite(bias)) {
              return absl::InvalidArgumentError(
                  absl::StrCat("--logit-bias: expected ID=BIAS like 13=-100, got '", v, "'"));
            }
            out->emplace_back(id, static_cast<float>(bias));
            return absl::OkStatus();
          }};
}

}  // namespace

void AddGenerationFlags(GenerationFlags* f, std::vector<FlagSpec>* specs) {
  specs->push_back(OptionalDoubleFlag("temperature", &f->temperature, "0 = greedy (default 1)"));
  specs->push_back(IntFlag("top-k", &f->top_k, 0, kMaxInt32, "keep the K most likely (0 = off)"));
  specs->push_back(OptionalDoubleFlag("top-p", &f->top_p, "nucleus sampling, in (0, 1]"));
  specs->push_back(OptionalDoubleFlag("min-p", &f->min_p, "min probability relative to the top"));
  specs->push_back(OptionalDoubleFlag("repetition-penalty", &f->repetition_penalty, "1 = off"));
  specs->push_back(OptionalDoubleFlag("presence-penalty", &f->presence_penalty, "in [-2, 2]"));
  specs->push_back(OptionalDoubleFlag("frequency-penalty", &f->frequency_penalty, "in [-2, 2]"));
  specs->push_back(OptionalUintFlag("seed", &f->seed, "sampling seed (default: server picks)"));
  specs->push_back(LogitBiasFlag(&f->logit_bias));
  specs->push_back(
      IntFlag("max-tokens", &f->max_tokens, 0, kMaxUint32, "tokens to generate at most"));
  specs->push_back(IntFlag("min-tokens", &f->min_tokens, 0, kMaxUint32,
                           "ignore EOS and stops until this many tokens"));
  specs->push_back(RepeatedStringFlag("stop", &f->stop, "STR", "stop string (repeatable)"));
  specs->push_back(
      RepeatedIntFlag("stop-token", &f->stop_token_ids, "stop after token ID (repeatable)"));
  specs->push_back(BoolFlag("ignore-eos", &f->ignore_eos,
                            "keep generating past end-of-generation tokens (EOS, end of turn)"));
  specs->push_back(BoolFlag("parse-special", &f->parse_special,
                            "control tokens written in the prompt (<|im_start|>) become tokens"));
  specs->push_back(IntFlag("logprobs", &f->logprobs, 0, 20,
                           "return logprobs and the N most likely alternatives"));
  specs->push_back(BoolFlag("echo", &f->echo, "send the prompt back first"));
  specs->push_back(StringFlag("session", &f->session_id, "ID", "reuse the KV cache of session ID"));
  specs->push_back(StringFlag("request-id", &f->request_id, "ID", "request id for server logs"));
  specs->push_back(FileFlag("json-schema", &f->json_schema, /*trim=*/false,
                            "constrain the output to JSON matching the schema in FILE"));
  specs->push_back(
      BoolFlag("json-object", &f->json_object, "constrain the output to a JSON object"));
  specs->push_back(FileFlag("grammar", &f->grammar, /*trim=*/false,
                            "constrain the output to the GBNF grammar in FILE (root rule)"));
  specs->push_back({"regex", "RE", "constrain the whole output to match the regular expression",
                    [f](absl::string_view v) -> absl::Status {
                      f->regex = std::string(v);
                      return absl::OkStatus();
                    }});
}

namespace {

// The fields Generate and Chat share.
template <typename Request>
void FillCommonFields(const GenerationFlags& f, Request* request) {
  textgen::v1::SamplingParameters* sampling = request->mutable_sampling();
  if (f.temperature) sampling->set_temperature(static_cast<float>(*f.temperature));
  sampling->set_top_k(static_cast<int32_t>(f.top_k));
  if (f.top_p) sampling->set_top_p(static_cast<float>(*f.top_p));
  if (f.min_p) sampling->set_min_p(static_cast<float>(*f.min_p));
  if (f.repetition_penalty) {
    sampling->set_repetition_penalty(static_cast<float>(*f.repetition_penalty));
  }
  if (f.presence_penalty) sampling->set_presence_penalty(static_cast<float>(*f.presence_penalty));
  if (f.frequency_penalty) {
    sampling->set_frequency_penalty(static_cast<float>(*f.frequency_penalty));
  }
  if (f.seed) sampling->set_seed(*f.seed);
  for (const auto& [id, bias] : f.logit_bias) (*sampling->mutable_logit_bias())[id] = bias;

  textgen::v1::StoppingCriteria* stopping = request->mutable_stopping();
  stopping->set_max_new_tokens(static_cast<uint32_t>(f.max_tokens));
  stopping->set_min_new_tokens(static_cast<uint32_t>(f.min_tokens));
  for (const std::string& s : f.stop) stopping->add_stop(s);
  for (int32_t id : f.stop_token_ids) stopping->add_stop_token_ids(id);
  stopping->set_ignore_eos(f.ignore_eos);

  textgen::v1::OutputOptions* output = request->mutable_output();
  if (f.logprobs >= 0) {
    output->set_logprobs(true);
    output->set_top_logprobs(static_cast<uint32_t>(f.logprobs));
  }
  output->set_echo(f.echo);
  request->set_session_id(f.session_id);
  request->set_request_id(f.request_id);

  textgen::v1::OutputConstraint* constraint = request->mutable_constraint();
  if (!f.json_schema.empty()) constraint->set_json_schema(f.json_schema);
  if (f.json_object) constraint->set_json_object(true);
  if (!f.grammar.empty()) constraint->set_grammar(f.grammar);
  if (f.regex) constraint->set_regex(*f.regex);
}

}  // namespace

void FillGenerateRequest(const GenerationFlags& f, textgen::v1::GenerateRequest* request) {
  FillCommonFields(f, request);
  request->set_parse_special(f.parse_special);
}

void FillChatRequest(const GenerationFlags& f, textgen::v1::ChatRequest* request) {
  FillCommonFields(f, request);
}

}  // namespace textgen::client
