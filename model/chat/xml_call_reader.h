#pragma once

// Reads a call in the qwen3-coder format (Qwen3-Coder, Qwen3.5 / 3.6, Nemotron 3 Nano), what
// follows its <tool_call>:
//
//   <function=NAME>
//   <parameter=KEY>
//   VALUE
//   </parameter>
//   ...
//   </function>
//
// and gives its arguments as one JSON object, in the order written. A value is the text between
// the parameter's tags less the newline after the opening tag and the one before the closing
// tag. A text parameter's value (its schema's type is "string") is that text, as a JSON string,
// streamed as it arrives; any other value is read as JSON when it parses (`3`, `true`,
// `["a"]`), else kept as a string, and goes out once its closing tag is read.

#include <map>
#include <optional>
#include <set>
#include <string>

#include "model/chat/tool_call_reader.h"

namespace textgen::model {

// Per tool, the parameters whose values are text.
using TextParameters = std::map<std::string, std::set<std::string>, std::less<>>;

class XmlCallReader final : public ToolCallReader {
 public:
  // `text_parameters` outlives the reader.
  explicit XmlCallReader(const TextParameters* text_parameters)
      : text_parameters_(text_parameters) {}

  Step Push(char c) override;
  const std::optional<std::string>& name() const override { return name_; }

  // Longest tag name read (function and parameter names are tool names and schema keys).
  static constexpr size_t kMaxTagBytes = 256;

 private:
  enum class State { kFunctionTag, kName, kBetween, kTag, kValueStart, kValue, kDone };

  Step Between(char c);
  Step Tag(char c);
  Step Value(char c);
  // The parameter's value ended (its closing tag is read).
  void CloseParameter();
  bool IsTextParameter(const std::string& key) const;

  const TextParameters* text_parameters_;
  State state_ = State::kFunctionTag;
  std::string tag_;  // the tag being read
  std::optional<std::string> name_;
  std::string key_;
  bool text_value_ = false;  // the value streams as a JSON string
  std::string value_;        // the value read so far (with what may be its closing tag)
  size_t value_sent_ = 0;    // bytes of value_ already in arguments_ (text values)
  int parameters_ = 0;
};

// `text` as the characters of a JSON string, without quotes (UTF-8 passes through as it is, so
// text cut inside a character stays whole once joined).
void AppendJsonStringChars(std::string_view text, std::string& out);

}  // namespace textgen::model
