#pragma once

// Reads one call as LFM2 / LFM2.5 write them, a Python call with keyword arguments inside the
// list its tags hold (<|tool_call_start|>[get_weather(city='Oslo', days=3), ...]<|tool_call_end|>):
//
//   NAME(KEY=VALUE, KEY=VALUE)
//
// and gives its arguments as one JSON object in the order written, each value once it is
// whole. Values are Python literals (strings in single or double quotes with Python's escapes,
// numbers, True / False / None, lists, tuples and dicts of them) or JSON literals (true, false,
// null), as llama.cpp's LFM2 parser accepts; anything else breaks the call.

#include <optional>
#include <string>
#include <string_view>

#include "model/chat/tool_call_reader.h"

namespace textgen::model {

class PythonCallReader final : public ToolCallReader {
 public:
  Step Push(char c) override;
  const std::optional<std::string>& name() const override { return name_; }

  static constexpr size_t kMaxNameBytes = 256;

 private:
  enum class State { kName, kKeyOrClose, kKey, kEquals, kValue, kAfterValue, kDone };

  Step Value(char c);
  // The value read (raw_value_) as JSON, appended to arguments_; false when it is no literal.
  bool EndValue();

  State state_ = State::kName;
  std::string token_;  // the name or key being read
  std::optional<std::string> name_;
  std::string raw_value_;
  int depth_ = 0;
  char quote_ = 0;  // inside a string: its quote
  bool escape_ = false;
  int arguments_count_ = 0;
};

// A Python (or JSON) literal as JSON text; nullopt when `text` is not one.
std::optional<std::string> PythonLiteralToJson(std::string_view text);

}  // namespace textgen::model
