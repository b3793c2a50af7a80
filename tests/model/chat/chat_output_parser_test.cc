// The reply parser on the formats as models write them: literal replies (streamed whole and
// split at every byte), malformed ones, and replies rendered by the models' own templates
// from llama.cpp's models/templates (an assistant message with tool_calls, rendered and parsed
// back to the same calls). The template cases need TEXTGEN_LLAMACPP_MODELS_DIR (the ctest
// fixture fetches llama.cpp's source).

#include "model/chat/chat_output_parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/chat/chat_template.h"
#include "model/chat/json_value.h"
#include "model/chat/python_call_reader.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

using Json = nlohmann::json;

struct Parsed {
  std::string content;
  std::string reasoning;
  std::vector<ParsedToolCall> calls;  // from the deltas, reassembled
  std::vector<ParsedToolCall> final_calls;
  int malformed = 0;
};

ChatOutputOptions Options(ToolCallFormat format,
                          std::vector<std::string> tools = {"get_weather", "add"}) {
  ChatOutputOptions o;
  o.format = format;
  o.parse_tool_calls = !tools.empty();
  o.tool_names = std::move(tools);
  o.id_seed = 7;
  return o;
}

// Feeds `text` in pieces cut at `cuts` (offsets), reassembling the deltas as a client would.
Parsed Feed(const ChatOutputOptions& options, const std::string& text,
            const std::vector<size_t>& cuts = {}) {
  ChatOutputParser parser(options);
  Parsed out;
  const auto take = [&](const ChatOutputDelta& d) {
    out.content += d.content;
    out.reasoning += d.reasoning;
    for (const ToolCallDelta& call : d.tool_calls) {
      if (call.index == static_cast<int>(out.calls.size())) {
        EXPECT_FALSE(call.id.empty()) << "a call's first delta carries its id";
        EXPECT_FALSE(call.name.empty()) << "a call's first delta carries its name";
        out.calls.push_back({call.id, call.name, ""});
      }
      ASSERT_LT(call.index, static_cast<int>(out.calls.size()));
      if (call.index != static_cast<int>(out.calls.size()) - 1 || !call.id.empty()) {
        EXPECT_EQ(call.index, static_cast<int>(out.calls.size()) - 1);
      }
      out.calls[call.index].arguments += call.arguments;
    }
  };
  size_t at = 0;
  for (size_t cut : cuts) {
    take(parser.Feed(std::string_view(text).substr(at, cut - at)));
    at = cut;
  }
  take(parser.Feed(std::string_view(text).substr(at)));
  take(parser.Finish());
  out.final_calls = parser.tool_calls();
  out.malformed = parser.malformed_calls();
  EXPECT_EQ(out.content, parser.content());
  EXPECT_EQ(out.reasoning, parser.reasoning());
  return out;
}

// Parses `text` whole, then split in two at every byte and in single bytes: all the same.
Parsed RunEverySplit(const ChatOutputOptions& options, const std::string& text) {
  const Parsed whole = Feed(options, text);
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  for (const std::vector<size_t>& cuts : {bytes}) {
    const Parsed split = Feed(options, text, cuts);
    EXPECT_EQ(split.content, whole.content) << "one byte at a time";
    EXPECT_EQ(split.reasoning, whole.reasoning);
    EXPECT_EQ(split.calls.size(), whole.calls.size());
  }
  for (size_t i = 1; i < text.size(); ++i) {
    const Parsed split = Feed(options, text, {i});
    EXPECT_EQ(split.content, whole.content) << "split at " << i;
    EXPECT_EQ(split.reasoning, whole.reasoning) << "split at " << i;
    EXPECT_EQ(split.calls.size(), whole.calls.size()) << "split at " << i;
    for (size_t c = 0; c < split.calls.size() && c < whole.calls.size(); ++c) {
      EXPECT_EQ(split.calls[c].name, whole.calls[c].name);
      EXPECT_EQ(split.calls[c].arguments, whole.calls[c].arguments) << "split at " << i;
    }
  }
  // The streamed calls equal the parser's own list.
  EXPECT_EQ(whole.calls.size(), whole.final_calls.size());
  for (size_t c = 0; c < whole.calls.size() && c < whole.final_calls.size(); ++c) {
    EXPECT_EQ(whole.calls[c].name, whole.final_calls[c].name);
    EXPECT_EQ(whole.calls[c].id, whole.final_calls[c].id);
    EXPECT_EQ(whole.calls[c].arguments, whole.final_calls[c].arguments);
  }
  return whole;
}

TEST(ChatOutputParserTest, HermesCallsAndTheTextAroundThem) {
  const Parsed p = RunEverySplit(
      Options(ToolCallFormat::kHermes),
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris \\\"15e\\\"\", \"days\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", "
      "\"arguments\": {\"a\": 1, \"b\": -2.5e3}}\n</tool_call>");
  EXPECT_EQ(p.content, "Let me check.\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(p.calls[0].arguments),
            Json::parse(R"({"city": "Paris \"15e\"", "days": [1, 2]})"));
  EXPECT_EQ(p.calls[1].name, "add");
  EXPECT_EQ(Json::parse(p.calls[1].arguments), Json::parse(R"({"a": 1, "b": -2500})"));
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
  EXPECT_TRUE(p.calls[0].id.starts_with("call_"));
  EXPECT_EQ(p.calls[0].id.size(), 29u);
  EXPECT_EQ(p.malformed, 0);
}

TEST(ChatOutputParserTest, ArgumentsStreamAsTheyArriveOnceTheNameIsKnown) {
  ChatOutputParser parser(Options(ToolCallFormat::kHermes));
  EXPECT_TRUE(parser.Feed("<tool_call>\n{\"name\": \"get_wea").empty());
  ChatOutputDelta d = parser.Feed("ther\", \"arguments\": {\"ci");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "get_weather");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"ci");
  d = parser.Feed("ty\": \"Oslo\"}}\n</tool_call>");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].name.empty());
  EXPECT_EQ(d.tool_calls[0].arguments, "ty\": \"Oslo\"}");
  EXPECT_TRUE(parser.Finish().empty());
}

TEST(ChatOutputParserTest, ReasoningIsSeparatedFromContentAndCalls) {
  ChatOutputOptions o = Options(ToolCallFormat::kHermes);
  o.reasoning = ReasoningTags{"<think>", "</think>"};
  Parsed p = RunEverySplit(o,
                           "<think>\nThe user wants weather. <tool_call> is how.\n</think>\n\n"
                           "Checking.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                           "{\"city\": \"Rome\"}}\n</tool_call>");
  EXPECT_EQ(p.reasoning, "\nThe user wants weather. <tool_call> is how.\n");
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.calls.size(), 1u);
  // A prompt that ended inside the tags (DeepSeek-R1 distills): reasoning from the start.
  o.starts_in_reasoning = true;
  p = RunEverySplit(o, "Hmm, 2+2.</think>\n\nFour.");
  EXPECT_EQ(p.reasoning, "Hmm, 2+2.");
  EXPECT_EQ(p.content, "Four.");
  // Without tags in the reply, everything is content.
  o.starts_in_reasoning = false;
  p = RunEverySplit(o, "Four. <think> is a tag.");
  EXPECT_EQ(p.content, "Four. <think> is a tag.");
  EXPECT_EQ(p.reasoning, "");
}

TEST(ChatOutputParserTest, BareJsonIsACallOnlyWhenItNamesADeclaredTool) {
  Parsed p = RunEverySplit(Options(ToolCallFormat::kLlama3Json),
                           "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\"}}");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(Json::parse(p.calls[0].arguments), Json::parse(R"({"city": "Lima"})"));
  // JSON that is not a call stays content, whole.
  const std::string answer = "{\"answer\": 42, \"name\": \"x\"} and more";
  p = RunEverySplit(Options(ToolCallFormat::kLlama3Json), answer);
  EXPECT_EQ(p.content, answer);
  EXPECT_TRUE(p.calls.empty());
  p = RunEverySplit(Options(ToolCallFormat::kGenericJson), "{\"name\": \"unknown\"}");
  EXPECT_EQ(p.content, "{\"name\": \"unknown\"}");
  // After reasoning and the whitespace it leaves: the same (found by the reply fuzzer: the
  // reply was read from a stale view of the text).
  ChatOutputOptions thinking = Options(ToolCallFormat::kLlama3Json);
  thinking.reasoning = ReasoningTags{"<think>", "</think>"};
  p = RunEverySplit(thinking, "<think>hm</think>\n\t\t{\"name\"\r\t[ broken");
  EXPECT_EQ(p.reasoning, "hm");
  EXPECT_EQ(p.content, "{\"name\"\r\t[ broken");
  p = RunEverySplit(thinking, "<think>hm</think>\n\n[{\"name\": \"add\", \"arguments\": {}}]");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  // Without tools, nothing is parsed.
  p = RunEverySplit(Options(ToolCallFormat::kLlama3Json, {}),
                    "{\"name\": \"get_weather\", \"parameters\": {}}");
  EXPECT_EQ(p.content, "{\"name\": \"get_weather\", \"parameters\": {}}");
}

TEST(ChatOutputParserTest, ArraysOfCallsWithOrWithoutTheirTags) {
  const std::string calls =
      "[{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}, \"id\": \"abcDEF123\"}, "
      "{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Kyiv\\\"}\"}]";
  for (const std::string& reply : {calls, "[TOOL_CALLS]" + calls}) {
    const Parsed p = RunEverySplit(Options(ToolCallFormat::kMistral), reply);
    EXPECT_EQ(p.content, "");
    ASSERT_EQ(p.calls.size(), 2u) << reply;
    EXPECT_EQ(Json::parse(p.calls[0].arguments), Json::parse(R"({"a": 1, "b": 2})"));
    // Arguments written as a JSON string arrive decoded.
    EXPECT_EQ(Json::parse(p.calls[1].arguments), Json::parse(R"({"city": "Kyiv"})"));
    EXPECT_EQ(p.calls[0].id.size(), 9u);  // Mistral's templates check ids of 9 characters
  }
  const Parsed phi =
      RunEverySplit(Options(ToolCallFormat::kPhi4Mini), "<|tool_call|>" + calls + "<|/tool_call|>");
  EXPECT_EQ(phi.content, "");
  EXPECT_EQ(phi.calls.size(), 2u);
}

TEST(ChatOutputParserTest, MalformedRepliesHaveDocumentedResults) {
  // Cut off inside a call (the length limit): the call keeps what arrived.
  Parsed p = Feed(Options(ToolCallFormat::kHermes),
                  "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1");
  ASSERT_EQ(p.final_calls.size(), 1u);
  EXPECT_EQ(p.final_calls[0].arguments, "{\"a\": 1");
  // A tagged call to an undeclared tool: dropped, counted, never content.
  p = RunEverySplit(Options(ToolCallFormat::kHermes),
                    "A<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>B");
  EXPECT_EQ(p.content, "AB");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.malformed, 1);
  // Broken JSON inside the tags: dropped, counted; the text after is content.
  p = RunEverySplit(Options(ToolCallFormat::kHermes), "<tool_call>\n{\"name\" 1}</tool_call>ok");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.malformed, 1);
  EXPECT_EQ(p.content, "ok");
  // A call whose name went out stays a call as streamed, even when its JSON then breaks; the
  // rest of it is not content.
  p = RunEverySplit(Options(ToolCallFormat::kHermes),
                    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1} \"x\": [}\n"
                    "</tool_call>after");
  ASSERT_EQ(p.final_calls.size(), 1u);
  EXPECT_EQ(p.final_calls[0].arguments, "{\"a\": 1}");
  EXPECT_EQ(p.malformed, 1);
  EXPECT_EQ(p.content, "after");
  // A second "name" in one call is broken JSON too (which call would it be?).
  p = RunEverySplit(Options(ToolCallFormat::kMistral),
                    "[{\"name\": \"add\", \"name\": \"rm\", \"arguments\": {}}] tail");
  ASSERT_EQ(p.final_calls.size(), 1u);
  EXPECT_EQ(p.final_calls[0].name, "add");
  EXPECT_EQ(p.content, "");
  // Bare JSON cut off before it names a tool: content.
  p = Feed(Options(ToolCallFormat::kLlama3Json), "{\"na");
  EXPECT_EQ(p.content, "{\"na");
  EXPECT_TRUE(p.final_calls.empty());
  // A call with no arguments takes none.
  p = RunEverySplit(Options(ToolCallFormat::kHermes),
                    "<tool_call>\n{\"name\": \"add\"}\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
}

// gpt-oss's harmony messages: the analysis channel is reasoning, final (and commentary without a
// recipient: a preamble) is content, a message to functions.NAME is a call; <|end|> closes a
// message and is never text; <|return|> and <|call|> end the reply as tokens (no text).
TEST(ChatOutputParserTest, HarmonyChannelsAndCalls) {
  const ChatOutputOptions options = Options(ToolCallFormat::kHarmony);
  Parsed p = RunEverySplit(options,
                           "<|channel|>analysis<|message|>User wants weather.<|end|>"
                           "<|start|>assistant<|channel|>final<|message|>It is sunny in Paris.");
  EXPECT_EQ(p.reasoning, "User wants weather.");
  EXPECT_EQ(p.content, "It is sunny in Paris.");
  EXPECT_TRUE(p.calls.empty());
  // A preamble, then a call with <|constrain|>, the recipient after the channel.
  p = RunEverySplit(options,
                    "<|channel|>analysis<|message|>Need a tool.<|end|>"
                    "<|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>"
                    "<|start|>assistant<|channel|>commentary to=functions.get_weather "
                    "<|constrain|>json<|message|>{\"city\":\"Paris\"}");
  EXPECT_EQ(p.reasoning, "Need a tool.");
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_TRUE(p.calls[0].id.starts_with("call_"));
  // The recipient before the channel, right after the prompt's "<|start|>assistant".
  p = RunEverySplit(options, " to=functions.add<|channel|>commentary json<|message|>{\"a\": 1}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "add");
  EXPECT_EQ(p.calls[0].arguments, R"({"a": 1})");
  EXPECT_EQ(p.content, "");
  // A message to a tool that was not declared is dropped and counted.
  p = RunEverySplit(options,
                    "<|channel|>commentary to=functions.rm_rf <|constrain|>json"
                    "<|message|>{}<|end|><|start|>assistant<|channel|>final<|message|>ok");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.malformed, 1);
  EXPECT_EQ(p.content, "ok");
  // Without tools offered, a call is not read either.
  p = RunEverySplit(Options(ToolCallFormat::kHarmony, {}),
                    "<|channel|>commentary to=functions.add<|message|>{}");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "");
  // Text outside the format is content (to the end, tags included); a header cut off by the end
  // of the reply is nothing.
  p = RunEverySplit(options, "Hello <|end|> there");
  EXPECT_EQ(p.content, "Hello <|end|> there");
  p = RunEverySplit(options, "<x<|channel|>final<|message|>hi");
  EXPECT_EQ(p.content, "<x<|channel|>final<|message|>hi");
  p = RunEverySplit(options, "<|channel|>final<|message|>a<|end|>b<|start|>assistant<|message|>c");
  EXPECT_EQ(p.content, "ab<|start|>assistant<|message|>c");
  p = RunEverySplit(options, "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|chan");
  EXPECT_EQ(p.reasoning, "hm");
  EXPECT_EQ(p.content, "");
  // A parser moved in the middle of a reply carries on, its call ids from the same seed.
  ChatOutputParser first(options);
  first.Feed("<|channel|>commentary to=functions.add<|message|>{\"a\"");
  ChatOutputParser moved = std::move(first);
  moved.Feed(": 2}");
  moved.Finish();
  ASSERT_EQ(moved.tool_calls().size(), 1u);
  EXPECT_EQ(moved.tool_calls()[0].arguments, R"({"a": 2})");
  const Parsed same = Feed(options, "<|channel|>commentary to=functions.add<|message|>{}");
  EXPECT_EQ(moved.tool_calls()[0].id, same.final_calls.at(0).id);
}

ChatOutputOptions XmlOptions() {
  ChatOutputOptions o = Options(ToolCallFormat::kQwen3Coder, {"get_weather", "write_file"});
  o.text_parameters = {{"get_weather", {"city"}}, {"write_file", {"path", "text"}}};
  return o;
}

TEST(ChatOutputParserTest, Qwen3CoderCallsWithTextAndJsonValues) {
  // Text values are taken as written ('<', quotes, "</param" and newlines inside included);
  // other values are JSON when they parse, else strings.
  const Parsed p = RunEverySplit(
      XmlOptions(),
      "I'll look.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSaint-\"Ma\"lo "
      "<b>\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=hours>\n[1, 2]\n"
      "</parameter>\n<parameter=note>\nnot json\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a.c\n</parameter>\n"
      "<parameter=text>\n#include <stdio.h>\n</param x\n\n</parameter>\n</function>\n"
      "</tool_call>");
  EXPECT_EQ(p.content, "I'll look.\n\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(p.calls[0].arguments),
            Json::parse(R"({"city": "Saint-\"Ma\"lo <b>", "days": 3, "hours": [1, 2],
                            "note": "not json"})"));
  EXPECT_EQ(p.calls[1].name, "write_file");
  EXPECT_EQ(Json::parse(p.calls[1].arguments),
            Json::parse(R"({"path": "/tmp/a.c", "text": "#include <stdio.h>\n</param x\n"})"));
  EXPECT_EQ(p.malformed, 0);
  // A text parameter holding digits stays text; an undeclared one is JSON when it parses.
  const Parsed typed = RunEverySplit(XmlOptions(),
                                     "<tool_call>\n<function=get_weather>\n<parameter=city>\n"
                                     "1984\n</parameter>\n<parameter=x>\ntrue\n</parameter>\n"
                                     "</function>\n</tool_call>");
  ASSERT_EQ(typed.calls.size(), 1u);
  EXPECT_EQ(Json::parse(typed.calls[0].arguments), Json::parse(R"({"city": "1984", "x": true})"));
  // No parameters: {}.
  const Parsed none =
      RunEverySplit(XmlOptions(), "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>");
  ASSERT_EQ(none.calls.size(), 1u);
  EXPECT_EQ(none.calls[0].arguments, "{}");
}

TEST(ChatOutputParserTest, Qwen3CoderTextValuesStreamAsTheyArrive) {
  ChatOutputParser parser(XmlOptions());
  EXPECT_TRUE(parser.Feed("<tool_call>\n<function=write_fi").empty());
  ChatOutputDelta d = parser.Feed("le>\n<parameter=text>\nline one\nline");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "write_file");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"text\": \"line one\\nline");
  // What may still be the closing tag (or the newline before it) is held back.
  d = parser.Feed(" two\n</param");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, " two");
  d = parser.Feed("eter>\n</function>\n</tool_call>");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, "\"}");
  EXPECT_TRUE(parser.Finish().empty());
  ASSERT_EQ(parser.tool_calls().size(), 1u);
  EXPECT_EQ(Json::parse(parser.tool_calls()[0].arguments)["text"], "line one\nline two");
}

TEST(ChatOutputParserTest, Qwen3CoderReasoningEndsAtItsCloseTagOrACall) {
  ChatOutputOptions o = XmlOptions();
  o.reasoning = ReasoningTags{"<think>", "</think>"};
  o.starts_in_reasoning = true;  // Qwen3.5's prompt ends with "<think>\n"
  const std::string call =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
      "</function>\n</tool_call>";
  Parsed p = RunEverySplit(o, "\nWeather: call it.\n</think>\n\n" + call);
  EXPECT_EQ(p.reasoning, "\nWeather: call it.\n");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  // A call written before the reasoning closed ends it (as llama.cpp reads Qwen3.5).
  p = RunEverySplit(o, "\nWeather: call it.\n" + call);
  EXPECT_EQ(p.reasoning, "\nWeather: call it.\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(Json::parse(p.calls[0].arguments), Json::parse(R"({"city": "Oslo"})"));
  // Without tools offered, a call tag in the reasoning is reasoning.
  o.parse_tool_calls = false;
  p = RunEverySplit(o, "\nHmm " + call + "</think>Done.");
  EXPECT_EQ(p.reasoning, "\nHmm " + call);
  EXPECT_EQ(p.content, "Done.");
}

TEST(ChatOutputParserTest, Qwen3CoderMalformedCalls) {
  // An undeclared function: dropped to its closing tag, counted.
  Parsed p = RunEverySplit(XmlOptions(),
                           "A<tool_call>\n<function=rm>\n<parameter=path>\n/\n</parameter>\n"
                           "</function>\n</tool_call>B");
  EXPECT_EQ(p.content, "AB");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.malformed, 1);
  // JSON inside the tags (the hermes way) is not this format: dropped, counted.
  p = RunEverySplit(XmlOptions(), "<tool_call>\n{\"name\": \"get_weather\"}\n</tool_call>\nok");
  EXPECT_EQ(p.content, "ok");
  EXPECT_EQ(p.malformed, 1);
  // Cut off inside a value: the call went out, so it stays, counted as malformed.
  p = RunEverySplit(XmlOptions(), "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\": \"Par");
  EXPECT_EQ(p.malformed, 1);
  // A stray tag between parameters breaks the call; the rest to </tool_call> is dropped.
  p = RunEverySplit(XmlOptions(),
                    "<tool_call>\n<function=get_weather>\n<oops>\n</function>\n</tool_call>X");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "X");
  EXPECT_EQ(p.malformed, 1);
}

TEST(ChatOutputParserTest, Lfm2PythonCallsWithOrWithoutTheirTags) {
  // The tags are control tokens (no text) unless printed; either way the list is read.
  for (const std::string& open : {std::string("<|tool_call_start|>"), std::string()}) {
    const std::string close = open.empty() ? "" : "<|tool_call_end|>";
    const Parsed p = RunEverySplit(
        Options(ToolCallFormat::kLfm2),
        open +
            "[get_weather(city='Saint \\'Malo\\'', days=3, opts={'a': [1, True, None], \"b\": "
            "(2.5e1, false)}), add(a=-1, b=2)]" +
            close);
    EXPECT_EQ(p.content, "");
    ASSERT_EQ(p.calls.size(), 2u) << open;
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(Json::parse(p.calls[0].arguments), Json::parse(R"({"city": "Saint 'Malo'", "days": 3,
                              "opts": {"a": [1, true, null], "b": [25.0, false]}})"));
    EXPECT_EQ(Json::parse(p.calls[1].arguments), Json::parse(R"({"a": -1, "b": 2})"));
    EXPECT_EQ(p.malformed, 0);
  }
  // Text before the tag is content; a call without arguments takes {}.
  Parsed p = RunEverySplit(Options(ToolCallFormat::kLfm2),
                           "Checking. <|tool_call_start|>[add()]<|tool_call_end|>");
  EXPECT_EQ(p.content, "Checking. ");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
  // A bracket that opens no declared call is content.
  for (const std::string text : {"[1] First, the weather.", "[Note](x) add(a=1)", "[rm(x=1)] no"}) {
    p = RunEverySplit(Options(ToolCallFormat::kLfm2), text);
    EXPECT_EQ(p.content, text);
    EXPECT_TRUE(p.calls.empty()) << text;
  }
  // A value that is no literal breaks the call (dropped to the closing tag, counted).
  p = RunEverySplit(Options(ToolCallFormat::kLfm2),
                    "<|tool_call_start|>[add(a=os.system('x'))]<|tool_call_end|>ok");
  EXPECT_EQ(p.content, "ok");
  EXPECT_EQ(p.malformed, 1);
  EXPECT_EQ(PythonLiteralToJson("'a\\nb'"), "\"a\\nb\"");
  EXPECT_EQ(PythonLiteralToJson("[1, 'x',]"), "[1, \"x\"]");
  // JSON's escapes too, as the constraint writes JSON strings (surrogate pairs included).
  EXPECT_EQ(Json::parse(*PythonLiteralToJson(R"("\foo\/\ud83d\ude00\u00e9\x41")")),
            "\foo/\U0001F600\u00e9A");
  EXPECT_FALSE(PythonLiteralToJson(R"("\ud83d")").has_value());
  EXPECT_FALSE(PythonLiteralToJson("1.").has_value());
  EXPECT_FALSE(PythonLiteralToJson("'open").has_value());
}

TEST(ChatOutputParserTest, FormatsAreDetectedFromTemplateMarkers) {
  EXPECT_EQ(DetectToolCallFormat("... <tool_call>\\n ..."), ToolCallFormat::kHermes);
  EXPECT_EQ(DetectToolCallFormat("<tool_call>\\n<function=' + name + '>\\n<parameter="),
            ToolCallFormat::kQwen3Coder);
  EXPECT_EQ(DetectToolCallFormat("List of tools: <|tool_list_start|>["), ToolCallFormat::kLfm2);
  EXPECT_EQ(DetectToolCallFormat("\"List of tools: [\""), ToolCallFormat::kLfm2);
  EXPECT_EQ(DetectToolCallFormat("{{ '[TOOL_CALLS][' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(DetectToolCallFormat("<|tool_call|>"), ToolCallFormat::kPhi4Mini);
  EXPECT_EQ(DetectToolCallFormat("<|start_header_id|> ... \"parameters\": "),
            ToolCallFormat::kLlama3Json);
  EXPECT_EQ(DetectToolCallFormat("{{ messages }}"), ToolCallFormat::kGenericJson);
  EXPECT_EQ(DetectToolCallFormat("<|start|>assistant<|channel|>final<|message|>"),
            ToolCallFormat::kHarmony);
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral,
        ToolCallFormat::kPhi4Mini, ToolCallFormat::kHarmony, ToolCallFormat::kQwen3Coder,
        ToolCallFormat::kLfm2, ToolCallFormat::kGenericJson}) {
    EXPECT_EQ(ToolCallFormatFromName(ToolCallFormatName(f)), f);
  }
  EXPECT_FALSE(ToolCallFormatFromName("xml").has_value());
}

// ---- Round trips through the models' own templates ----

std::filesystem::path TemplatesDir() {
  const char* env = std::getenv("TEXTGEN_LLAMACPP_MODELS_DIR");
  return std::filesystem::path(env != nullptr ? env : "") / "templates";
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct TemplateCase {
  std::string file;
  ToolCallFormat format;
  std::string eos;                       // the template's eos_token
  std::vector<std::string> end_markers;  // control tokens ending the turn: no text in a reply
  // Extra variables: Nemotron 3 Nano renders a past turn's thinking as "<think></think>", which
  // its prompt only opens that way with thinking off.
  std::string variables_json = "";
};

class TemplateRoundTripTest : public ::testing::TestWithParam<TemplateCase> {};

TEST_P(TemplateRoundTripTest, RenderedCallsParseBack) {
  const TemplateCase& c = GetParam();
  const std::filesystem::path path = TemplatesDir() / c.file;
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " (set TEXTGEN_LLAMACPP_MODELS_DIR)";
  const std::string source = ReadFile(path);
  EXPECT_EQ(DetectToolCallFormat(source), c.format) << c.file;
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Create(source, "<s>", c.eos);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  const std::string tools =
      R"([{"type":"function","function":{"name":"get_weather","description":"Weather",)"
      R"("parameters":{"type":"object","properties":{"city":{"type":"string"},)"
      R"("days":{"type":"integer"}},"required":["city"]}}}])";
  // Arguments as an object, and as OpenAI sends them back: a JSON string (templates that
  // iterate them as a mapping get the object).
  for (const std::string& calls :
       {std::string(R"([{"id":"abcDEF123","type":"function","function":{"name":"get_weather",)"
                    R"("arguments":{"city":"Paris, \"FR\"","days":3}}}])"),
        std::string(R"([{"id":"abcDEF123","type":"function","function":{"name":"get_weather",)"
                    R"("arguments":"{\"city\":\"Paris, \\\"FR\\\"\",\"days\":3}"}}])")}) {
    ChatInput prompt_only;
    prompt_only.messages = {{"user", "Weather in Paris?", "", "", "", ""}};
    prompt_only.tools = *ParseJsonValue(tools, /*tainted=*/true, "tools");
    prompt_only.variables_json = c.variables_json;
    // As the server renders: templates that show no calls get them written in (LFM2-8B-A1B).
    prompt_only.tool_call_format = c.format;
    ChatInput with_reply = prompt_only;
    with_reply.add_generation_prompt = false;
    with_reply.messages.push_back({"assistant", "", "", "", "", calls});
    absl::StatusOr<ChatPrompt> prefix = tmpl->Render(prompt_only);
    ASSERT_TRUE(prefix.ok()) << prefix.status();
    absl::StatusOr<ChatPrompt> full = tmpl->Render(with_reply);
    ASSERT_TRUE(full.ok()) << full.status();
    ASSERT_TRUE(full->text.starts_with(prefix->text)) << c.file << "\n" << full->text;
    std::string reply = full->text.substr(prefix->text.size());
    const auto trim = [&] {
      while (!reply.empty() && (reply.back() == '\n' || reply.back() == ' ')) reply.pop_back();
    };
    trim();
    for (const std::string& marker : c.end_markers) {
      if (reply.ends_with(marker)) reply.resize(reply.size() - marker.size());
    }
    trim();
    SCOPED_TRACE(c.file + " reply: " + reply);
    ChatOutputOptions options = Options(c.format, {"get_weather"});
    options.reasoning = DetectReasoningTags(source);
    options.text_parameters = {{"get_weather", {"city"}}};
    // The prompt may open the reasoning itself (Qwen3.5's "<think>\n").
    std::string_view prompt_text = prefix->text;
    while (!prompt_text.empty() && (prompt_text.back() == '\n' || prompt_text.back() == ' ')) {
      prompt_text.remove_suffix(1);
    }
    options.starts_in_reasoning =
        options.reasoning && prompt_text.ends_with(options.reasoning->open);
    const Parsed p = RunEverySplit(options, reply);
    EXPECT_EQ(p.content, "");
    ASSERT_EQ(p.calls.size(), 1u);
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(Json::parse(p.calls[0].arguments),
              Json::parse(R"({"city": "Paris, \"FR\"", "days": 3})"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Templates, TemplateRoundTripTest,
    ::testing::Values(
        TemplateCase{"Qwen-Qwen2.5-7B-Instruct.jinja",
                     ToolCallFormat::kHermes,
                     "<|im_end|>",
                     {"<|im_end|>"}},
        TemplateCase{
            "Qwen-Qwen3-0.6B.jinja", ToolCallFormat::kHermes, "<|im_end|>", {"<|im_end|>"}},
        TemplateCase{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
                     ToolCallFormat::kHermes,
                     "<|im_end|>",
                     {"<|im_end|>"}},
        TemplateCase{"meta-llama-Llama-3.1-8B-Instruct.jinja",
                     ToolCallFormat::kLlama3Json,
                     "<|eot_id|>",
                     {"<|eot_id|>", "<|eom_id|>"}},
        TemplateCase{"meta-llama-Llama-3.3-70B-Instruct.jinja",
                     ToolCallFormat::kLlama3Json,
                     "<|eot_id|>",
                     {"<|eot_id|>", "<|eom_id|>"}},
        TemplateCase{"mistralai-Mistral-Nemo-Instruct-2407.jinja",
                     ToolCallFormat::kMistral,
                     "</s>",
                     {"</s>"}},
        TemplateCase{"Qwen3.5-4B.jinja", ToolCallFormat::kQwen3Coder, "<|im_end|>", {"<|im_end|>"}},
        TemplateCase{
            "Qwen3-Coder.jinja", ToolCallFormat::kQwen3Coder, "<|im_end|>", {"<|im_end|>"}},
        TemplateCase{"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
                     ToolCallFormat::kQwen3Coder,
                     "<|im_end|>",
                     {"<|im_end|>"},
                     R"({"enable_thinking": false})"},
        TemplateCase{"LFM2.5-8B-A1B.jinja", ToolCallFormat::kLfm2, "<|im_end|>", {"<|im_end|>"}},
        TemplateCase{"LFM2-8B-A1B.jinja", ToolCallFormat::kLfm2, "<|im_end|>", {"<|im_end|>"}},
        TemplateCase{"openai-gpt-oss-120b.jinja",
                     ToolCallFormat::kHarmony,
                     "<|return|>",
                     {"<|call|>", "<|return|>"}}),
    [](const ::testing::TestParamInfo<TemplateCase>& param) {
      std::string name = param.param.file.substr(0, param.param.file.find(".jinja"));
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace textgen::model
