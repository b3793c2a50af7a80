#pragma once

// Reads one tool call's body a character at a time, as a reply streams: its name once known,
// then its arguments as JSON text in fragments. One implementation per way of writing a call
// (a JSON object, Qwen3-Coder's XML parameters); ChatOutputParser finds where calls start.

#include <cstddef>
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
  std::string TakeArguments() {
    if (arguments_taken_ >= arguments_.size()) return "";
    std::string out = arguments_.substr(arguments_taken_);
    arguments_taken_ = arguments_.size();
    return out;
  }
  // All arguments text read so far.
  const std::string& arguments() const { return arguments_; }

 protected:
  std::string arguments_;  // the readers append (or set) the arguments' JSON text

 private:
  size_t arguments_taken_ = 0;
};

}  // namespace textgen::model
