#include "server/core/chat_validation.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/interpreter.h"
#include "model/tokenizer/utf8.h"
#include "server/core/harmony_framing.h"
#include "server/core/tool_plan.h"
#include "server/core/validation.h"

namespace textgen::server {
namespace {

using absl::InvalidArgumentError;
using absl::StrCat;

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

// Bytes a rendered prompt may reach: far more than any context holds, small enough that a
// template cannot make the server build something huge.
constexpr size_t kMaxRenderedPromptBytes = 8 << 20;

absl::Status CheckText(const std::string& text, absl::string_view field) {
  return WithField(model::CheckUtf8(text, field), field);
}

// The size limits before any parsing, compiling or rendering: the messages' count, and the
// bytes of everything the template can put into the prompt (`tools_bytes`: the tools' size as
// text, sent or as the front end parsed them).
absl::Status CheckChatSize(const v1::ChatRequest& request, size_t max_prompt_bytes,
                           size_t tools_bytes) {
  if (request.messages().empty()) {
    return InvalidField("messages", "is empty; send at least one message");
  }
  if (request.messages_size() > kMaxChatMessages) {
    return InvalidField("messages", StrCat("has ", request.messages_size(), " entries; at most ",
                                           kMaxChatMessages, " are allowed"));
  }
  size_t bytes = tools_bytes + request.template_variables_json().size();
  for (const v1::ChatMessage& m : request.messages()) {
    bytes += m.role().size() + m.content().size() + m.reasoning_content().size() + m.name().size() +
             m.tool_call_id().size() + m.tool_calls_json().size();
  }
  if (bytes > max_prompt_bytes) {
    return WithField(InvalidArgumentError(StrCat("messages, tools and template variables hold ",
                                                 bytes, " bytes; at most ", max_prompt_bytes,
                                                 " are accepted (server flag --max-prompt-bytes)")),
                     "messages");
  }
  return absl::OkStatus();
}

// `tools`: what the tool plan offers the template (unset: none); `format`: how the model
// writes calls (a template that does not render tools or calls gets them where it looks).
absl::StatusOr<model::ChatInput> ToChatInput(const v1::ChatRequest& request,
                                             std::optional<model::jinja::Value> tools,
                                             model::ToolCallFormat format) {
  model::ChatInput input;
  input.add_generation_prompt =
      request.has_add_generation_prompt() ? request.add_generation_prompt() : true;
  input.tools = std::move(tools);
  input.tool_call_format = format;
  input.variables_json = request.template_variables_json();
  for (int i = 0; i < request.messages_size(); ++i) {
    const v1::ChatMessage& m = request.messages(i);
    const std::string field = StrCat("messages[", i, "]");
    if (m.role().empty()) return InvalidField(StrCat(field, ".role"), "is empty");
    if (m.role().size() > static_cast<size_t>(kMaxChatRoleBytes)) {
      return InvalidField(StrCat(field, ".role"), StrCat("is ", m.role().size(), " bytes; at most ",
                                                         kMaxChatRoleBytes, " are allowed"));
    }
    for (const auto& [text, name] :
         {std::pair{&m.role(), "role"}, std::pair{&m.content(), "content"},
          std::pair{&m.reasoning_content(), "reasoning_content"}, std::pair{&m.name(), "name"},
          std::pair{&m.tool_call_id(), "tool_call_id"},
          std::pair{&m.tool_calls_json(), "tool_calls_json"}}) {
      TEXTGEN_RETURN_IF_ERROR(CheckText(*text, StrCat(field, ".", name)));
    }
    input.messages.push_back({m.role(), m.content(), m.reasoning_content(), m.name(),
                              m.tool_call_id(), m.tool_calls_json()});
  }
  return input;
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

absl::StatusOr<ValidatedRequest> ValidateChatRequest(const v1::ChatRequest& request,
                                                     const ChatTemplates& templates,
                                                     const model::Tokenizer& tokenizer,
                                                     const ValidationOptions& options,
                                                     const RequestContext& context,
                                                     const ParsedTools* parsed_tools) {
  TEXTGEN_RETURN_IF_ERROR(CheckGenerates(options));
  // The template first: without one nothing else matters. Its name goes into messages, so it
  // is checked like an identifier before it is looked up.
  const std::string& name = request.template_name();
  if (name.size() > static_cast<size_t>(kMaxTemplateNameBytes)) {
    return InvalidField("template_name", StrCat("is ", name.size(), " bytes; at most ",
                                                kMaxTemplateNameBytes, " are allowed"));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x21 || c > 0x7E) {
      return InvalidField("template_name",
                          StrCat("has a byte outside printable ASCII at offset ", i));
    }
  }
  absl::StatusOr<const model::ChatTemplate*> chat_template =
      templates.Find(request.template_name());
  if (!chat_template.ok()) return chat_template.status();
  const model::ReplyFormat& format = templates.reply_format(request.template_name());
  std::optional<model::JsonFraming> json_framing;
  if (format.tool_calls == model::ToolCallFormat::kHarmony) json_framing = HarmonyFinalFraming();
  const RequestFields fields{request.request_id(),
                             request.session_id(),
                             request.sampling(),
                             request.stopping(),
                             request.output(),
                             request.constraint(),
                             json_framing ? &*json_framing : nullptr};
  return ValidateRequest(fields, tokenizer, options, context, [&](ValidatedRequest& out) {
    TEXTGEN_RETURN_IF_ERROR(CheckChatSize(
        request, options.max_prompt_bytes,
        parsed_tools != nullptr ? parsed_tools->text_bytes : request.tools_json().size()));
    absl::StatusOr<ToolPlan> tools = PlanTools(request, format, options.constraints, parsed_tools);
    if (!tools.ok()) return tools.status();
    absl::StatusOr<model::ChatInput> input =
        ToChatInput(request, std::move(tools->template_tools), format.tool_calls);
    if (!input.ok()) return input.status();
    model::jinja::RenderOptions render;
    render.limits.max_output_bytes = kMaxRenderedPromptBytes;
    absl::StatusOr<model::ChatPrompt> prompt = (*chat_template)->Render(*input, render);
    if (!prompt.ok()) {
      if (prompt.status().GetPayload(model::jinja::kRaisedByTemplatePayload).has_value()) {
        return WithField(InvalidArgumentError(StrCat("the chat template refused the conversation: ",
                                                     prompt.status().message())),
                         "messages");
      }
      return WithField(absl::Status(prompt.status().code(),
                                    StrCat("chat template: ", prompt.status().message())),
                       "messages");
    }
    out.prompt_tokens =
        tokenizer.EncodeWithSpecialTokens(prompt->text, /*add_bos=*/false, prompt->untrusted);
    if (out.prompt_tokens.empty()) {
      return WithField(InvalidArgumentError("the chat template rendered an empty prompt"),
                       "messages");
    }
    FitToPrompt(*tools, prompt->text);
    if (tools->constraint) {
      TEXTGEN_RETURN_IF_ERROR(
          CompileConstraint(*tools->constraint, "tool_choice", options, out.constraint));
      out.constraint.trigger = tools->constraint_trigger;
      // A tag the vocabulary holds as one control token is sampled as that token, which has
      // no text to watch for: its id arms the constraint too.
      if (!out.constraint.trigger.empty()) {
        const std::vector<int> ids =
            tokenizer.EncodeWithSpecialTokens(out.constraint.trigger, /*add_bos=*/false, {});
        if (ids.size() == 1 && tokenizer.IsControl(ids[0])) out.constraint.trigger_token = ids[0];
      }
    }
    if (tools->reply.id_seed == 0) tools->reply.id_seed = out.sampling.seed;
    out.reply = std::move(tools->reply);
    out.prompt_text = std::move(prompt->text);
    return absl::OkStatus();
  });
}

}  // namespace textgen::server
