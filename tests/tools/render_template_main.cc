// Renders chat templates for the comparison with Python's jinja2 (tests/model/chat/).
// Reads JSON lines {"template": TEXT, "context": {...}, "now": UNIX_SECONDS} on stdin and
// writes one JSON line per input: {"output": TEXT} or {"error": MESSAGE}.
#include <iostream>
#include <string>

#include "model/chat/jinja/template.h"
#include "model/chat/json_value.h"
#include "nlohmann/json.hpp"

int main() {
  using Json = nlohmann::ordered_json;
  namespace jinja = textgen::model::jinja;
  std::string line;
  while (std::getline(std::cin, line)) {
    Json request = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    Json reply = Json::object();
    if (request.is_discarded() || !request.contains("template")) {
      reply["error"] = "bad request line";
      std::cout << reply.dump() << "\n";
      continue;
    }
    absl::StatusOr<jinja::Value> context = textgen::model::ParseJsonValue(
        request.value("context", Json::object()).dump(), /*tainted=*/false, "context");
    absl::StatusOr<jinja::Template> parsed =
        jinja::Template::Parse(request["template"].get<std::string>());
    jinja::RenderOptions options;
    if (request.contains("now")) options.now_unix_seconds = request["now"].get<int64_t>();
    if (!context.ok()) {
      reply["error"] = std::string(context.status().message());
    } else if (!parsed.ok()) {
      reply["error"] = std::string(parsed.status().message());
    } else {
      absl::StatusOr<jinja::TaintedString> output = parsed->Render(context->dict(), options);
      if (output.ok()) {
        reply["output"] = output->bytes;
      } else {
        reply["error"] = std::string(output.status().message());
      }
    }
    std::cout << reply.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  }
  return 0;
}
