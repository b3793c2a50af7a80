#include "model/chat/jinja/template.h"

#include "model/chat/jinja/parser.h"

namespace textgen::model::jinja {

absl::StatusOr<Template> Template::Parse(absl::string_view text, const LexerOptions& options) {
  auto parsed = std::make_shared<Parsed>(Parsed{Source(text, options), {}});
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(parsed->source, options);
  if (!tokens.ok()) return tokens.status();
  absl::StatusOr<Body> body = jinja::Parse(*tokens, parsed->source);
  if (!body.ok()) return body.status();
  parsed->body = *std::move(body);
  return Template(std::move(parsed));
}

absl::StatusOr<TaintedString> Template::Render(const Dict& context,
                                               const RenderOptions& options) const {
  Interpreter interpreter(parsed_->source, options);
  return interpreter.Render(parsed_->body, context);
}

}  // namespace textgen::model::jinja
