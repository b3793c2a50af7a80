// What a Chat request's tools and tool_choice become: whether the template sees the tools, the
// constraint that forces a call (checked by running its grammar over calls written the way
// each format writes them), how the reply is read, and the 400s for bad tools, choices and
// tool messages.

#include "server/core/tool_plan.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model/constraint/grammar_matcher.h"
#include "server/core/validation.h"

namespace textgen::server {
namespace {

constexpr char kTools[] =
    R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"],)"
    R"("additionalProperties":false}}},)"
    R"({"type":"function","function":{"name":"add","parameters":{"$defs":{"n":{"type":"integer"}},)"
    R"("type":"object","properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#/$defs/n"}},)"
    R"("required":["a","b"],"additionalProperties":false}}}])";

v1::ChatRequest Request(v1::ToolChoice::Mode mode, const std::string& function = "") {
  v1::ChatRequest r;
  v1::ChatMessage* m = r.add_messages();
  m->set_role("user");
  m->set_content("hi");
  r.set_tools_json(kTools);
  r.mutable_tool_choice()->set_mode(mode);
  r.mutable_tool_choice()->set_function_name(function);
  return r;
}

model::ReplyFormat Format(model::ToolCallFormat f) { return {f, std::nullopt}; }

// Whether the plan's constraint accepts `text` as a whole reply.
bool Accepts(model::ConstraintCompiler& compiler, const ToolPlan& plan, const std::string& text) {
  EXPECT_TRUE(plan.constraint.has_value());
  if (!plan.constraint) return false;
  absl::StatusOr<model::CompiledConstraint> compiled = compiler.Compile(*plan.constraint);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  if (!compiled.ok()) return false;
  model::GrammarMatcher matcher(compiled->grammar);
  return matcher.Accept(text) && matcher.complete();
}

TEST(ToolPlanTest, AutoOffersTheToolsAndReadsCallsWithoutConstraining) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<ToolPlan> plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO),
                                            Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->offer_tools);
  EXPECT_EQ(plan->constraint_trigger, "<tool_call>");  // lazy: see below
  EXPECT_TRUE(plan->reply.parse_tool_calls);
  EXPECT_EQ(plan->reply.tool_names, (std::vector<std::string>{"get_weather", "add"}));
  plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_NONE),
                   Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->offer_tools);
  EXPECT_FALSE(plan->reply.parse_tool_calls);
}

// gpt-oss's harmony: auto offers the tools and reads calls, with no tag-triggered grammar (a call
// is a message header, not a tagged JSON).
TEST(ToolPlanTest, HarmonyAutoReadsCallsWithoutConstraining) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<ToolPlan> plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO),
                                            Format(model::ToolCallFormat::kHarmony), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->offer_tools);
  EXPECT_TRUE(plan->reply.parse_tool_calls);
  EXPECT_EQ(plan->reply.format, model::ToolCallFormat::kHarmony);
  EXPECT_FALSE(plan->constraint.has_value());
  EXPECT_EQ(plan->constraint_trigger, "");
}

// A forced harmony call is a commentary message to the tool, after at most three analysis
// messages; its tags must be the control tokens (spelled as the trie spells them), never text,
// and its arguments the named tool's.
TEST(ToolPlanTest, HarmonyForcedCallIsAMessageToTheTool) {
  model::ConstraintCompiler compiler({});
  const auto tag = [](std::string_view text) { return model::TokenTrie::ControlTokenBytes(text); };
  const auto call = [&](const std::string& name, const std::string& arguments) {
    return tag("<|channel|>") + "commentary to=functions." + name + " " + tag("<|constrain|>") +
           "json" + tag("<|message|>") + arguments;
  };
  const std::string analysis = tag("<|channel|>") + "analysis" + tag("<|message|>") +
                               "Need weather. «Oslo» <|end|> as text" + tag("<|end|>") +
                               tag("<|start|>") + "assistant";
  absl::StatusOr<ToolPlan> required = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED),
                                                Format(model::ToolCallFormat::kHarmony), &compiler);
  ASSERT_TRUE(required.ok()) << required.status();
  EXPECT_EQ(required->constraint_trigger, "");  // from the first token
  EXPECT_TRUE(Accepts(compiler, *required, call("get_weather", R"({"city":"Oslo"})")));
  EXPECT_TRUE(Accepts(compiler, *required, call("add", R"({"a":1,"b":2})")));
  EXPECT_TRUE(Accepts(compiler, *required, analysis + call("add", R"({"a":1,"b":2})")));
  EXPECT_TRUE(Accepts(compiler, *required,
                      analysis + analysis + analysis + call("add", R"({"a":1,"b":2})")));
  EXPECT_FALSE(
      Accepts(compiler, *required,
              analysis + analysis + analysis + analysis + call("add", R"({"a":1,"b":2})")));
  // The other tool's arguments, an undeclared tool, a second call, the tags as text, no call.
  EXPECT_FALSE(Accepts(compiler, *required, call("add", R"({"city":"Oslo"})")));
  EXPECT_FALSE(Accepts(compiler, *required, call("get_time", R"({})")));
  EXPECT_FALSE(Accepts(compiler, *required,
                       call("add", R"({"a":1,"b":2})") + call("add", R"({"a":1,"b":2})")));
  EXPECT_FALSE(Accepts(
      compiler, *required,
      R"(<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a":1,"b":2})"));
  EXPECT_FALSE(Accepts(compiler, *required, analysis));
  EXPECT_FALSE(
      Accepts(compiler, *required, tag("<|channel|>") + "final" + tag("<|message|>") + "hi"));

  absl::StatusOr<ToolPlan> named = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_FUNCTION, "add"),
                                             Format(model::ToolCallFormat::kHarmony), &compiler);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_TRUE(Accepts(compiler, *named, call("add", R"({"a":1,"b":2})")));
  EXPECT_FALSE(Accepts(compiler, *named, call("get_weather", R"({"city":"Oslo"})")));

  // And the plan reads such a reply back as the call (the tags printed as the model's text).
  model::ChatOutputParser parser(required->reply);
  parser.Feed(R"(<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant)"
              R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>)"
              R"({"city":"Oslo"})");
  parser.Finish();
  ASSERT_EQ(parser.tool_calls().size(), 1u);
  EXPECT_EQ(parser.tool_calls()[0].name, "get_weather");
  EXPECT_EQ(parser.tool_calls()[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(parser.reasoning(), "Need weather.");
  EXPECT_EQ(parser.malformed_calls(), 0);
}

TEST(ToolPlanTest, RequiredCallsAreConstrainedInEachFormat) {
  model::ConstraintCompiler compiler({});
  // Hermes: tagged calls, several in a row when parallel calls are on.
  absl::StatusOr<ToolPlan> hermes = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED),
                                              Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(hermes.ok()) << hermes.status();
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const std::string add =
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": -2}}\n</tool_call>";
  EXPECT_TRUE(Accepts(compiler, *hermes, weather));
  EXPECT_TRUE(Accepts(compiler, *hermes, weather + "\n" + add));
  EXPECT_FALSE(Accepts(compiler, *hermes, "Sure! " + weather));
  EXPECT_FALSE(Accepts(compiler, *hermes, ""));
  // Arguments follow each tool's own schema ($refs included).
  EXPECT_FALSE(
      Accepts(compiler, *hermes,
              "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>"));
  EXPECT_FALSE(Accepts(compiler, *hermes,
                       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1.5, \"b\": 2}}"
                       "\n</tool_call>"));
  EXPECT_FALSE(Accepts(compiler, *hermes,
                       "<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>"));
  // Llama 3: one bare object with "parameters".
  absl::StatusOr<ToolPlan> llama = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED),
                                             Format(model::ToolCallFormat::kLlama3Json), &compiler);
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_TRUE(Accepts(compiler, *llama, R"({"name": "add", "parameters": {"a": 2, "b": 3}})"));
  EXPECT_FALSE(Accepts(compiler, *llama, R"({"name": "add", "arguments": {"a": 2, "b": 3}})"));
  // Mistral: an array of calls.
  absl::StatusOr<ToolPlan> mistral = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED),
                                               Format(model::ToolCallFormat::kMistral), &compiler);
  ASSERT_TRUE(mistral.ok()) << mistral.status();
  EXPECT_TRUE(Accepts(compiler, *mistral,
                      R"([{"name": "get_weather", "arguments": {"city": "Rome", "unit": "c"}},)"
                      R"( {"name": "add", "arguments": {"a": 0, "b": 0}}])"));
  EXPECT_FALSE(Accepts(compiler, *mistral, "[]"));
}

TEST(ToolPlanTest, Qwen3CoderCallsAreConstrainedAsXmlParameters) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<ToolPlan> plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED),
                                            Format(model::ToolCallFormat::kQwen3Coder), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The reply parser learns which parameters are text: "city" (a string) and "unit" (an enum
  // of strings); add's integers are JSON.
  EXPECT_EQ(plan->reply.text_parameters.at("get_weather"), (std::set<std::string>{"city", "unit"}));
  EXPECT_TRUE(plan->reply.text_parameters.at("add").empty());
  const std::string weather =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo <\"x\">\n"
      "</param\n</parameter>\n<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>";
  const std::string add =
      "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n-2\n"
      "</parameter>\n</function>\n</tool_call>";
  EXPECT_TRUE(Accepts(compiler, *plan, weather));
  EXPECT_TRUE(Accepts(compiler, *plan, weather + "\n" + add));
  // Optional parameters may be left out; required ones may not; values follow the schemas.
  EXPECT_TRUE(Accepts(compiler, *plan,
                      "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n"
                      "</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(compiler, *plan,
                       "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n"
                       "</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(compiler, *plan,
                       "<tool_call>\n<function=add>\n<parameter=a>\n1.5\n</parameter>\n"
                       "<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(compiler, *plan,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n"
                       "</parameter>\n<parameter=unit>\nk\n</parameter>\n</function>\n"
                       "</tool_call>"));
  // A text value cannot hold its closing tag; an undeclared tool or parameter is refused.
  EXPECT_FALSE(Accepts(compiler, *plan,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\na</parameter>b"
                       "\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(compiler, *plan, "<tool_call>\n<function=rm>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(compiler, *plan,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n"
                       "</parameter>\n<parameter=x>\n1\n</parameter>\n</function>\n"
                       "</tool_call>"));
  // The grammar's calls read back as the same calls.
  model::ChatOutputParser parser(plan->reply);
  parser.Feed(weather + "\n" + add);
  parser.Finish();
  ASSERT_EQ(parser.tool_calls().size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(parser.tool_calls()[0].arguments),
            nlohmann::json::parse(R"({"city": "São Paulo <\"x\">\n</param", "unit": "c"})"));
  EXPECT_EQ(nlohmann::json::parse(parser.tool_calls()[1].arguments),
            nlohmann::json::parse(R"({"a": 1, "b": -2})"));
  // auto: the same calls once the model writes "<tool_call>".
  plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO),
                   Format(model::ToolCallFormat::kQwen3Coder), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->constraint_trigger, "<tool_call>");
  const std::string after_tag = add.substr(std::string("<tool_call>").size());
  EXPECT_TRUE(Accepts(compiler, *plan, after_tag));
  EXPECT_TRUE(Accepts(compiler, *plan, after_tag + "\n" + add));
  // A named function: that one call only.
  plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_FUNCTION, "add"),
                   Format(model::ToolCallFormat::kQwen3Coder), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(Accepts(compiler, *plan, add));
  EXPECT_FALSE(Accepts(compiler, *plan, weather));
  EXPECT_FALSE(Accepts(compiler, *plan, add + "\n" + add));
}

TEST(ToolPlanTest, Lfm2CallsAreConstrainedAsPythonCalls) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<ToolPlan> plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED),
                                            Format(model::ToolCallFormat::kLfm2), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The list of calls (its tags are control tokens: not written by a forced reply), keyword
  // arguments in the schema's order with JSON values.
  EXPECT_TRUE(Accepts(compiler, *plan, R"([get_weather(city="Oslo")])"));
  EXPECT_TRUE(Accepts(compiler, *plan, R"([get_weather(city="Oslo", unit="c"), add(a=1, b=-2)])"));
  EXPECT_FALSE(Accepts(compiler, *plan, R"([get_weather(unit="c")])"));
  EXPECT_FALSE(Accepts(compiler, *plan, R"([add(a=1, b=2.5)])"));
  EXPECT_FALSE(Accepts(compiler, *plan, R"([add(b=2, a=1)])"));
  EXPECT_FALSE(Accepts(compiler, *plan, R"([rm(x=1)])"));
  EXPECT_FALSE(Accepts(compiler, *plan, "[]"));
  // What the grammar writes reads back as the calls.
  model::ChatOutputParser parser(plan->reply);
  parser.Feed(R"([get_weather(city="Oslo", unit="c"), add(a=1, b=-2)])");
  parser.Finish();
  ASSERT_EQ(parser.tool_calls().size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(parser.tool_calls()[0].arguments),
            nlohmann::json::parse(R"({"city": "Oslo", "unit": "c"})"));
  // auto: armed by the model's own <|tool_call_start|>.
  plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO), Format(model::ToolCallFormat::kLfm2),
                   &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->constraint_trigger, "<|tool_call_start|>");
  EXPECT_TRUE(Accepts(compiler, *plan, R"([add(a=1, b=2)])"));
}

TEST(ToolPlanTest, NamedFunctionAndSingleCalls) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<ToolPlan> named = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_FUNCTION, "add"),
                                             Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(named.ok()) << named.status();
  const std::string add =
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>";
  EXPECT_TRUE(Accepts(compiler, *named, add));
  EXPECT_FALSE(Accepts(compiler, *named, add + "\n" + add));  // a named function: one call
  EXPECT_FALSE(Accepts(
      compiler, *named,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}}\n</tool_call>"));
  v1::ChatRequest serial = Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED);
  serial.set_parallel_tool_calls(false);
  absl::StatusOr<ToolPlan> one =
      PlanTools(serial, Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(Accepts(compiler, *one, add));
  EXPECT_FALSE(Accepts(compiler, *one, add + "\n" + add));
}

TEST(ToolPlanTest, AutoInHermesConstrainsACallOnceTheModelOpensIt) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<ToolPlan> plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO),
                                            Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->constraint_trigger, "<tool_call>");
  // What follows the model's own "<tool_call>": the call, then more calls or the end.
  const std::string call =
      "\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>";
  EXPECT_TRUE(Accepts(compiler, *plan, call));
  EXPECT_TRUE(Accepts(compiler, *plan, call + "\n<tool_call>" + call));
  EXPECT_FALSE(Accepts(compiler, *plan, "\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>"));
  // Formats whose call is the bare reply have no tag to wait for: auto is only parsed.
  for (model::ToolCallFormat bare :
       {model::ToolCallFormat::kLlama3Json, model::ToolCallFormat::kGenericJson}) {
    plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO), Format(bare), &compiler);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_FALSE(plan->constraint.has_value());
  }
}

// Mistral and Phi-4-mini open their calls with a tag their vocabularies hold as one control
// token: after it, the calls' JSON array follows the schemas (validation arms the constraint
// on that token's id: ChatValidationTest).
TEST(ToolPlanTest, AutoInMistralAndPhi4ConstrainsTheArrayAfterTheirTag) {
  model::ConstraintCompiler compiler({});
  const std::string add = R"({"name": "add", "arguments": {"a": 1, "b": 2}})";
  const std::string weather = R"({"name": "get_weather", "arguments": {"city": "Oslo"}})";
  for (const auto& [format, tag] : {std::pair{model::ToolCallFormat::kMistral, "[TOOL_CALLS]"},
                                    std::pair{model::ToolCallFormat::kPhi4Mini, "<|tool_call|>"}}) {
    absl::StatusOr<ToolPlan> plan =
        PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO), Format(format), &compiler);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->constraint_trigger, tag);
    EXPECT_TRUE(Accepts(compiler, *plan, "[" + add + "]"));
    EXPECT_TRUE(Accepts(compiler, *plan, "[" + add + ", " + weather + "]"));
    EXPECT_FALSE(Accepts(compiler, *plan, "[]"));
    EXPECT_FALSE(Accepts(compiler, *plan, R"([{"name": "add", "arguments": {"a": 1}}])"));
    EXPECT_FALSE(Accepts(compiler, *plan, "Sure, let me check."));
    v1::ChatRequest serial = Request(v1::ToolChoice::TOOL_CHOICE_AUTO);
    serial.set_parallel_tool_calls(false);
    plan = PlanTools(serial, Format(format), &compiler);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_FALSE(Accepts(compiler, *plan, "[" + add + ", " + weather + "]"));
  }
}

TEST(ToolPlanTest, PromptsThatThinkShapeTheConstraint) {
  model::ConstraintCompiler compiler({});
  const model::ReplyFormat thinking{model::ToolCallFormat::kHermes,
                                    model::ReasoningTags{"<think>", "</think>"}};
  // The model may still think: auto is parsed, not constrained (a tag inside the reasoning
  // must not force a call there).
  absl::StatusOr<ToolPlan> plan =
      PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO), thinking, &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  FitToPrompt(*plan, "<|im_start|>assistant\n");
  EXPECT_FALSE(plan->constraint.has_value());
  EXPECT_FALSE(plan->reply.starts_in_reasoning);
  // Thinking switched off by the template (Qwen 3's enable_thinking=false): constrained.
  plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_AUTO), thinking, &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  FitToPrompt(*plan, "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_TRUE(plan->constraint.has_value());
  // A prompt that opens the reasoning: a forced call waits for its end.
  plan = PlanTools(Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED), thinking, &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  FitToPrompt(*plan, "<|Assistant|><think>\n");
  EXPECT_TRUE(plan->reply.starts_in_reasoning);
  EXPECT_EQ(plan->constraint_trigger, "</think>");
  EXPECT_TRUE(Accepts(compiler, *plan,
                      "\n\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}"
                      "\n</tool_call>"));
}

struct BadCase {
  std::string tools;
  v1::ToolChoice::Mode mode;
  std::string function;
  std::string field;
  std::string message;
};

TEST(ToolPlanTest, BadToolsAndChoicesNameTheField) {
  model::ConstraintCompiler compiler({});
  std::vector<BadCase> cases = {
      {R"({"type":"function"})", v1::ToolChoice::TOOL_CHOICE_AUTO, "", "tools",
       "must be a JSON array"},
      {R"([{"type":"retrieval"}])", v1::ToolChoice::TOOL_CHOICE_AUTO, "", "tools[0].type",
       "function tools only"},
      {R"([{"type":"function","function":{"name":"a b"}}])", v1::ToolChoice::TOOL_CHOICE_AUTO, "",
       "tools[0].function.name", "letters, digits"},
      {R"([{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])",
       v1::ToolChoice::TOOL_CHOICE_AUTO, "", "tools[1].function.name", "an earlier tool"},
      {R"([{"type":"function","function":{"name":"f","parameters":[]}}])",
       v1::ToolChoice::TOOL_CHOICE_AUTO, "", "tools[0].function.parameters", "JSON Schema object"},
      {R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",)"
       R"("properties":{"x":{"type":"object","patternProperties":{"^a":{}}}}}}}])",
       v1::ToolChoice::TOOL_CHOICE_AUTO, "", "tools[0].function.parameters",
       "/properties/x/patternProperties"},
      {"", v1::ToolChoice::TOOL_CHOICE_REQUIRED, "", "tool_choice", "has no tools"},
      {kTools, v1::ToolChoice::TOOL_CHOICE_FUNCTION, "mul", "tool_choice.function.name",
       "\"mul\" is not one of the request's tools"},
  };
  std::string too_many = "[";
  for (int i = 0; i <= kMaxTools; ++i) {
    too_many +=
        absl::StrCat(i == 0 ? "" : ",", R"({"type":"function","function":{"name":"f)", i, R"("}})");
  }
  cases.push_back({too_many + "]", v1::ToolChoice::TOOL_CHOICE_AUTO, "", "tools",
                   absl::StrCat("has ", kMaxTools + 1, " tools; at most ", kMaxTools)});
  for (const BadCase& c : cases) {
    v1::ChatRequest r = Request(c.mode, c.function);
    r.set_tools_json(c.tools);
    absl::StatusOr<ToolPlan> plan = PlanTools(r, Format(model::ToolCallFormat::kHermes), &compiler);
    ASSERT_FALSE(plan.ok()) << c.tools;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
    EXPECT_EQ(ErrorField(plan.status()), c.field) << plan.status();
    EXPECT_TRUE(absl::StrContains(plan.status().message(), c.message)) << plan.status();
    // The same tools handed over parsed (as the HTTP front end does) get the same answer.
    if (c.tools.empty()) continue;
    const ParsedTools parsed{nlohmann::ordered_json::parse(c.tools), c.tools.size()};
    r.clear_tools_json();
    EXPECT_EQ(PlanTools(r, Format(model::ToolCallFormat::kHermes), &compiler, &parsed).status(),
              plan.status());
  }
}

TEST(ToolPlanTest, ParsedToolsPlanAsTheirText) {
  model::ConstraintCompiler compiler({});
  v1::ChatRequest r = Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED);
  absl::StatusOr<ToolPlan> from_text =
      PlanTools(r, Format(model::ToolCallFormat::kHermes), &compiler);
  const ParsedTools parsed{nlohmann::ordered_json::parse(r.tools_json()), r.tools_json().size()};
  r.clear_tools_json();
  absl::StatusOr<ToolPlan> from_parse =
      PlanTools(r, Format(model::ToolCallFormat::kHermes), &compiler, &parsed);
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  ASSERT_TRUE(from_parse.ok()) << from_parse.status();
  EXPECT_TRUE(from_parse->offer_tools);
  EXPECT_EQ(from_parse->reply.tool_names, from_text->reply.tool_names);
  ASSERT_TRUE(from_parse->constraint.has_value() && from_text->constraint.has_value());
  EXPECT_EQ(from_parse->constraint->text, from_text->constraint->text);
  ASSERT_TRUE(from_parse->template_tools.has_value());
}

// A forced reply is a call: the call's constraint replaces a text format the request has too
// (an agent with a structured final answer sends both on the turn that must call).
TEST(ToolPlanTest, AForcedCallReplacesTheOutputConstraint) {
  model::ConstraintCompiler compiler({});
  v1::ChatRequest both = Request(v1::ToolChoice::TOOL_CHOICE_REQUIRED);
  both.mutable_constraint()->set_json_object(true);
  absl::StatusOr<ToolPlan> plan =
      PlanTools(both, Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->constraint.has_value());
  EXPECT_EQ(plan->constraint->kind, model::ConstraintKind::kJsonSchema);
  EXPECT_TRUE(absl::StrContains(plan->constraint->text, "\"add\"")) << plan->constraint->text;
  EXPECT_TRUE(plan->constraint_trigger.empty());
  // auto with a text format: the format constrains the reply, no lazy call grammar.
  v1::ChatRequest automatic = Request(v1::ToolChoice::TOOL_CHOICE_AUTO);
  automatic.mutable_constraint()->set_json_object(true);
  plan = PlanTools(automatic, Format(model::ToolCallFormat::kHermes), &compiler);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->constraint.has_value());
}

TEST(ToolPlanTest, ToolMessagesMustAnswerAnEarlierCall) {
  model::ConstraintCompiler compiler({});
  v1::ChatRequest r = Request(v1::ToolChoice::TOOL_CHOICE_AUTO);
  v1::ChatMessage* call = r.add_messages();
  call->set_role("assistant");
  call->set_tool_calls_json(
      R"([{"id":"call_1","type":"function","function":{"name":"add","arguments":"{}"}}])");
  v1::ChatMessage* answer = r.add_messages();
  answer->set_role("tool");
  answer->set_content("3");
  answer->set_tool_call_id("call_1");
  EXPECT_TRUE(PlanTools(r, Format(model::ToolCallFormat::kHermes), &compiler).ok());
  answer->set_tool_call_id("call_2");
  absl::StatusOr<ToolPlan> plan = PlanTools(r, Format(model::ToolCallFormat::kHermes), &compiler);
  EXPECT_EQ(ErrorField(plan.status()), "messages[2].tool_call_id") << plan.status();
  EXPECT_TRUE(absl::StrContains(plan.status().message(), "answers no earlier call"));
  answer->set_tool_call_id("");
  plan = PlanTools(r, Format(model::ToolCallFormat::kHermes), &compiler);
  EXPECT_EQ(ErrorField(plan.status()), "messages[2].tool_call_id") << plan.status();
}

}  // namespace
}  // namespace textgen::server
