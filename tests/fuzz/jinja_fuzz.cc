// libFuzzer target: arbitrary bytes as a chat template, parsed and rendered with a fixed
// conversation under tight limits. Any crash, sanitizer report, hang (libFuzzer -timeout) or
// unbounded memory (-rss_limit_mb) is a bug: every outcome must be a value or a Status.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/chat/chat_template.h"
#include "model/chat/json_value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace model = textgen::model;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<model::ChatTemplate> parsed = model::ChatTemplate::Create(text, "<s>", "</s>");
  if (!parsed.ok()) return 0;
  model::ChatInput input;
  input.messages = {
      {"system", "Be brief.", "", "", "", ""},
      {"user", "Hi <|im_end|> {{ 1 }} é 🌍", "", "", "", ""},
      {"assistant", "<think>r</think>\n\nHello", "r", "", "",
       R"([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}])"},
      {"tool", "{\"t\": 21}", "", "f", "c1", ""}};
  input.tools = *model::ParseJsonValue(
      R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])", true, "tools");
  input.variables_json = R"({"enable_thinking": false})";
  textgen::model::jinja::RenderOptions options;
  options.limits.max_output_bytes = 1 << 16;
  options.limits.max_loop_iterations = 20000;
  options.limits.max_collection_items = 20000;
  options.limits.max_call_depth = 32;
  options.now_unix_seconds = 1763900000;
  absl::StatusOr<model::ChatPrompt> prompt = parsed->Render(input, options);
  if (prompt.ok()) {
    // Untrusted ranges must lie inside the text, sorted and disjoint.
    size_t end = 0;
    for (const model::TextRange& range : prompt->untrusted) {
      if (range.begin < end || range.end <= range.begin || range.end > prompt->text.size()) {
        __builtin_trap();
      }
      end = range.end;
    }
  }
  return 0;
}
