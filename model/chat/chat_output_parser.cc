#include "model/chat/chat_output_parser.h"

#include <algorithm>
#include <utility>

#include "model/chat/harmony_reply_parser.h"
#include "model/chat/python_call_reader.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The first character of a Python-style call's name.
bool IsCallNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// A JSON string literal's value, or nullopt when `literal` is not one.
std::optional<std::string> DecodeString(const std::string& literal) {
  nlohmann::json parsed = nlohmann::json::parse(literal, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_string()) return std::nullopt;
  return parsed.get<std::string>();
}

// The tags that open calls in running text, per format.
std::vector<std::string> CallTags(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwen3Coder:
      return {"<tool_call>"};
    case ToolCallFormat::kMistral:
      return {"[TOOL_CALLS]"};
    case ToolCallFormat::kPhi4Mini:
      return {"<|tool_call|>"};
    case ToolCallFormat::kLfm2:
      return {"<|tool_call_start|>"};
    default:
      return {};
  }
}

}  // namespace

void ChatOutputDelta::Append(ChatOutputDelta later) {
  content += later.content;
  reasoning += later.reasoning;
  for (ToolCallDelta& call : later.tool_calls) {
    if (!tool_calls.empty() && tool_calls.back().index == call.index && call.id.empty()) {
      tool_calls.back().arguments += call.arguments;
    } else {
      tool_calls.push_back(std::move(call));
    }
  }
}

// ---- CallReader ----

ToolCallReader::Step ChatOutputParser::CallReader::Push(char c) {
  raw_ += c;
  switch (state_) {
    case State::kOpen:
      if (IsSpace(c)) return Step::kMore;
      if (c != '{') return Step::kError;
      state_ = State::kKeyOrClose;
      return Step::kMore;
    case State::kKeyOrClose:
      if (IsSpace(c)) return Step::kMore;
      if (c == '}') {
        state_ = State::kDone;
        return Step::kDone;
      }
      if (c != '"') return Step::kError;
      key_.assign(1, '"');
      key_escape_ = false;
      state_ = State::kKey;
      return Step::kMore;
    case State::kKey:
      key_ += c;
      if (key_escape_) {
        key_escape_ = false;
      } else if (c == '\\') {
        key_escape_ = true;
      } else if (c == '"') {
        std::optional<std::string> key = DecodeString(key_);
        if (!key) return Step::kError;
        key_ = *std::move(key);
        state_ = State::kColon;
      }
      return Step::kMore;
    case State::kColon:
      if (IsSpace(c)) return Step::kMore;
      if (c != ':') return Step::kError;
      value_.clear();
      depth_ = 0;
      in_string_ = escape_ = scalar_ = false;
      arguments_streaming_ = false;
      state_ = State::kValue;
      return Step::kMore;
    case State::kValue:
      return Value(c);
    case State::kAfterValue:
      if (IsSpace(c)) return Step::kMore;
      if (c == ',') {
        state_ = State::kKeyOrClose;
        return Step::kMore;
      }
      if (c == '}') {
        state_ = State::kDone;
        return Step::kDone;
      }
      return Step::kError;
    case State::kDone:
      return Step::kError;
  }
  return Step::kError;
}

ToolCallReader::Step ChatOutputParser::CallReader::Value(char c) {
  const bool is_arguments = key_ == arguments_key_ || key_ == "arguments" || key_ == "parameters";
  bool complete = false;
  if (value_.empty()) {
    if (IsSpace(c)) return Step::kMore;
    // A second arguments key: which are the call's? (What streamed cannot be taken back.)
    if (is_arguments && arguments_seen_) return Step::kError;
    arguments_seen_ = arguments_seen_ || is_arguments;
    value_ += c;
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      depth_ = 1;
      arguments_streaming_ = is_arguments;
    } else {
      scalar_ = true;
    }
  } else if (scalar_) {
    if (c == ',' || c == '}' || IsSpace(c)) {
      raw_.pop_back();  // the delimiter belongs to the object: read it again
      complete = true;
    } else {
      value_ += c;
    }
  } else {
    value_ += c;
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
        complete = depth_ == 0;
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      complete = --depth_ == 0;
    }
  }
  if (arguments_streaming_) arguments_ = value_;
  if (!complete) return Step::kMore;
  arguments_streaming_ = false;
  if (key_ == "name") {
    std::optional<std::string> name = DecodeString(value_);
    if (!name || name_) return Step::kError;  // a second name: which call is this?
    name_ = *std::move(name);
  } else if (is_arguments) {
    if (value_.front() == '"') {
      // Arguments as a JSON string holding JSON (some models, and OpenAI's own wire form).
      std::optional<std::string> text = DecodeString(value_);
      if (!text) return Step::kError;
      arguments_ = *std::move(text);
    } else {
      arguments_ = value_;
    }
  }
  state_ = State::kAfterValue;
  if (scalar_) return Push(c);  // the delimiter
  return Step::kMore;
}

size_t HoldBackFrom(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return text.size() - n;
  }
  return text.size();
}

std::string NextToolCallId(ToolCallFormat format, uint64_t& state) {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const int length = format == ToolCallFormat::kMistral ? 9 : 24;
  std::string id = format == ToolCallFormat::kMistral ? "" : "call_";
  for (int i = 0; i < length; ++i) {
    // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    id += kAlphabet[z % 62];
  }
  return id;
}

// ---- ChatOutputParser ----

ChatOutputParser::ChatOutputParser(ChatOutputOptions options)
    : options_(std::move(options)),
      markup_(MarkupOf(options_.format)),
      tags_(CallTags(options_.format)),
      mode_(options_.reasoning && options_.starts_in_reasoning ? Mode::kReasoning : Mode::kStart),
      id_state_(options_.id_seed ^ 0x9E3779B97F4A7C15ull) {
  if (options_.format == ToolCallFormat::kHarmony) {
    harmony_ = std::make_unique<HarmonyReplyParser>(options_, id_state_);
  }
}

ChatOutputParser::~ChatOutputParser() = default;
ChatOutputParser::ChatOutputParser(ChatOutputParser&&) noexcept = default;
ChatOutputParser& ChatOutputParser::operator=(ChatOutputParser&&) noexcept = default;

ChatOutputDelta ChatOutputParser::Feed(std::string_view text) {
  if (harmony_ != nullptr) return harmony_->Feed(text);
  pending_.append(text);
  ChatOutputDelta out;
  Process(out, /*final=*/false);
  return out;
}

ChatOutputDelta ChatOutputParser::Finish() {
  if (harmony_ != nullptr) return harmony_->Finish();
  ChatOutputDelta out;
  Process(out, /*final=*/true);
  return out;
}

const std::vector<ParsedToolCall>& ChatOutputParser::tool_calls() const {
  return harmony_ != nullptr ? harmony_->tool_calls() : calls_;
}
int ChatOutputParser::malformed_calls() const {
  return harmony_ != nullptr ? harmony_->malformed_calls() : malformed_;
}
const std::string& ChatOutputParser::content() const {
  return harmony_ != nullptr ? harmony_->content() : content_;
}
const std::string& ChatOutputParser::reasoning() const {
  return harmony_ != nullptr ? harmony_->reasoning() : reasoning_;
}

size_t ChatOutputParser::HoldBack(std::string_view tag) const {
  return HoldBackFrom(pending_, tag);
}

void ChatOutputParser::FlushText(size_t end, std::string& sink) {
  sink.append(pending_, 0, end);
  pending_.erase(0, end);
}

std::string ChatOutputParser::NextId() { return NextToolCallId(options_.format, id_state_); }

void ChatOutputParser::StartCall() {
  if (markup_.xml_parameters) {
    call_ = std::make_unique<XmlCallReader>(&options_.text_parameters);
  } else if (markup_.python_calls) {
    call_ = std::make_unique<PythonCallReader>();
  } else {
    call_ = std::make_unique<CallReader>(markup_.arguments_key);
  }
  call_started_ = false;
}

void ChatOutputParser::PumpCall(ChatOutputDelta& out, char c) {
  const ToolCallReader::Step step = call_->Push(c);
  const bool tentative = mode_ == Mode::kBareJson;
  if (!call_started_ && call_->name()) {
    const bool declared = std::find(options_.tool_names.begin(), options_.tool_names.end(),
                                    *call_->name()) != options_.tool_names.end();
    if (declared) {
      if (tentative) mode_ = Mode::kCall;  // it is a call: what was held is no longer content
      call_started_ = true;
      ToolCallDelta start;
      start.index = static_cast<int>(calls_.size());
      start.id = NextId();
      call_id_ = start.id;
      start.name = *call_->name();
      out.tool_calls.push_back(std::move(start));
    }
  }
  if (call_started_) {
    if (std::string fragment = call_->TakeArguments(); !fragment.empty()) {
      if (out.tool_calls.empty() ||
          out.tool_calls.back().index != static_cast<int>(calls_.size())) {
        out.tool_calls.push_back({static_cast<int>(calls_.size()), "", "", ""});
      }
      out.tool_calls.back().arguments += fragment;
    }
  }
  if (step == ToolCallReader::Step::kDone) EndCall(out, /*complete=*/true);
  if (step == ToolCallReader::Step::kError) EndCall(out, /*complete=*/false);
}

void ChatOutputParser::EndCall(ChatOutputDelta& out, bool complete) {
  if (!call_started_) {
    // It never named a declared tool: bare JSON is content again; a tagged call is dropped.
    if (mode_ == Mode::kBareJson) return RevertBareJson(out);
    ++malformed_;
  } else {
    // Its first delta went out, so it stays a call, as streamed: a client already has it.
    std::string arguments = call_->arguments();
    if (complete && arguments.empty()) {
      arguments = "{}";  // no arguments key: the call takes none
      out.tool_calls.push_back({static_cast<int>(calls_.size()), "", "", "{}"});
    }
    if (!complete || nlohmann::json::parse(arguments, nullptr, false).is_discarded()) ++malformed_;
    calls_.push_back({call_id_, *call_->name(), std::move(arguments)});
  }
  bare_json_.clear();
  call_.reset();
  call_started_ = false;
  if (!complete) {
    // Broken JSON: the rest of the call is not content. Skip to the format's closing tag, or
    // (no tag to find) to the end of the reply.
    in_array_ = false;
    mode_ = Mode::kSkipCall;
    return;
  }
  if (in_array_) {
    array_expect_call_ = false;  // now a "," or "]"
    return;
  }
  mode_ = markup_.call_open.empty() ? Mode::kAfterCall : Mode::kCallClose;
}

void ChatOutputParser::RevertBareJson(ChatOutputDelta& out) {
  // Not a call after all: what was read is content.
  content_ += bare_json_;
  out.content += bare_json_;
  bare_json_.clear();
  call_.reset();
  call_started_ = false;
  in_array_ = false;
  mode_ = Mode::kText;
}

void ChatOutputParser::Process(ChatOutputDelta& out, bool final) {
  while (ReadInMode(out, final)) {
  }
}

bool ChatOutputParser::ReadInMode(ChatOutputDelta& out, bool final) {
  switch (mode_) {
    case Mode::kStart:
      return ReadStart(out, final);
    case Mode::kReasoning:
      return ReadReasoning(out, final);
    case Mode::kText:
      return ReadText(out, final);
    case Mode::kBareJson:
    case Mode::kCall:
      return ReadCall(out, final);
    case Mode::kSkipCall:
      return SkipCall(out, final);
    case Mode::kAfterCall:
      return ReadAfterCall(out, final);
    case Mode::kCallClose:
      return ReadCallClose(out, final);
  }
  return false;
}

size_t ChatOutputParser::LeadingSpaces() const {
  size_t first = 0;
  while (first < pending_.size() && IsSpace(pending_[first])) ++first;
  return first;
}

std::string ChatOutputParser::CallCloseTag() const {
  // Formats with a tag per call close each with its tag (what call_close ends with).
  if (markup_.call_open.empty()) return markup_.array_close;
  const std::string_view close = markup_.call_close;
  return std::string(close.substr(close.find_first_not_of('\n')));
}

// The reply's first text: reasoning, a tool call at the very start, or content.
bool ChatOutputParser::ReadStart(ChatOutputDelta& out, bool final) {
  size_t first = LeadingSpaces();
  if (first == pending_.size()) {
    if (final) {
      if (drop_leading_space_) pending_.clear();
      mode_ = Mode::kText;
      return true;
    }
    return false;
  }
  const std::string_view rest = std::string_view(pending_).substr(first);
  if (options_.reasoning && !reasoning_seen_) {
    const std::string& open = options_.reasoning->open;
    if (rest.substr(0, open.size()) == open) {
      pending_.erase(0, first + open.size());
      mode_ = Mode::kReasoning;
      return true;
    }
    if (!final && open.substr(0, rest.size()) == rest) return false;  // maybe the tag
  }
  if (options_.parse_tool_calls) {
    // A call's tag at the start is read as in running text.
    bool maybe_tag = false;
    for (const std::string& tag : tags_) {
      if (rest.substr(0, tag.size()) == tag) maybe_tag = true;
      if (!final && tag.substr(0, rest.size()) == rest) return false;
    }
    if (maybe_tag) {
      pending_.erase(0, first);  // whitespace before a first call is no content
      drop_leading_space_ = false;
      mode_ = Mode::kText;
      return true;
    }
  }
  if (drop_leading_space_) {
    pending_.erase(0, first);  // `rest` is stale from here on
    drop_leading_space_ = false;
    first = 0;
  }
  mode_ = Mode::kText;
  const char opener = pending_[first];
  const bool bare_opener = markup_.python_calls ? opener == '[' : (opener == '{' || opener == '[');
  if (options_.parse_tool_calls && markup_.call_open.empty() && bare_opener) {
    // Maybe a bare JSON call: read it before deciding what it is.
    const bool array = opener == '[';
    content_ += pending_.substr(0, first);
    out.content += pending_.substr(0, first);
    pending_.erase(0, first);
    mode_ = Mode::kBareJson;
    in_array_ = array;
    array_expect_call_ = in_array_;
    array_opened_ = in_array_;
    if (in_array_) {
      bare_json_.assign(1, '[');
      pending_.erase(0, 1);
    } else {
      StartCall();
    }
  }
  return true;
}

// Inside the reasoning block, up to its closing tag.
bool ChatOutputParser::ReadReasoning(ChatOutputDelta& out, bool final) {
  const std::string& close = options_.reasoning->close;
  const size_t at = pending_.find(close);
  // A call's tag ends the reasoning too, where the format says so; the call is read next.
  const bool calls_end_reasoning =
      markup_.xml_parameters && options_.parse_tool_calls && !tags_.empty();
  const size_t call_at = calls_end_reasoning ? pending_.find(tags_.front()) : std::string::npos;
  if (call_at < at) {
    out.reasoning.append(pending_, 0, call_at);
    FlushText(call_at, reasoning_);
    reasoning_seen_ = true;
    mode_ = Mode::kText;
    return true;
  }
  if (at != std::string::npos) {
    out.reasoning.append(pending_, 0, at);
    FlushText(at, reasoning_);
    pending_.erase(0, close.size());
    reasoning_seen_ = true;
    drop_leading_space_ = true;
    mode_ = Mode::kStart;
    return true;
  }
  size_t keep = final ? pending_.size() : HoldBack(close);
  if (calls_end_reasoning && !final) keep = std::min(keep, HoldBack(tags_.front()));
  out.reasoning.append(pending_, 0, keep);
  FlushText(keep, reasoning_);
  if (final) mode_ = Mode::kText;
  return false;
}

// Content, up to the next tool-call tag.
bool ChatOutputParser::ReadText(ChatOutputDelta& out, bool final) {
  if (!options_.parse_tool_calls || tags_.empty()) {
    out.content += pending_;
    FlushText(pending_.size(), content_);
    return false;
  }
  size_t at = std::string::npos;
  size_t tag_size = 0;
  for (const std::string& tag : tags_) {
    const size_t found = pending_.find(tag);
    if (found < at) {
      at = found;
      tag_size = tag.size();
    }
  }
  if (at != std::string::npos) {
    out.content.append(pending_, 0, at);
    FlushText(at, content_);
    pending_.erase(0, tag_size);
    mode_ = Mode::kCall;
    in_array_ = markup_.array;
    array_expect_call_ = in_array_;
    array_opened_ = false;
    if (!in_array_) StartCall();
    return true;
  }
  size_t keep = pending_.size();
  if (!final) {
    for (const std::string& tag : tags_) keep = std::min(keep, HoldBack(tag));
  }
  out.content.append(pending_, 0, keep);
  FlushText(keep, content_);
  return false;
}

// A call's JSON (after its tag, or bare), or the array of calls around them.
bool ChatOutputParser::ReadCall(ChatOutputDelta& out, bool final) {
  size_t i = 0;
  const auto reading = [&] { return mode_ == Mode::kCall || mode_ == Mode::kBareJson; };
  const auto consume = [&](char c) {
    ++i;
    if (mode_ == Mode::kBareJson) bare_json_ += c;
  };
  while (i < pending_.size() && reading()) {
    const char c = pending_[i];
    if (call_) {
      consume(c);
      PumpCall(out, c);
      continue;
    }
    // Between the calls of an array: "[", then calls separated by ",", then "]".
    if (IsSpace(c)) {
      consume(c);
      continue;
    }
    if (in_array_ && !array_opened_) {
      if (c != '[') {  // a tag without its array: the rest is content
        ++malformed_;
        in_array_ = false;
        mode_ = Mode::kText;
        break;
      }
      consume(c);
      array_opened_ = true;
      continue;
    }
    if (array_expect_call_ && (markup_.python_calls ? IsCallNameStart(c) : c == '{')) {
      StartCall();  // the reader takes the "{" (or the name)
      continue;
    }
    if (!array_expect_call_ && c == ',') {
      consume(c);
      array_expect_call_ = true;
      continue;
    }
    if (c == ']') {
      consume(c);
      in_array_ = false;
      mode_ = markup_.array_close.empty() ? Mode::kAfterCall : Mode::kCallClose;
      break;
    }
    // Anything else ends the array: it and what follows are content.
    if (mode_ == Mode::kBareJson) {
      RevertBareJson(out);
    } else {
      ++malformed_;
      in_array_ = false;
      mode_ = Mode::kText;
    }
    break;
  }
  pending_.erase(0, i);
  if (reading() && pending_.empty()) {
    if (!final) return false;
    if (call_) {
      EndCall(out, /*complete=*/false);  // cut off: kept, or content again
    } else if (mode_ == Mode::kBareJson) {
      RevertBareJson(out);
    }
    in_array_ = false;
    mode_ = Mode::kText;
  }
  return true;
}

// The rest of a broken call, up to the closing tag.
bool ChatOutputParser::SkipCall(ChatOutputDelta& out, bool final) {
  const std::string close = CallCloseTag();
  const size_t at = close.empty() ? std::string::npos : pending_.find(close);
  if (at == std::string::npos) {
    pending_.erase(0, close.empty() || final ? pending_.size() : HoldBack(close));
    if (final) mode_ = Mode::kText;
    return false;
  }
  pending_.erase(0, at + close.size());
  mode_ = Mode::kAfterCall;
  return true;
}

// Whitespace after a call, which is not content.
bool ChatOutputParser::ReadAfterCall(ChatOutputDelta& out, bool final) {
  size_t first = LeadingSpaces();
  if (first == pending_.size() && !final) return false;
  pending_.erase(0, first);
  mode_ = Mode::kText;
  return true;
}

// The closing tag after a call (the array's, or Hermes's </tool_call>).
bool ChatOutputParser::ReadCallClose(ChatOutputDelta& out, bool final) {
  size_t first = LeadingSpaces();
  const std::string_view rest = std::string_view(pending_).substr(first);
  const std::string close = CallCloseTag();
  if (rest.substr(0, close.size()) == close) {
    pending_.erase(0, first + close.size());
    // Whitespace between or after calls is not content.
    mode_ = Mode::kAfterCall;
    return true;
  }
  if (!final && close.substr(0, rest.size()) == rest) return false;
  pending_.erase(0, first);
  mode_ = Mode::kText;
  return true;
}

}  // namespace textgen::model
