#include "server/http/openai/openai_response.h"

#include <optional>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizer/utf8.h"
#include "nlohmann/json.hpp"
#include "server/http/openai/openai_request.h"

namespace textgen::server::http {
namespace {

using Json = nlohmann::ordered_json;

// Never throws: text the engine produced is whole UTF-8 characters, and anything else
// (a token's raw bytes) is replaced rather than failing the response.
std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string Sse(const Json& data) { return absl::StrCat("data: ", Dump(data), "\n\n"); }

// A token's text where it stands (after `previous`); control tokens show their name.
std::string TokenString(const model::Tokenizer& tokenizer, int id, int previous) {
  return tokenizer.IsControl(id) ? tokenizer.TokenText(id) : tokenizer.TokenBytes(id, previous);
}

Json Bytes(const std::string& raw) {
  Json bytes = Json::array();
  for (const char c : raw) bytes.push_back(static_cast<uint8_t>(c));
  return bytes;
}

// Chat: {"content": TokenLogprobs(...), "refusal": null}.
Json ChatLogprobs(const std::vector<model::SampleResult>& samples,
                  const model::Tokenizer& tokenizer, int& previous) {
  return {{"content", TokenLogprobs(samples, tokenizer, previous)}, {"refusal", nullptr}};
}

// Completions (legacy): parallel arrays; text_offset counts bytes of the completion text.
Json CompletionLogprobs(const std::vector<model::SampleResult>& samples,
                        const model::Tokenizer& tokenizer, size_t& text_offset, int& previous) {
  Json tokens = Json::array();
  Json token_logprobs = Json::array();
  Json top_logprobs = Json::array();
  Json offsets = Json::array();
  for (const model::SampleResult& sample : samples) {
    const std::string raw = TokenString(tokenizer, sample.token, previous);
    tokens.push_back(model::SanitizeUtf8(raw));
    token_logprobs.push_back(sample.logprob);
    Json top = Json::object();
    for (const model::TokenLogprob& alt : sample.top) {
      top[model::SanitizeUtf8(TokenString(tokenizer, alt.token, previous))] = alt.logprob;
    }
    top_logprobs.push_back(std::move(top));
    offsets.push_back(text_offset);
    if (!tokenizer.IsControl(sample.token)) text_offset += raw.size();
    previous = sample.token;
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(offsets)}};
}

Json UsageJson(const FinishedEvent& event) {
  const Usage& usage = event.usage;
  Json json = {{"prompt_tokens", usage.prompt_tokens},
               {"completion_tokens", usage.completion_tokens},
               {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
               {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
  // textgen's extra: what the request's output constraint cost (structured output).
  const Timings& t = event.timings;
  if (t.constraint_compile_seconds > 0 || t.constraint_cache_hit) {
    json["constraint"] = {{"compile_ms", t.constraint_compile_seconds * 1e3},
                          {"cache_hit", t.constraint_cache_hit}};
  }
  return json;
}

}  // namespace

nlohmann::ordered_json TokenLogprobs(const std::vector<model::SampleResult>& samples,
                                     const model::Tokenizer& tokenizer, int& previous) {
  Json content = Json::array();
  for (const model::SampleResult& sample : samples) {
    const std::string raw = TokenString(tokenizer, sample.token, previous);
    Json top = Json::array();
    for (const model::TokenLogprob& alt : sample.top) {
      const std::string alt_raw = TokenString(tokenizer, alt.token, previous);
      top.push_back({{"token", model::SanitizeUtf8(alt_raw)},
                     {"logprob", alt.logprob},
                     {"bytes", Bytes(alt_raw)}});
    }
    content.push_back({{"token", model::SanitizeUtf8(raw)},
                       {"logprob", sample.logprob},
                       {"bytes", Bytes(raw)},
                       {"top_logprobs", std::move(top)}});
    previous = sample.token;
  }
  return content;
}

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kEos:
    case FinishReason::kStopSequence:
    case FinishReason::kStopToken:
      return "stop";
    case FinishReason::kToolCalls:
      return "tool_calls";
  }
  return "stop";
}

namespace {

// OpenAI's tool_calls entries: the first for a call has id, type and name.
Json ToolCallDeltasJson(const std::vector<model::ToolCallDelta>& calls) {
  Json out = Json::array();
  for (const model::ToolCallDelta& call : calls) {
    Json entry = {{"index", call.index}};
    Json function = {{"arguments", call.arguments}};
    if (!call.id.empty()) {
      entry["id"] = call.id;
      entry["type"] = "function";
      function["name"] = call.name;
    }
    entry["function"] = std::move(function);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

OpenAiResponseWriter::OpenAiResponseWriter(const Options& options,
                                           const model::Tokenizer* tokenizer)
    : options_(options), tokenizer_(tokenizer), previous_token_(options.last_prompt_token) {
  if (options_.kind == Kind::kChat && options_.reply.has_value()) parser_.emplace(*options_.reply);
}

model::ChatOutputDelta OpenAiResponseWriter::Read(const std::string& text, bool generated) {
  if (!parser_ || !generated) return {text, "", {}};
  return parser_->Feed(text);
}

const char* OpenAiResponseWriter::FinishReasonOf(FinishReason reason) const {
  return FinishReasonName(ReplyFinishReason(reason, parser_ && !parser_->tool_calls().empty()));
}

std::string OpenAiResponseWriter::Chunk(const model::ChatOutputDelta& delta,
                                        const std::vector<model::SampleResult>& logprobs,
                                        const char* finish_reason) {
  const bool chat = options_.kind == Kind::kChat;
  Json choice = {{"index", options_.index}};
  if (chat) {
    Json d = Json::object();
    if (!delta.content.empty()) d["content"] = delta.content;
    if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
    if (!delta.tool_calls.empty()) d["tool_calls"] = ToolCallDeltasJson(delta.tool_calls);
    choice["delta"] = std::move(d);
  } else {
    choice["text"] = delta.content;
  }
  if (options_.logprobs && !logprobs.empty()) {
    choice["logprobs"] =
        chat ? ChatLogprobs(logprobs, *tokenizer_, previous_token_)
             : CompletionLogprobs(logprobs, *tokenizer_, text_offset_, previous_token_);
  } else {
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] = finish_reason == nullptr ? Json(nullptr) : Json(finish_reason);
  Json chunk = {{"id", options_.id},
                {"object", chat ? "chat.completion.chunk" : "text_completion"},
                {"created", options_.created},
                {"model", options_.model},
                {"choices", Json::array({std::move(choice)})}};
  if (options_.include_usage) chunk["usage"] = nullptr;
  return Sse(chunk);
}

std::string OpenAiResponseWriter::StreamStart() {
  if (options_.kind != Kind::kChat) return "";
  Json chunk = {{"id", options_.id},
                {"object", "chat.completion.chunk"},
                {"created", options_.created},
                {"model", options_.model},
                {"choices", Json::array({{{"index", options_.index},
                                          {"delta", {{"role", "assistant"}, {"content", ""}}},
                                          {"logprobs", nullptr},
                                          {"finish_reason", nullptr}}})}};
  if (options_.include_usage) chunk["usage"] = nullptr;
  return Sse(chunk);
}

std::string OpenAiResponseWriter::StreamDelta(const TokenEvent& event) {
  const bool echo = event.token_ids.empty();
  if (echo) text_offset_ += event.text.size();  // the echoed prompt
  const model::ChatOutputDelta delta = Read(event.text, !echo);
  if (delta.empty() && event.logprobs.empty()) return "";
  return Chunk(delta, event.logprobs, nullptr);
}

std::string OpenAiResponseWriter::StreamEnd(const FinishedEvent& event) {
  model::ChatOutputDelta delta = Read(event.text, /*generated=*/true);
  if (parser_) delta.Append(parser_->Finish());
  return Chunk(delta, event.logprobs, FinishReasonOf(event.reason));
}

std::string OpenAiResponseWriter::StreamTail(const FinishedEvent& total) {
  std::string out;
  if (options_.include_usage) {
    const Json usage_chunk = {
        {"id", options_.id},
        {"object", options_.kind == Kind::kChat ? "chat.completion.chunk" : "text_completion"},
        {"created", options_.created},
        {"model", options_.model},
        {"choices", Json::array()},
        {"usage", UsageJson(total)}};
    absl::StrAppend(&out, Sse(usage_chunk));
  }
  absl::StrAppend(&out, "data: [DONE]\n\n");
  return out;
}

std::string OpenAiResponseWriter::StreamError(const ApiError& error) {
  return absl::StrCat("data: ", ApiErrorJson(error), "\n\n");
}

void OpenAiResponseWriter::Collect(const TokenEvent& event) {
  const bool echo = event.token_ids.empty();
  if (echo) text_offset_ += event.text.size();  // the echoed prompt
  if (parser_) {
    if (echo) {
      echo_ += event.text;
    } else {
      parser_->Feed(event.text);  // the parser keeps the reply's parts
    }
  }
  text_ += event.text;
  logprobs_.insert(logprobs_.end(), event.logprobs.begin(), event.logprobs.end());
}

void OpenAiResponseWriter::Collect(const FinishedEvent& event) {
  text_ += event.text;
  logprobs_.insert(logprobs_.end(), event.logprobs.begin(), event.logprobs.end());
  const bool chat = options_.kind == Kind::kChat;
  Json choice = {{"index", options_.index}};
  if (chat && parser_) {
    parser_->Feed(event.text);
    parser_->Finish();
    const std::string content = echo_ + parser_->content();
    Json message = {{"role", "assistant"}};
    const bool calls = !parser_->tool_calls().empty();
    message["content"] = content.empty() && calls ? Json(nullptr) : Json(content);
    if (!parser_->reasoning().empty()) message["reasoning_content"] = parser_->reasoning();
    if (calls) {
      Json tool_calls = Json::array();
      for (const model::ParsedToolCall& call : parser_->tool_calls()) {
        tool_calls.push_back({{"id", call.id},
                              {"type", "function"},
                              {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      }
      message["tool_calls"] = std::move(tool_calls);
    }
    choice["message"] = std::move(message);
  } else if (chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text_}};
  } else {
    choice["text"] = text_;
  }
  if (options_.logprobs) {
    choice["logprobs"] =
        chat ? ChatLogprobs(logprobs_, *tokenizer_, previous_token_)
             : CompletionLogprobs(logprobs_, *tokenizer_, text_offset_, previous_token_);
  } else {
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] = FinishReasonOf(event.reason);
  choice_ = std::move(choice);
}

OpenAiResponseWriter::Choice OpenAiResponseWriter::TakeChoice() { return std::move(choice_); }

std::optional<double> OpenAiResponseWriter::MeanLogprob() const {
  if (logprobs_.empty()) return std::nullopt;
  double sum = 0;
  for (const model::SampleResult& sample : logprobs_) sum += sample.logprob;
  return sum / static_cast<double>(logprobs_.size());
}

std::string OpenAiResponseWriter::Body(std::vector<Choice> choices, const FinishedEvent& total) {
  const bool chat = options_.kind == Kind::kChat;
  Json list = Json::array();
  for (Choice& choice : choices) list.push_back(std::move(choice));
  const Json body = {
      {"id", options_.id},           {"object", chat ? "chat.completion" : "text_completion"},
      {"created", options_.created}, {"model", options_.model},
      {"choices", std::move(list)},  {"usage", UsageJson(total)}};
  return Dump(body);
}

}  // namespace textgen::server::http
