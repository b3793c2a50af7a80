#include "server/http/openai/responses_writer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/http/openai/openai_response.h"

namespace textgen::server::http {
namespace {

// Never throws: text the engine produced is whole UTF-8 characters, and anything else
// (a token's raw bytes) is replaced rather than failing the response.
std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

ResponsesWriter::ResponsesWriter(ResponsesWriterOptions options, const model::Tokenizer* tokenizer)
    : options_(std::move(options)),
      tokenizer_(tokenizer),
      parser_(options_.reply.value_or(model::ChatOutputOptions{})),
      previous_token_(options_.last_prompt_token),
      in_reasoning_(options_.reply.has_value() && options_.reply->starts_in_reasoning) {}

std::string ResponsesWriter::StreamStart() {
  streaming_ = true;
  const Json response = Response("in_progress", nullptr);
  Event("response.created", {{"response", response}});
  Event("response.in_progress", {{"response", response}});
  return TakeEvents();
}

std::string ResponsesWriter::StreamDelta(const TokenEvent& event) {
  Collect(event);
  return TakeEvents();
}

std::string ResponsesWriter::StreamEnd(const FinishedEvent& event) {
  Collect(event);
  return TakeEvents();
}

std::string ResponsesWriter::StreamTail(const FinishedEvent& total) {
  const Json response = Completed(total);
  Event(response["status"] == "incomplete" ? "response.incomplete" : "response.completed",
        {{"response", response}});
  return TakeEvents();
}

std::string ResponsesWriter::StreamError(const ApiError& error) {
  // OpenAI's error event; its `error` object makes the SDKs raise an APIError.
  const Json code = error.code.empty() ? Json(nullptr) : Json(error.code);
  const Json param = error.param.empty() ? Json(nullptr) : Json(error.param);
  Event("error",
        {{"code", code},
         {"message", error.message},
         {"param", param},
         {"error",
          {{"message", error.message}, {"type", error.type}, {"param", param}, {"code", code}}}});
  return TakeEvents();
}

void ResponsesWriter::Collect(const TokenEvent& event) {
  Read(event.text, event.token_ids, event.logprobs);
}

void ResponsesWriter::Collect(const FinishedEvent& event) {
  Read(event.text, event.token_ids, event.logprobs);
  Finish(event);
}

std::string ResponsesWriter::Body(std::vector<Choice> /*choices*/, const FinishedEvent& total) {
  return Dump(Completed(total));
}

void ResponsesWriter::Read(const std::string& text, const std::vector<int>& token_ids,
                           const std::vector<model::SampleResult>& logprobs) {
  if (options_.logprobs && !logprobs.empty()) {
    for (Json& entry : TokenLogprobs(logprobs, *tokenizer_, previous_token_)) {
      pending_logprobs_.push_back(std::move(entry));
    }
  }
  const model::ChatOutputDelta delta = parser_.Feed(text);
  // Reasoning tokens: those read while the reply was inside its reasoning (the closing tag's
  // tokens count as reasoning; the parser holds them back as text it has not placed yet).
  if (!delta.reasoning.empty() && delta.content.empty() && delta.tool_calls.empty()) {
    in_reasoning_ = true;
  } else if (!delta.empty()) {
    in_reasoning_ = false;
  }
  if (in_reasoning_) reasoning_tokens_ += static_cast<int>(token_ids.size());
  Apply(delta);
}

void ResponsesWriter::Finish(const FinishedEvent& event) {
  reason_ = event.reason;
  Apply(parser_.Finish());
  // A message keeps its trailing whitespace; a reply of nothing is an empty message.
  if (open_ == ItemKind::kMessage || output_.empty()) AppendText(pending_space_);
  Close();
}

void ResponsesWriter::Apply(const model::ChatOutputDelta& delta) {
  if (!delta.reasoning.empty()) {
    if (open_ != ItemKind::kReasoning) {
      const std::string id = NextItemId("rs_");
      Open(ItemKind::kReasoning, {{"id", id},
                                  {"type", "reasoning"},
                                  {"summary", Json::array()},
                                  {"content", Json::array()},
                                  {"status", "in_progress"}});
      AddPart({{"type", "reasoning_text"}, {"text", ""}});
    }
    Json& item = output_.back();
    // Appended in place: a reply's text grows a token at a time.
    item["content"][0]["text"].get_ref<std::string&>() += delta.reasoning;
    Event("response.reasoning_text.delta", {{"item_id", item["id"]},
                                            {"output_index", output_.size() - 1},
                                            {"content_index", 0},
                                            {"delta", delta.reasoning}});
    if (delta.content.empty()) pending_logprobs_ = Json::array();  // not the message's tokens
  }
  if (!delta.content.empty()) {
    // Trailing whitespace waits for what follows: more text takes it along, a call drops it.
    const size_t body_end = delta.content.find_last_not_of(" \t\r\n") + 1;  // npos + 1 = 0
    if (body_end == 0) {
      pending_space_ += delta.content;
    } else {
      AppendText(std::exchange(pending_space_, std::string()) + delta.content.substr(0, body_end));
      pending_space_ = delta.content.substr(body_end);
    }
  }
  for (const model::ToolCallDelta& call : delta.tool_calls) {
    const size_t index = static_cast<size_t>(call.index);
    if (!call.name.empty() && index >= call_items_.size()) {
      pending_space_.clear();  // whitespace before a call is not a message
      const std::string id = NextItemId("fc_");
      Open(ItemKind::kCall, {{"id", id},
                             {"type", "function_call"},
                             {"status", "in_progress"},
                             {"arguments", ""},
                             {"call_id", call.id},
                             {"name", call.name}});
      call_items_.resize(index + 1, output_.size() - 1);
    }
    if (index >= call_items_.size() || call.arguments.empty()) continue;
    Json& item = output_[call_items_[index]];
    item["arguments"].get_ref<std::string&>() += call.arguments;
    Event(
        "response.function_call_arguments.delta",
        {{"item_id", item["id"]}, {"output_index", call_items_[index]}, {"delta", call.arguments}});
    pending_logprobs_ = Json::array();
  }
}

void ResponsesWriter::AppendText(const std::string& text) {
  if (open_ != ItemKind::kMessage) {
    const std::string id = NextItemId("msg_");
    Open(ItemKind::kMessage, {{"id", id},
                              {"type", "message"},
                              {"status", "in_progress"},
                              {"role", "assistant"},
                              {"content", Json::array()}});
    Json part = {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
    if (options_.logprobs) part["logprobs"] = Json::array();
    AddPart(std::move(part));
  }
  Json& item = output_.back();
  Json& part = item["content"][0];
  part["text"].get_ref<std::string&>() += text;
  Json logprobs = std::exchange(pending_logprobs_, Json::array());
  if (options_.logprobs) {
    for (const Json& entry : logprobs) part["logprobs"].push_back(entry);
  }
  if (text.empty()) return;
  Event("response.output_text.delta", {{"item_id", item["id"]},
                                       {"output_index", output_.size() - 1},
                                       {"content_index", 0},
                                       {"delta", text},
                                       {"logprobs", std::move(logprobs)}});
}

void ResponsesWriter::Open(ItemKind kind, Json item) {
  Close();
  open_ = kind;
  output_.push_back(item);
  Event("response.output_item.added", {{"output_index", output_.size() - 1}, {"item", item}});
}

std::string ResponsesWriter::NextItemId(const char* prefix) const {
  // The response's own hex digits after "resp_", and the item's place in the output.
  return absl::StrCat(prefix, options_.id.substr(5), "_", output_.size());
}

void ResponsesWriter::AddPart(Json part) {
  Json& item = output_.back();
  item["content"].push_back(part);
  Event("response.content_part.added", {{"item_id", item["id"]},
                                        {"output_index", output_.size() - 1},
                                        {"content_index", 0},
                                        {"part", std::move(part)}});
}

void ResponsesWriter::Close() {
  if (open_ == ItemKind::kNone) return;
  const size_t index = output_.size() - 1;
  Json& item = output_[index];
  // An item the length limit cut is incomplete, as OpenAI marks it.
  item["status"] = reason_ == FinishReason::kLength ? "incomplete" : "completed";
  const Json& id = item["id"];
  switch (open_) {
    case ItemKind::kReasoning:
      Event("response.reasoning_text.done", {{"item_id", id},
                                             {"output_index", index},
                                             {"content_index", 0},
                                             {"text", item["content"][0]["text"]}});
      Event("response.content_part.done", {{"item_id", id},
                                           {"output_index", index},
                                           {"content_index", 0},
                                           {"part", item["content"][0]}});
      break;
    case ItemKind::kMessage: {
      Json done = {{"item_id", id},
                   {"output_index", index},
                   {"content_index", 0},
                   {"text", item["content"][0]["text"]}};
      done["logprobs"] = options_.logprobs ? item["content"][0]["logprobs"] : Json::array();
      Event("response.output_text.done", std::move(done));
      Event("response.content_part.done", {{"item_id", id},
                                           {"output_index", index},
                                           {"content_index", 0},
                                           {"part", item["content"][0]}});
      break;
    }
    case ItemKind::kCall:
      Event("response.function_call_arguments.done", {{"item_id", id},
                                                      {"output_index", index},
                                                      {"name", item["name"]},
                                                      {"arguments", item["arguments"]}});
      break;
    case ItemKind::kNone:
      break;
  }
  Event("response.output_item.done", {{"output_index", index}, {"item", item}});
  open_ = ItemKind::kNone;
}

Json ResponsesWriter::Response(const char* status, const FinishedEvent* total) const {
  Json response = {{"id", options_.id},
                   {"object", "response"},
                   {"created_at", options_.created_at},
                   {"status", status},
                   {"background", false},
                   {"error", nullptr},
                   {"incomplete_details", nullptr}};
  if (std::string(status) == "incomplete") {
    response["incomplete_details"] = {{"reason", "max_output_tokens"}};
  }
  response["model"] = options_.model;
  response["output"] = total == nullptr ? Json::array() : output_;
  for (const auto& [key, value] : options_.echo.items()) response[key] = value;
  if (total == nullptr) {
    response["usage"] = nullptr;
    return response;
  }
  const Usage& usage = total->usage;
  Json usage_json = {{"input_tokens", usage.prompt_tokens},
                     {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
                     {"output_tokens", usage.completion_tokens},
                     {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens_}}},
                     {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
  // textgen's extra, as in chat: what the output constraint cost.
  const Timings& t = total->timings;
  if (t.constraint_compile_seconds > 0 || t.constraint_cache_hit) {
    usage_json["constraint"] = {{"compile_ms", t.constraint_compile_seconds * 1e3},
                                {"cache_hit", t.constraint_cache_hit}};
  }
  response["usage"] = std::move(usage_json);
  return response;
}

Json ResponsesWriter::Completed(const FinishedEvent& total) {
  const Json response =
      Response(reason_ == FinishReason::kLength ? "incomplete" : "completed", &total);
  if (!done_reported_ && options_.on_done) {
    done_reported_ = true;
    v1::ChatMessage reply;
    reply.set_role("assistant");
    Json calls = Json::array();
    for (const Json& item : output_) {
      if (item["type"] == "message") {
        reply.set_content(reply.content() + item["content"][0]["text"].get<std::string>());
      } else if (item["type"] == "reasoning") {
        reply.set_reasoning_content(reply.reasoning_content() +
                                    item["content"][0]["text"].get<std::string>());
      } else if (item["type"] == "function_call") {
        calls.push_back({{"id", item["call_id"]},
                         {"type", "function"},
                         {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
      }
    }
    if (!calls.empty()) reply.set_tool_calls_json(calls.dump());
    options_.on_done(response, std::move(reply));
  }
  return response;
}

void ResponsesWriter::Event(const char* type, Json data) {
  if (!streaming_) return;
  Json event = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : data.items()) event[key] = std::move(value);
  absl::StrAppend(&events_, "event: ", type, "\ndata: ", Dump(event), "\n\n");
}

std::string ResponsesWriter::TakeEvents() { return std::exchange(events_, std::string()); }

}  // namespace textgen::server::http
