#include "server/http/openai/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "model/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/http/json_fields.h"

namespace textgen::server::http {

namespace {

// model, n, stream and stream_options.
absl::Status ParseResponseShape(const Fields& f, OpenAiRequest& out) {
  std::optional<std::string> model;
  TEXTGEN_RETURN_IF_ERROR(f.String("model", model));
  out.model = model.value_or("");

  std::optional<int64_t> n;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("n", n));
  if (n && (*n < 1 || *n > kMaxChoices)) {
    return FieldError("n", absl::StrCat("n must be in [1, ", kMaxChoices, "], got ", *n));
  }
  out.choices = static_cast<int>(n.value_or(1));
  std::optional<bool> stream;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("stream", stream));
  out.stream = stream.value_or(false);
  if (const Json* options = f.Find("stream_options")) {
    if (!options->is_object()) return WrongType("stream_options", "an object", *options);
    std::optional<bool> include_usage;
    TEXTGEN_RETURN_IF_ERROR(Fields(*options).Bool("include_usage", include_usage));
    out.include_usage = include_usage.value_or(false);
  }

  return absl::OkStatus();
}

// temperature, top_p, top_k, penalties, seed and logit_bias.
absl::Status ParseSampling(const Fields& f, v1::SamplingParameters& sampling) {
  // Numbers copied as they are; their ranges are the shared validation's business.
  using FloatSetter = void (v1::SamplingParameters::*)(float);
  for (const auto& [name, setter] :
       {std::pair<const char*, FloatSetter>{"temperature",
                                            &v1::SamplingParameters::set_temperature},
        {"top_p", &v1::SamplingParameters::set_top_p},
        {"presence_penalty", &v1::SamplingParameters::set_presence_penalty},
        {"frequency_penalty", &v1::SamplingParameters::set_frequency_penalty},
        {"min_p", &v1::SamplingParameters::set_min_p},
        {"repetition_penalty", &v1::SamplingParameters::set_repetition_penalty}}) {
    std::optional<double> number;
    TEXTGEN_RETURN_IF_ERROR(f.Number(name, number));
    if (number) (sampling.*setter)(static_cast<float>(*number));
  }

  std::optional<int64_t> integer;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("top_k", integer));
  if (integer) {
    if (*integer < 0 || *integer > std::numeric_limits<int32_t>::max()) {
      return FieldError("top_k", absl::StrCat("top_k must be >= 0 (0 = disabled), got ", *integer));
    }
    sampling.set_top_k(static_cast<int32_t>(*integer));
  }
  if (const Json* seed = f.Find("seed")) {
    // Any 64-bit integer: negative seeds are taken as their two's complement.
    if (seed->is_number_unsigned()) {
      sampling.set_seed(seed->get<uint64_t>());
    } else if (seed->is_number_integer()) {
      sampling.set_seed(static_cast<uint64_t>(seed->get<int64_t>()));
    } else {
      return WrongType("seed", "an integer", *seed);
    }
  }
  if (const Json* bias = f.Find("logit_bias")) {
    if (!bias->is_object()) return WrongType("logit_bias", "an object", *bias);
    for (const auto& [key, value] : bias->items()) {
      int id = 0;
      if (!absl::SimpleAtoi(key, &id)) {
        return FieldError("logit_bias",
                          absl::StrCat("logit_bias key '", key.substr(0, 64),
                                       "' is not a token id (keys are token ids as strings)"));
      }
      if (!value.is_number()) {
        return WrongType(absl::StrCat("logit_bias[\"", key, "\"]"), "a number", value);
      }
      (*sampling.mutable_logit_bias())[id] = value.get<float>();
    }
  }

  return absl::OkStatus();
}

// max_tokens (or max_completion_tokens), min_tokens, stop, stop_token_ids and ignore_eos.
absl::Status ParseStopping(const Fields& f, OpenAiRequest& out, v1::StoppingCriteria& stopping) {
  // max_completion_tokens is the newer name of max_tokens; it wins when both are sent.
  std::optional<int64_t> max_tokens;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    std::optional<int64_t> value;
    TEXTGEN_RETURN_IF_ERROR(f.Integer(name, value));
    if (!value) continue;
    out.max_tokens_field = name;
    max_tokens = value;
  }
  if (max_tokens) {
    if (*max_tokens < 1 || *max_tokens > std::numeric_limits<uint32_t>::max()) {
      return FieldError(out.max_tokens_field,
                        absl::StrCat(out.max_tokens_field, " must be >= 1, got ", *max_tokens));
    }
    stopping.set_max_new_tokens(static_cast<uint32_t>(*max_tokens));
  }
  std::optional<int64_t> integer;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("min_tokens", integer));
  if (integer) {
    if (*integer < 0 || *integer > std::numeric_limits<uint32_t>::max()) {
      return FieldError("min_tokens", absl::StrCat("min_tokens must be >= 0, got ", *integer));
    }
    stopping.set_min_new_tokens(static_cast<uint32_t>(*integer));
  }
  if (const Json* stop = f.Find("stop")) {
    if (stop->is_string()) {
      stopping.add_stop(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (size_t i = 0; i < stop->size(); ++i) {
        if (!(*stop)[i].is_string()) {
          return WrongType(absl::StrCat("stop[", i, "]"), "a string", (*stop)[i]);
        }
        stopping.add_stop((*stop)[i].get<std::string>());
      }
    } else {
      return WrongType("stop", "a string or an array of strings", *stop);
    }
  }
  if (const Json* ids = f.Find("stop_token_ids")) {
    if (!ids->is_array()) return WrongType("stop_token_ids", "an array of integers", *ids);
    for (size_t i = 0; i < ids->size(); ++i) {
      const Json& id = (*ids)[i];
      if (!id.is_number_integer() || id.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
          id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return WrongType(absl::StrCat("stop_token_ids[", i, "]"), "a token id", id);
      }
      stopping.add_stop_token_ids(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  std::optional<bool> ignore_eos;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("ignore_eos", ignore_eos));
  stopping.set_ignore_eos(ignore_eos.value_or(false));
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseCommonFields(const Fields& f, OpenAiRequest& out,
                               v1::SamplingParameters& sampling, v1::StoppingCriteria& stopping,
                               std::string& session_id) {
  TEXTGEN_RETURN_IF_ERROR(ParseResponseShape(f, out));
  TEXTGEN_RETURN_IF_ERROR(ParseSampling(f, sampling));
  TEXTGEN_RETURN_IF_ERROR(ParseStopping(f, out, stopping));
  std::optional<bool> speculative;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("speculative", speculative));
  sampling.set_no_speculation(!speculative.value_or(true));

  std::optional<std::string> text;
  TEXTGEN_RETURN_IF_ERROR(f.String("session_id", text));
  session_id = text.value_or("");
  if (!session_id.empty() && out.choices > 1) {
    return FieldError("n", absl::StrCat("n must be 1 with session_id, got ", out.choices,
                                        ": a session keeps one continuation"));
  }
  text.reset();
  // Accepted and type-checked, not needed: every prefix is cached within the principal's
  // scope whatever key a request names (docs/prefix-cache.md), and `user` is OpenAI's
  // end-user id for abuse reports.
  TEXTGEN_RETURN_IF_ERROR(f.String("user", text));
  text.reset();
  TEXTGEN_RETURN_IF_ERROR(f.String("prompt_cache_key", text));
  return absl::OkStatus();
}

namespace {

absl::Status ParseMessages(const Json& messages, v1::ChatRequest& chat) {
  if (!messages.is_array()) return WrongType("messages", "an array of messages", messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string field = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return WrongType(field, "an object", m);
    const Fields f(m);
    v1::ChatMessage* out = chat.add_messages();
    std::optional<std::string> text;
    TEXTGEN_RETURN_IF_ERROR(f.String("role", text));
    if (!text) return FieldError(field, absl::StrCat(field, ".role is missing"));
    // OpenAI's "developer" role is the system role of reasoning models; templates know "system".
    out->set_role(*text == "developer" ? "system" : *text);
    if (const Json* content = f.Find("content")) {
      absl::StatusOr<std::string> joined = TextParts(*content, field + ".content", {"text"});
      if (!joined.ok()) return joined.status();
      out->set_content(*std::move(joined));
    }
    const auto optional_string = [&](const char* name, std::string* target) -> absl::Status {
      const Json* value = f.Find(name);
      if (value == nullptr) return absl::OkStatus();
      if (!value->is_string()) return WrongType(absl::StrCat(field, ".", name), "a string", *value);
      *target = value->get<std::string>();
      return absl::OkStatus();
    };
    TEXTGEN_RETURN_IF_ERROR(optional_string("name", out->mutable_name()));
    TEXTGEN_RETURN_IF_ERROR(optional_string("tool_call_id", out->mutable_tool_call_id()));
    TEXTGEN_RETURN_IF_ERROR(optional_string("reasoning_content", out->mutable_reasoning_content()));
    if (const Json* calls = f.Find("tool_calls")) {
      if (!calls->is_array()) return WrongType(field + ".tool_calls", "an array", *calls);
      out->set_tool_calls_json(calls->dump());
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> TextParts(const Json& content, const std::string& field,
                                      std::initializer_list<absl::string_view> text_types,
                                      bool refusals) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    return WrongType(field, "a string or an array of content parts", content);
  }
  std::vector<std::string> texts;
  for (size_t j = 0; j < content.size(); ++j) {
    const Json& part = content[j];
    const std::string part_field = absl::StrCat(field, "[", j, "]");
    if (!part.is_object()) return WrongType(part_field, "an object", part);
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return FieldError(part_field, absl::StrCat(part_field, ".type must be a string"));
    }
    const std::string& name = type->get_ref<const std::string&>();
    const bool refusal = refusals && name == "refusal";
    if (!refusal && std::find(text_types.begin(), text_types.end(), name) == text_types.end()) {
      return FieldError(part_field,
                        absl::StrCat(part_field, ".type '", name.substr(0, 64),
                                     "' is not supported: textgen serves text-only models"));
    }
    const char* key = refusal ? "refusal" : "text";
    const auto text = part.find(key);
    if (text == part.end() || !text->is_string()) {
      return FieldError(part_field, absl::StrCat(part_field, ".", key, " must be a string"));
    }
    texts.push_back(text->get<std::string>());
  }
  return absl::StrJoin(texts, "\n");
}

absl::Status ParseTopLogprobs(const Fields& f, v1::OutputOptions& output) {
  std::optional<int64_t> top_logprobs;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("top_logprobs", top_logprobs));
  if (!top_logprobs) return absl::OkStatus();
  // The range is the shared validation's; here only what fits the field.
  if (*top_logprobs < 0 || *top_logprobs > std::numeric_limits<uint16_t>::max()) {
    return FieldError("top_logprobs",
                      absl::StrCat("top_logprobs must be in [0, 20], got ", *top_logprobs));
  }
  output.set_top_logprobs(static_cast<uint32_t>(*top_logprobs));
  return absl::OkStatus();
}

absl::Status SetTemplateVariables(const Fields& f, const std::optional<std::string>& effort,
                                  absl::string_view effort_param, v1::ChatRequest& chat) {
  Json variables = Json::object();
  const Json* kwargs = f.Find("chat_template_kwargs");
  if (kwargs != nullptr) {
    if (!kwargs->is_object()) return WrongType("chat_template_kwargs", "an object", *kwargs);
    variables = *kwargs;
  }
  if (effort) {
    if (*effort != "none" && *effort != "minimal" && *effort != "low" && *effort != "medium" &&
        *effort != "high") {
      return FieldError(effort_param, absl::StrCat(effort_param,
                                                   " must be \"none\", \"minimal\", \"low\", "
                                                   "\"medium\" or \"high\""));
    }
    if (!variables.contains("enable_thinking")) {
      variables["enable_thinking"] = *effort != "none" && *effort != "minimal";
    }
  }
  if (!variables.empty() || kwargs != nullptr) chat.set_template_variables_json(variables.dump());
  return absl::OkStatus();
}

// response_format (OpenAI) and textgen's extras `json_schema` (as llama.cpp's server takes
// it), `regex` and `grammar` (GBNF): at most one constraint per request.
absl::Status ParseConstraint(const Fields& f, v1::OutputConstraint& out) {
  std::vector<std::string> given;
  if (const Json* format = f.Find("response_format")) {
    if (!format->is_object()) return WrongType("response_format", "an object", *format);
    const auto type = format->find("type");
    if (type == format->end() || !type->is_string()) {
      return FieldError("response_format",
                        "response_format.type must be \"text\", \"json_object\" or "
                        "\"json_schema\"");
    }
    if (*type == "json_object") {
      out.set_json_object(true);
      given.push_back("response_format");
    } else if (*type == "json_schema") {
      const auto spec = format->find("json_schema");
      if (spec == format->end() || !spec->is_object()) {
        return FieldError("response_format",
                          "response_format.json_schema must be an object with a \"schema\"");
      }
      const auto schema = spec->find("schema");
      if (schema == spec->end() || schema->is_null()) {
        out.set_json_object(true);  // a schema-less json_schema: any JSON object
      } else if (!schema->is_object() && !schema->is_boolean()) {
        return WrongType("response_format", "an object (response_format.json_schema.schema)",
                         *schema);
      } else {
        out.set_json_schema(schema->dump());
      }
      given.push_back("response_format");
    } else if (*type != "text") {
      return FieldError("response_format", absl::StrCat("response_format.type ", type->dump(),
                                                        " is not one of \"text\", \"json_object\", "
                                                        "\"json_schema\""));
    }
  }
  if (const Json* schema = f.Find("json_schema")) {
    if (!schema->is_object() && !schema->is_boolean()) {
      return WrongType("json_schema", "an object", *schema);
    }
    out.set_json_schema(schema->dump());
    given.push_back("json_schema");
  }
  std::optional<std::string> regex, grammar;
  TEXTGEN_RETURN_IF_ERROR(f.String("regex", regex));
  TEXTGEN_RETURN_IF_ERROR(f.String("grammar", grammar));
  if (regex) {
    out.set_regex(*regex);
    given.push_back("regex");
  }
  if (grammar) {
    out.set_grammar(*grammar);
    given.push_back("grammar");
  }
  if (given.size() > 1) {
    return FieldError(given[1], absl::StrCat("give one output constraint, not both ", given[0],
                                             " and ", given[1]));
  }
  return absl::OkStatus();
}

absl::StatusOr<OpenAiRequest> ParseChatCompletionRequest(absl::string_view body) {
  absl::StatusOr<Json> parsed = ParseBody(body);
  if (!parsed.ok()) return parsed.status();
  const Fields f(*parsed);
  OpenAiRequest out;
  out.kind = OpenAiRequest::Kind::kChat;
  v1::ChatRequest& chat = out.chat;
  TEXTGEN_RETURN_IF_ERROR(ParseConstraint(f, *chat.mutable_constraint()));
  TEXTGEN_RETURN_IF_ERROR(ParseCommonFields(f, out, *chat.mutable_sampling(),
                                            *chat.mutable_stopping(), *chat.mutable_session_id()));
  const Json* messages = f.Find("messages");
  if (messages == nullptr) return FieldError("messages", "messages is missing");
  TEXTGEN_RETURN_IF_ERROR(ParseMessages(*messages, chat));

  std::optional<bool> logprobs;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("logprobs", logprobs));
  chat.mutable_output()->set_logprobs(logprobs.value_or(false));
  TEXTGEN_RETURN_IF_ERROR(ParseTopLogprobs(f, *chat.mutable_output()));

  if (const Json* tools = f.Find("tools")) {
    if (!tools->is_array()) return WrongType("tools", "an array", *tools);
    // Handed to validation as parsed (nothing below reads the body's copy again).
    out.tools = ParsedTools::Of(std::move(parsed->at("tools")));
  }
  if (const Json* choice = f.Find("tool_choice")) {
    v1::ToolChoice& out_choice = *chat.mutable_tool_choice();
    if (choice->is_string() && *choice == "auto") {
      out_choice.set_mode(v1::ToolChoice::TOOL_CHOICE_AUTO);
    } else if (choice->is_string() && *choice == "none") {
      out_choice.set_mode(v1::ToolChoice::TOOL_CHOICE_NONE);
    } else if (choice->is_string() && *choice == "required") {
      out_choice.set_mode(v1::ToolChoice::TOOL_CHOICE_REQUIRED);
    } else if (choice->is_object()) {
      const Json* type = choice->contains("type") ? &(*choice)["type"] : nullptr;
      const Json* function = choice->contains("function") ? &(*choice)["function"] : nullptr;
      if (type == nullptr || *type != "function" || function == nullptr || !function->is_object() ||
          !function->contains("name") || !(*function)["name"].is_string()) {
        return FieldError("tool_choice",
                          "tool_choice as an object must be {\"type\": \"function\", "
                          "\"function\": {\"name\": \"...\"}}");
      }
      out_choice.set_mode(v1::ToolChoice::TOOL_CHOICE_FUNCTION);
      out_choice.set_function_name((*function)["name"].get<std::string>());
    } else {
      return FieldError("tool_choice",
                        "tool_choice must be \"auto\", \"none\", \"required\" or "
                        "{\"type\": \"function\", \"function\": {\"name\": \"...\"}}");
    }
  }
  std::optional<bool> parallel_tool_calls;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("parallel_tool_calls", parallel_tool_calls));
  if (parallel_tool_calls) chat.set_parallel_tool_calls(*parallel_tool_calls);
  // textgen's extras.
  std::optional<std::string> template_name;
  TEXTGEN_RETURN_IF_ERROR(f.String("template_name", template_name));
  if (template_name) chat.set_template_name(*template_name);
  std::optional<bool> add_generation_prompt;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("add_generation_prompt", add_generation_prompt));
  if (add_generation_prompt) chat.set_add_generation_prompt(*add_generation_prompt);
  std::optional<std::string> effort;
  TEXTGEN_RETURN_IF_ERROR(f.String("reasoning_effort", effort));
  TEXTGEN_RETURN_IF_ERROR(SetTemplateVariables(f, effort, "reasoning_effort", chat));
  return out;
}

absl::StatusOr<OpenAiRequest> ParseCompletionRequest(absl::string_view body) {
  absl::StatusOr<Json> parsed = ParseBody(body);
  if (!parsed.ok()) return parsed.status();
  const Fields f(*parsed);
  OpenAiRequest out;
  out.kind = OpenAiRequest::Kind::kCompletion;
  v1::GenerateRequest& request = out.completion;
  TEXTGEN_RETURN_IF_ERROR(ParseConstraint(f, *request.mutable_constraint()));
  TEXTGEN_RETURN_IF_ERROR(ParseCommonFields(f, out, *request.mutable_sampling(),
                                            *request.mutable_stopping(),
                                            *request.mutable_session_id()));
  const Json* prompt = f.Find("prompt");
  if (prompt == nullptr) return FieldError("prompt", "prompt is missing");
  // One prompt: "text", ["text"], [ids...] or [[ids...]].
  const Json* single = prompt;
  if (prompt->is_array() && prompt->size() == 1 &&
      ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    single = &(*prompt)[0];
  } else if (prompt->is_array() && !prompt->empty() &&
             ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    return FieldError("prompt", absl::StrCat("prompt holds ", prompt->size(),
                                             " prompts; textgen takes one per request"));
  }
  if (single->is_string()) {
    request.set_text(single->get<std::string>());
  } else if (single->is_array()) {
    if (single->empty()) return FieldError("prompt", "prompt is an empty array");
    auto* ids = request.mutable_tokens()->mutable_ids();
    for (size_t i = 0; i < single->size(); ++i) {
      const Json& id = (*single)[i];
      if (!id.is_number_integer() || id.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
          id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return WrongType(absl::StrCat("prompt[", i, "]"), "a token id", id);
      }
      ids->Add(static_cast<int32_t>(id.get<int64_t>()));
    }
  } else {
    return WrongType("prompt", "a string or an array of token ids", *prompt);
  }

  std::optional<int64_t> logprobs;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("logprobs", logprobs));
  if (logprobs) {
    if (*logprobs < 0 || *logprobs > std::numeric_limits<uint16_t>::max()) {
      return FieldError("logprobs", absl::StrCat("logprobs must be in [0, 20], got ", *logprobs));
    }
    request.mutable_output()->set_logprobs(true);
    request.mutable_output()->set_top_logprobs(static_cast<uint32_t>(*logprobs));
  }
  std::optional<bool> echo;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("echo", echo));
  request.mutable_output()->set_echo(echo.value_or(false));
  std::optional<int64_t> best_of;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("best_of", best_of));
  if (best_of) {
    // best_of candidates are generated and the n with the highest mean token log-probability
    // returned, as OpenAI does; they cannot be streamed (which would be the best is known at
    // the end).
    if (*best_of < out.choices || *best_of > kMaxChoices) {
      return FieldError("best_of", absl::StrCat("best_of must be in [n, ", kMaxChoices,
                                                "] (n = ", out.choices, "), got ", *best_of));
    }
    if (*best_of > out.choices && out.stream) {
      return FieldError("best_of",
                        "best_of greater than n cannot be streamed: the best candidates are "
                        "known only when all have finished");
    }
    out.returned_choices = out.choices;
    out.choices = static_cast<int>(*best_of);
  }
  std::optional<std::string> suffix;
  TEXTGEN_RETURN_IF_ERROR(f.String("suffix", suffix));
  if (suffix && !suffix->empty()) {
    return FieldError("suffix", "suffix is not supported (no fill-in-the-middle)");
  }
  return out;
}

}  // namespace textgen::server::http
