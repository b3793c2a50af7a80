#pragma once

// Reads one tool call's body a character at a time, as a reply streams: its name once known,
// then its arguments as JSON text in fragments. One implementation per way of writing a call
// (a JSON object, Qwen3-Coder's XML parameters); ChatOutputParser finds where calls start.

#include <optional>
#include <string>

namespace textgen::model {

class ToolCallReader {
 public:
  enum class Step { kMore, kDone, kError };
  virtual ~ToolCallReader() = default;

  virtual Step Push(char c) = 0;
  virtual const std::optional<std::string>& name() const = 0;
  // Arguments text (JSON) read since the last call.
  virtual std::string TakeArguments() = 0;
  // All arguments text read so far.
  virtual const std::string& arguments() const = 0;
};

}  // namespace textgen::model
