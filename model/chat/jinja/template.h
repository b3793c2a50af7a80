#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/ast.h"
#include "model/chat/jinja/interpreter.h"
#include "model/chat/jinja/lexer.h"
#include "model/chat/jinja/value.h"

namespace textgen::model::jinja {

// A parsed Jinja template: the subset of Jinja2 that chat templates use, rendered the way
// Hugging Face renders them (trim_blocks, lstrip_blocks, loop controls, an immutable sandbox,
// tojson as json.dumps). Sandboxed: no file, network or Python object access; bounded by
// RenderLimits. Immutable after parsing; Render is thread-safe.
class Template {
 public:
  // Syntax errors are INVALID_ARGUMENT naming the line and column.
  static absl::StatusOr<Template> Parse(absl::string_view text, const LexerOptions& options = {});

  // Renders with `context` as the template's variables. The result's taint ranges mark the
  // bytes that came from tainted input strings.
  absl::StatusOr<TaintedString> Render(const Dict& context,
                                       const RenderOptions& options = {}) const;

 private:
  struct Parsed {
    Source source;
    Body body;
  };
  explicit Template(std::shared_ptr<const Parsed> parsed) : parsed_(std::move(parsed)) {}

  std::shared_ptr<const Parsed> parsed_;
};

}  // namespace textgen::model::jinja
