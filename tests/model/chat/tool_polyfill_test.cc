// Templates that do not render tools or calls the usual way: what is detected from the source,
// the calls written in each format, and a Phi-4-mini-shaped template (tools as text in a
// system message, no calls rendered) seeing its tools and, on the next turn, the calls it made,
// which parse back to the same calls. The real Phi-4-mini template runs in e2e_tool_calls.
#include "model/chat/tool_polyfill.h"

#include <gtest/gtest.h>

#include <string>

#include "model/chat/chat_output_parser.h"
#include "model/chat/chat_template.h"
#include "model/chat/json_value.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

using Json = nlohmann::json;

// The shape of Phi-4-mini's template: a system message's `tools` text between <|tool|> tags,
// every message as <|role|>content<|end|>; it never reads tool_calls.
constexpr char kToolsInSystemTemplate[] =
    "{% for message in messages %}"
    "{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + "
    "'<|/tool|>' + '<|end|>' }}"
    "{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}";

constexpr char kTools[] =
    R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather",)"
    R"( "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])";
// OpenAI's shape: arguments as a JSON string.
constexpr char kCalls[] =
    R"([{"id": "abcDEF123", "type": "function", "function": {"name": "get_weather",)"
    R"( "arguments": "{\"city\":\"Paris\"}"}}])";

jinja::Value Parse(const char* json) { return *ParseJsonValue(json, /*tainted=*/true, "test"); }

// The calls alone, as they follow an empty content.
absl::StatusOr<jinja::TaintedString> Calls(const jinja::Value& calls, ToolCallFormat format) {
  return ContentWithCalls("", calls, format);
}

// The bytes of `prompt` the renderer marked untrusted.
std::string Untrusted(const ChatPrompt& prompt) {
  std::string out;
  for (const TextRange& r : prompt.untrusted) {
    out += prompt.text.substr(r.begin, r.end - r.begin) + "|";
  }
  return out;
}

TEST(TemplateToolSupportTest, IsReadFromTheSource) {
  const TemplateToolSupport phi = DetectTemplateToolSupport(kToolsInSystemTemplate);
  EXPECT_TRUE(phi.tools_in_system_message);
  EXPECT_FALSE(phi.reads_tool_calls);
  // The usual way: the tools variable and the calls.
  const TemplateToolSupport usual = DetectTemplateToolSupport(
      "{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}{{ m.tool_calls }}"
      "{% endfor %}");
  EXPECT_FALSE(usual.tools_in_system_message);
  EXPECT_TRUE(usual.reads_tool_calls);
  // Both (Kimi's per-message tools besides the variable): the variable is enough.
  EXPECT_FALSE(DetectTemplateToolSupport("{{ message.tools }}{% for t in tools %}{% endfor %}")
                   .tools_in_system_message);
  EXPECT_FALSE(DetectTemplateToolSupport("{{ messages }}").tools_in_system_message);
}

TEST(ContentWithCallsTest, EachFormatWritesItsOwnMarkup) {
  const jinja::Value one = Parse(kCalls);
  const jinja::Value two =
      Parse(R"([{"id": "a1", "function": {"name": "f", "arguments": {"x": 1}}},)"
            R"( {"id": "b2", "function": {"name": "g", "arguments": "not json"}}])");
  EXPECT_EQ(
      Calls(one, ToolCallFormat::kPhi4Mini)->bytes,
      R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>)");
  EXPECT_EQ(
      Calls(one, ToolCallFormat::kMistral)->bytes,
      R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcDEF123"}])");
  EXPECT_EQ(Calls(one, ToolCallFormat::kLlama3Json)->bytes,
            R"({"name": "get_weather", "parameters": {"city": "Paris"}})");
  EXPECT_EQ(Calls(one, ToolCallFormat::kGenericJson)->bytes,
            R"({"name": "get_weather", "arguments": {"city": "Paris"}})");
  // Arguments that are not JSON stay the string they were.
  EXPECT_EQ(Calls(two, ToolCallFormat::kHermes)->bytes,
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"g\", \"arguments\": \"not json\"}\n</tool_call>");
  EXPECT_EQ(Calls(two, ToolCallFormat::kGenericJson)->bytes,
            R"([{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": "not json"}])");
  // The tags are trusted, the calls are not.
  const jinja::TaintedString phi = *Calls(one, ToolCallFormat::kPhi4Mini);
  ASSERT_EQ(phi.taint.size(), 1u);
  EXPECT_EQ(phi.bytes.substr(phi.taint[0].begin, phi.taint[0].end - phi.taint[0].begin),
            R"({"name": "get_weather", "arguments": {"city": "Paris"}})");
  EXPECT_EQ(Calls(Parse("[]"), ToolCallFormat::kPhi4Mini)->bytes, "");
  // After a content: the content is request text too, the tag is not.
  const jinja::TaintedString after = *ContentWithCalls("Sure.", one, ToolCallFormat::kPhi4Mini);
  EXPECT_EQ(after.bytes.substr(0, 19), "Sure.<|tool_call|>[");
  ASSERT_EQ(after.taint.size(), 2u);
  EXPECT_EQ(after.taint[0].begin, 0u);
  EXPECT_EQ(after.taint[0].end, 5u);
  EXPECT_EQ(after.taint[1].begin, 19u);
  EXPECT_FALSE(Calls(Parse(R"([{"function": {}}])"), ToolCallFormat::kHermes).ok());
  EXPECT_FALSE(Calls(Parse("[1]"), ToolCallFormat::kHermes).ok());
}

TEST(ToolsAsSystemTextTest, ListsTheFunctionObjects) {
  EXPECT_EQ(*ToolsAsSystemText(Parse(kTools)),
            R"([{"name": "get_weather", "description": "Weather", "parameters": {"type": )"
            R"("object", "properties": {"city": {"type": "string"}}}}])");
  EXPECT_FALSE(ToolsAsSystemText(Parse("{}")).ok());
}

class ToolsInSystemTemplateTest : public ::testing::Test {
 protected:
  ChatTemplate template_ = *ChatTemplate::Create(kToolsInSystemTemplate, "<s>", "<|end|>");
};

TEST_F(ToolsInSystemTemplateTest, ToolsGoIntoTheSystemMessageTheTemplateReads) {
  ChatInput input;
  input.messages = {{"user", "Weather?", "", "", "", ""}};
  input.tools = Parse(kTools);
  // Unset: rendered as written, so the template never shows the tools.
  EXPECT_EQ(template_.Render(input)->text, "<|user|>Weather?<|end|><|assistant|>");
  input.tool_call_format = ToolCallFormat::kPhi4Mini;
  const ChatPrompt added = *template_.Render(input);
  const std::string tools = *ToolsAsSystemText(Parse(kTools));
  EXPECT_EQ(added.text, std::string("<|system|>") + kToolsSystemPrompt + "<|tool|>" + tools +
                            "<|/tool|><|end|><|user|>Weather?<|end|><|assistant|>");
  EXPECT_EQ(Untrusted(added), tools + "|user|Weather?|") << "the tags stay trusted";
  // A system message of the request's own gets them.
  input.messages.insert(input.messages.begin(), {"system", "Be brief.", "", "", "", ""});
  EXPECT_EQ(template_.Render(input)->text, "<|system|>Be brief.<|tool|>" + tools +
                                               "<|/tool|><|end|><|user|>Weather?<|end|>"
                                               "<|assistant|>");
  // No tools offered: nothing added.
  input.tools.reset();
  EXPECT_EQ(template_.Render(input)->text,
            "<|system|>Be brief.<|end|><|user|>Weather?<|end|><|assistant|>");
}

TEST_F(ToolsInSystemTemplateTest, EarlierCallsAreRenderedAsTheModelWroteThemAndParseBack) {
  ChatInput prompt_only;
  prompt_only.messages = {{"user", "Weather?", "", "", "", ""}};
  prompt_only.tool_call_format = ToolCallFormat::kPhi4Mini;
  ChatInput with_reply = prompt_only;
  with_reply.add_generation_prompt = false;
  with_reply.messages.push_back({"assistant", "Let me look.", "", "", "", kCalls});
  const ChatPrompt prefix = *template_.Render(prompt_only);
  const ChatPrompt full = *template_.Render(with_reply);
  ASSERT_TRUE(full.text.starts_with(prefix.text)) << full.text;
  std::string reply = full.text.substr(prefix.text.size());
  EXPECT_EQ(reply, R"(Let me look.<|tool_call|>[{"name": "get_weather", "arguments": )"
                   R"({"city": "Paris"}}]<|/tool_call|><|end|>)");
  EXPECT_EQ(Untrusted(full),
            R"(user|Weather?|assistant|Let me look.|{"name": "get_weather", "arguments": )"
            R"({"city": "Paris"}}|)");
  reply.resize(reply.size() - std::string("<|end|>").size());
  ChatOutputOptions options;
  options.format = ToolCallFormat::kPhi4Mini;
  options.parse_tool_calls = true;
  options.tool_names = {"get_weather"};
  ChatOutputParser parser(options);
  parser.Feed(reply);
  parser.Finish();
  EXPECT_EQ(parser.content(), "Let me look.");
  ASSERT_EQ(parser.tool_calls().size(), 1u);
  EXPECT_EQ(parser.tool_calls()[0].name, "get_weather");
  EXPECT_EQ(Json::parse(parser.tool_calls()[0].arguments), Json::parse(R"({"city": "Paris"})"));
  // Unset: the template drops the calls, as written.
  with_reply.tool_call_format.reset();
  EXPECT_EQ(template_.Render(with_reply)->text,
            "<|user|>Weather?<|end|><|assistant|>Let me look.<|end|>");
}

}  // namespace
}  // namespace textgen::model
