#include "server/core/chat_templates.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace textgen::server {
namespace {

// The text a special token stands for ("<|begin_of_text|>"), or "" when the id is absent.
std::string SpecialTokenText(const model::Tokenizer& tokenizer, int id) {
  if (id < 0) return "";
  return tokenizer.Decode({id}, /*render_control=*/true);
}

absl::StatusOr<std::string> ReadTemplateFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--chat-template ", path, ": cannot open"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0 || static_cast<size_t>(size) > model::kMaxChatTemplateBytes) {
    return absl::InvalidArgumentError(absl::StrCat("--chat-template ", path, ": ", size,
                                                   " bytes; at most ", model::kMaxChatTemplateBytes,
                                                   " are allowed"));
  }
  in.seekg(0);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<ChatTemplates> ChatTemplates::Load(
    const std::map<std::string, std::string>& from_model, const std::string& template_file,
    const model::Tokenizer& tokenizer, std::optional<model::ToolCallFormat> tool_call_format) {
  ChatTemplates out;
  const auto add_format = [&](const std::string& name, const std::string& source) {
    model::ReplyFormat format = model::DetectReplyFormat(source);
    if (tool_call_format) format.tool_calls = *tool_call_format;
    out.formats_[name] = std::move(format);
  };
  const std::string bos = SpecialTokenText(tokenizer, tokenizer.bos_id());
  const std::string eos = SpecialTokenText(tokenizer, tokenizer.eos_id());
  for (const auto& [name, source] : from_model) {
    if (name.empty() && !template_file.empty()) continue;  // replaced by the flag
    absl::StatusOr<model::ChatTemplate> parsed = model::ChatTemplate::Create(source, bos, eos);
    if (parsed.ok()) {
      out.templates_.emplace(name, *std::move(parsed));
      add_format(name, source);
    } else {
      out.unusable_.emplace(name, parsed.status());
    }
  }
  if (from_model.contains("") && template_file.empty()) out.default_source_ = "gguf";
  if (!template_file.empty()) {
    absl::StatusOr<std::string> source = ReadTemplateFile(template_file);
    if (!source.ok()) return source.status();
    absl::StatusOr<model::ChatTemplate> parsed = model::ChatTemplate::Create(*source, bos, eos);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--chat-template ", template_file, ": ", parsed.status().message()));
    }
    out.templates_.erase("");
    out.templates_.emplace("", *std::move(parsed));
    add_format("", *source);
    out.default_source_ = template_file;
  }
  return out;
}

absl::StatusOr<const model::ChatTemplate*> ChatTemplates::Find(const std::string& name) const {
  if (auto it = templates_.find(name); it != templates_.end()) return &it->second;
  if (auto it = unusable_.find(name); it != unusable_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the model's chat template", name.empty() ? "" : absl::StrCat(" '", name, "'"),
                     " cannot be used (", it->second.message(),
                     "); start the server with --chat-template FILE to give it one that works"));
  }
  if (templates_.empty() && unusable_.empty()) {
    return absl::FailedPreconditionError(
        "the model has no chat template (GGUF tokenizer.chat_template); start the server with "
        "--chat-template FILE, or send a prompt to Generate");
  }
  if (name.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model has no default chat template, only named ones (", absl::StrJoin(names(), ", "),
        "); set template_name or start the server with --chat-template FILE"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("template_name '", name, "' is not one of the model's templates: ",
                   absl::StrJoin(names(), ", ", [](std::string* o, const std::string& n) {
                     absl::StrAppend(o, n.empty() ? "\"\" (default)" : n);
                   })));
}

const model::ReplyFormat& ChatTemplates::reply_format(const std::string& name) const {
  static const model::ReplyFormat kNone;  // immutable: no template, nothing to read
  auto it = formats_.find(name);
  return it != formats_.end() ? it->second : kNone;
}

std::vector<std::string> ChatTemplates::names() const {
  std::vector<std::string> names;
  for (const auto& [name, parsed] : templates_) names.push_back(name);  // "" sorts first
  return names;
}

}  // namespace textgen::server
