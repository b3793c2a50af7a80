#include "model/chat/xml_call_reader.h"

#include <algorithm>

#include "model/chat/chat_output_parser.h"
#include "model/chat/tool_call_format.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view Trimmed(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

void AppendJsonStringChars(std::string_view text, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 15];
        } else {
          out += c;
        }
    }
  }
}

ToolCallReader::Step XmlCallReader::Push(char c) {
  switch (state_) {
    case State::kFunctionTag: {
      if (tag_.empty() && IsSpace(c)) return Step::kMore;
      tag_ += c;
      const std::string_view open = XmlCallTags::kFunctionOpen;
      if (open.substr(0, tag_.size()) != tag_) return Step::kError;
      if (tag_.size() == open.size()) {
        tag_.clear();
        state_ = State::kName;
      }
      return Step::kMore;
    }
    case State::kName:
      if (c != '>') {
        if (IsSpace(c) || c == '<' || tag_.size() >= kMaxTagBytes) return Step::kError;
        tag_ += c;
        return Step::kMore;
      }
      if (tag_.empty()) return Step::kError;
      name_ = std::move(tag_);
      tag_.clear();
      state_ = State::kBetween;
      return Step::kMore;
    case State::kBetween:
      return Between(c);
    case State::kTag:
      return Tag(c);
    case State::kValueStart:
      state_ = State::kValue;
      if (c == '\n') return Step::kMore;  // the template's newline after the opening tag
      return Value(c);
    case State::kValue:
      return Value(c);
    case State::kDone:
      return Step::kError;
  }
  return Step::kError;
}

ToolCallReader::Step XmlCallReader::Between(char c) {
  if (IsSpace(c)) return Step::kMore;
  if (c != '<') return Step::kError;
  tag_.clear();
  state_ = State::kTag;
  return Step::kMore;
}

ToolCallReader::Step XmlCallReader::Tag(char c) {
  if (c != '>') {
    if (c == '<' || c == '\n' || tag_.size() >= kMaxTagBytes) return Step::kError;
    tag_ += c;
    return Step::kMore;
  }
  // The tag's text without its "<" and ">".
  const std::string_view function_close = XmlCallTags::kFunctionClose;
  const std::string_view parameter_open = XmlCallTags::kParameterOpen;
  if (tag_ == function_close.substr(1, function_close.size() - 2)) {
    arguments_ += parameters_ == 0 ? "{}" : "}";
    state_ = State::kDone;
    return Step::kDone;
  }
  const std::string_view parameter = parameter_open.substr(1);
  if (!std::string_view(tag_).starts_with(parameter) || tag_.size() == parameter.size()) {
    return Step::kError;
  }
  key_ = tag_.substr(parameter.size());
  text_value_ = IsTextParameter(key_);
  value_.clear();
  value_sent_ = 0;
  arguments_ += parameters_++ == 0 ? "{\"" : ", \"";
  AppendJsonStringChars(key_, arguments_);
  arguments_ += "\": ";
  if (text_value_) arguments_ += '"';
  state_ = State::kValueStart;
  return Step::kMore;
}

ToolCallReader::Step XmlCallReader::Value(char c) {
  value_ += c;
  const std::string_view close = XmlCallTags::kParameterClose;
  if (std::string_view(value_).ends_with(close)) {
    value_.resize(value_.size() - close.size());
    CloseParameter();
    state_ = State::kBetween;
    return Step::kMore;
  }
  if (text_value_) {
    // Send what can no longer be the closing tag or the newline before it.
    const size_t settled = std::min(HoldBackFrom(value_, "\n</parameter>"),
                                    HoldBackFrom(value_, XmlCallTags::kParameterClose));
    if (settled > value_sent_) {
      AppendJsonStringChars(std::string_view(value_).substr(value_sent_, settled - value_sent_),
                            arguments_);
      value_sent_ = settled;
    }
  }
  return Step::kMore;
}

void XmlCallReader::CloseParameter() {
  std::string_view value = value_;
  if (value.ends_with('\n') && value.size() > value_sent_) value.remove_suffix(1);
  if (text_value_) {
    if (value.size() > value_sent_) AppendJsonStringChars(value.substr(value_sent_), arguments_);
    arguments_ += '"';
    return;
  }
  const std::string_view trimmed = Trimmed(value);
  const nlohmann::json parsed = nlohmann::json::parse(trimmed, nullptr, false);
  if (!parsed.is_discarded() && !trimmed.empty()) {
    arguments_ += parsed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    arguments_ += '"';
    AppendJsonStringChars(value, arguments_);
    arguments_ += '"';
  }
}

bool XmlCallReader::IsTextParameter(const std::string& key) const {
  if (text_parameters_ == nullptr || !name_) return false;
  const auto tool = text_parameters_->find(*name_);
  return tool != text_parameters_->end() && tool->second.contains(key);
}

}  // namespace textgen::model
