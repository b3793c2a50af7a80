// The Jinja engine's own guarantees: taint tracking, error positions, sandbox limits. Its
// rendering semantics are checked against Python's jinja2 by compare_with_jinja2.py.
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/chat/chat_template.h"
#include "model/chat/jinja/template.h"
#include "model/chat/json_value.h"

namespace textgen::model::jinja {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<TaintedString> Render(absl::string_view text, const Dict& context = {},
                                     const RenderOptions& options = {}) {
  absl::StatusOr<Template> parsed = Template::Parse(text);
  if (!parsed.ok()) return parsed.status();
  return parsed->Render(context, options);
}

Dict WithUser(std::string content) {
  Dict context;
  context.Set(Value::String("user"), Value::Tainted(std::move(content)));
  return context;
}

// The tainted bytes of `text`, as strings.
std::vector<std::string> TaintedParts(const TaintedString& text) {
  std::vector<std::string> parts;
  for (const TaintRange& range : text.taint) {
    parts.push_back(text.bytes.substr(range.begin, range.end - range.begin));
  }
  return parts;
}

TEST(JinjaTaintTest, ConcatenationKeepsExactRanges) {
  absl::StatusOr<TaintedString> out =
      Render("<|im_start|>{{ '<|user|>' + user + '<|end|>' }}{{ user ~ '!' }}", WithUser("hi"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->bytes, "<|im_start|><|user|>hi<|end|>hi!");
  EXPECT_THAT(TaintedParts(*out), ElementsAre("hi", "hi"));
  EXPECT_EQ(out->taint[0].begin, 20u);
}

TEST(JinjaTaintTest, StripSplitAndSliceKeepExactRanges) {
  absl::StatusOr<TaintedString> out =
      Render("[{{ user|trim }}][{{ user.split('</think>')[-1].lstrip() }}][{{ user[2:5] }}]",
             WithUser("  <think>a</think> answer<|im_end|> "));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->bytes, "[<think>a</think> answer<|im_end|>][answer<|im_end|> ][<th]");
  EXPECT_THAT(TaintedParts(*out),
              ElementsAre("<think>a</think> answer<|im_end|>", "answer<|im_end|> ", "<th"));
}

TEST(JinjaTaintTest, OperationsWithoutPositionsTaintTheWholeResult) {
  absl::StatusOr<TaintedString> out =
      Render("{{ user|upper }}|{{ user.replace('a', '<s>') }}|{{ [user]|tojson }}|{{ 'x'|upper }}",
             WithUser("ab"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->bytes, "AB|<s>b|[\"ab\"]|X");
  EXPECT_THAT(TaintedParts(*out), ElementsAre("AB", "<s>b", "[\"ab\"]"));
}

TEST(JinjaTaintTest, MacroAndBlockOutputKeepRanges) {
  absl::StatusOr<TaintedString> out = Render(
      "{% macro m(x) %}<{{ x }}>{% endmacro %}{% set b %}[{{ user }}]{% endset %}{{ m(user) }}{{ b "
      "}}",
      WithUser("u"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->bytes, "<u>[u]");
  EXPECT_THAT(TaintedParts(*out), ElementsAre("u", "u"));
}

TEST(JinjaErrorTest, SyntaxErrorsNameLineAndColumn) {
  absl::StatusOr<Template> parsed =
      Template::Parse("line one\n{% if x %}\n  {{ 1 + }}\n{% endif %}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("template syntax error at line 3, column 10: expected an expression, "
                        "got '}}'"));

  parsed = Template::Parse("{% for x in y %}never closed");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("expected '{% else %}' or '{% endfor %}'"));

  parsed = Template::Parse("{{ 'unterminated }}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("line 1, column 4: unterminated string"));
}

TEST(JinjaErrorTest, RuntimeErrorsNameTheExpression) {
  absl::StatusOr<TaintedString> out = Render("a\n  {{ 'x' + 1 }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(),
            "template error at line 2, column 10: can only concatenate str (not \"int\") to str");

  out = Render("{{ nosuch.attr }}");
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'nosuch' is undefined"));

  out = Render("{{ 1|nosuchfilter }}");
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("no filter named 'nosuchfilter'"));
}

TEST(JinjaErrorTest, RaiseExceptionKeepsTheTemplatesMessage) {
  absl::StatusOr<TaintedString> out =
      Render("{% if true %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "Conversation roles must alternate");
  EXPECT_TRUE(out.status().GetPayload(kRaisedByTemplatePayload).has_value());
}

TEST(JinjaErrorTest, MutatingInputsIsRefused) {
  absl::StatusOr<TaintedString> out = Render("{% set l = [1] %}{{ l.append(2) }}");
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("access to attribute 'append' of 'list' object is unsafe"));
}

// A macro lives in the frame it closes over and a namespace may hold itself: neither may keep
// its memory alive after the render (the ASan build's leak checker runs this).
// Printing a namespace that holds itself ends (depth shown as "..."), and one that holds
// itself twice per level is cut off by size and refused, not rendered for 2^200 steps.
TEST(JinjaLimitsTest, SelfReferencesPrintAndEnd) {
  absl::StatusOr<TaintedString> once =
      Render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_THAT(once->bytes, HasSubstr("<Namespace {'me': <Namespace {'me': "));
  EXPECT_THAT(once->bytes, HasSubstr("..."));
  absl::StatusOr<TaintedString> twice =
      Render("{% set ns = namespace() %}{% set ns.a = [ns, ns] %}{{ ns }}");
  EXPECT_FALSE(twice.ok());
}

// Only a namespace carries a value across loop iterations, so wrapping it once per iteration
// is the one way to build a value deeper than the template's own nesting; == (and freeing it)
// would recurse once per level. The assignment past kMaxValueDepth is refused.
TEST(JinjaLimitsTest, NamespaceValuesCannotNestWithoutBound) {
  absl::StatusOr<TaintedString> deep = Render(
      "{% set ns = namespace(x=[]) %}{% for i in range(900000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x == ns.x }}");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(deep.status().message(),
              HasSubstr("cannot assign 'x': the value nests 201 lists or dicts deep, more than "
                        "200 allowed"));
  deep = Render(
      "{% set ns = namespace(x={}) %}{% for i in range(900000) %}{% set ns.x = {'k': ns.x} %}"
      "{% endfor %}");
  EXPECT_FALSE(deep.ok());

  absl::StatusOr<TaintedString> allowed = Render(
      "{% set ns = namespace(x=[]) %}{% for i in range(199) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x == ns.x }} {{ [ns] == [ns] }} {{ ns.x|string|length }}");
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(allowed->bytes, "True True 400");
}

TEST(JinjaLimitsTest, SelfReferencesDoNotLeak) {
  absl::StatusOr<TaintedString> out = Render(
      "{% macro m() %}x{% endmacro %}{% set ns = namespace() %}{% set ns.me = ns %}"
      "{% set ns.m = m %}{% for i in range(2) %}{% macro inner() %}y{% endmacro %}"
      "{% set ns.inner = inner %}{% endfor %}{{ ns.m() }}{{ ns.me.m() }}{{ ns.inner() }}");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->bytes, "xxy");
}

TEST(JinjaLimitsTest, HugeRangeIsRefusedBeforeItIsBuilt) {
  absl::StatusOr<TaintedString> out = Render("{{ range(1000000000000)|length }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("list of 1000000000000 items"));
}

TEST(JinjaLimitsTest, HugeStringRepetitionIsRefused) {
  absl::StatusOr<TaintedString> out = Render("{{ 'abc' * 1000000000000000 }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(JinjaLimitsTest, LoopIterationsAreBounded) {
  RenderOptions options;
  options.limits.max_loop_iterations = 5000;
  absl::StatusOr<TaintedString> out = Render(
      "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", {}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("more than 5000 loop iterations"));
}

TEST(JinjaLimitsTest, RecursionIsBounded) {
  absl::StatusOr<TaintedString> out =
      Render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("macro calls nest deeper than 64 levels"));
}

TEST(JinjaLimitsTest, QuadraticStringBuildingIsBounded) {
  // Each iteration copies the whole string: 5e10 bytes in all if it ran to the end.
  absl::StatusOr<TaintedString> out = Render(
      "{% set ns = namespace(s='') %}{% for i in range(100000) %}"
      "{% set ns.s = ns.s ~ '0123456789' %}{% endfor %}{{ ns.s|length }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("bytes of text in one rendering"));
}

TEST(JinjaLimitsTest, OutputIsBounded) {
  RenderOptions options;
  options.limits.max_output_bytes = 1000;
  absl::StatusOr<TaintedString> out =
      Render("{% for i in range(200) %}0123456789{% endfor %}", {}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("exceeds the limit of 1000 bytes"));
}

TEST(JinjaLimitsTest, DeepNestingIsASyntaxErrorNotACrash) {
  const std::string deep_parens =
      absl::StrCat("{{ ", std::string(100000, '('), "1", std::string(100000, ')'), " }}");
  absl::StatusOr<Template> parsed = Template::Parse(deep_parens);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("nests deeper than"));

  std::string deep_ifs;
  for (int i = 0; i < 5000; ++i) deep_ifs += "{% if true %}";
  parsed = Template::Parse(deep_ifs);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("nests deeper than"));

  std::string deep_not = "{{ " + std::string(100000, '-') + "1 }}";
  parsed = Template::Parse(deep_not);
  ASSERT_FALSE(parsed.ok());
}

}  // namespace
}  // namespace textgen::model::jinja

namespace textgen::model {
namespace {

using ::testing::HasSubstr;

ChatMessage UserMessage(std::string content) {
  ChatMessage message;
  message.role = "user";
  message.content = std::move(content);
  return message;
}

constexpr char kChatMl[] =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

TEST(ChatTemplateTest, UntrustedRangesCoverExactlyWhatTheRequestSent) {
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::Create(kChatMl, "<s>", "</s>");
  ASSERT_TRUE(chat.ok()) << chat.status();
  ChatInput input;
  input.messages.push_back(UserMessage("hi <|im_end|> there"));
  absl::StatusOr<ChatPrompt> prompt = chat->Render(input);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_EQ(prompt->text,
            "<|im_start|>user\nhi <|im_end|> there<|im_end|>\n<|im_start|>assistant\n");
  ASSERT_EQ(prompt->untrusted.size(), 2u);
  const auto part = [&](const TextRange& r) {
    return prompt->text.substr(r.begin, r.end - r.begin);
  };
  EXPECT_EQ(part(prompt->untrusted[0]), "user");
  EXPECT_EQ(part(prompt->untrusted[1]), "hi <|im_end|> there");
}

TEST(ChatTemplateTest, VariablesToolsAndErrors) {
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::Create(
      "{% if enable_thinking is defined and not enable_thinking %}no-think{% endif %}"
      "{{ tools|length if tools is defined else 'none' }}"
      "{% if messages[0].role != 'user' %}{{ raise_exception('first message must be user') }}"
      "{% endif %}",
      "<s>", "</s>");
  ASSERT_TRUE(chat.ok()) << chat.status();
  ChatInput input;
  input.messages.push_back(UserMessage("x"));
  input.variables_json = R"({"enable_thinking": false})";
  input.tools = *ParseJsonValue(R"([{"type": "function", "function": {"name": "f"}}])",
                                /*tainted=*/true, "tools");
  absl::StatusOr<ChatPrompt> prompt = chat->Render(input);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_EQ(prompt->text, "no-think1");

  input.messages[0].role = "system";
  prompt = chat->Render(input);
  ASSERT_FALSE(prompt.ok());
  EXPECT_EQ(prompt.status().message(), "first message must be user");

  input.variables_json = R"({"messages": []})";
  prompt = chat->Render(input);
  ASSERT_FALSE(prompt.ok());
  EXPECT_THAT(prompt.status().message(), HasSubstr("may not set 'messages'"));

  input.variables_json = "[1]";
  prompt = chat->Render(input);
  ASSERT_FALSE(prompt.ok());
  EXPECT_THAT(prompt.status().message(), HasSubstr("template_variables must be a JSON object"));

  input.variables_json = "";
  input.tools = *ParseJsonValue(R"({"not": "a list"})", /*tainted=*/true, "tools");
  prompt = chat->Render(input);
  ASSERT_FALSE(prompt.ok());
  EXPECT_THAT(prompt.status().message(), HasSubstr("tools must be a JSON array"));
  EXPECT_THAT(ParseJsonValue("{not json", true, "tools").status().message(),
              HasSubstr("tools is not valid JSON"));
}

// A request's JSON object with 200,000 keys is read in linear time (dict lookups hash once a
// dict is large), and `unique` over as many strings too; quadratic would take minutes.
TEST(ChatTemplateTest, LargeRequestObjectsStayLinear) {
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::Create(
      "{{ tools[0]|length }} {{ tools[0]['k199999'] }} {{ tools[0].values()|unique|list|length }}",
      "", "");
  ASSERT_TRUE(chat.ok()) << chat.status();
  std::string object = "{";
  for (int i = 0; i < 200000; ++i) {
    absl::StrAppend(&object, i > 0 ? "," : "", "\"k", i, "\": \"v", i % 1000, "\"");
  }
  ChatInput input;
  input.messages.push_back(UserMessage("x"));
  input.tools = *ParseJsonValue(absl::StrCat("[", object, "}]"), /*tainted=*/true, "tools");
  absl::StatusOr<ChatPrompt> prompt = chat->Render(input);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_EQ(prompt->text, "200000 v999 1000");
}

// gRPC threads render with one shared template at once (the TSan stage runs this).
TEST(ChatTemplateTest, ConcurrentRendersShareOneTemplate) {
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::Create(
      "{% macro m(x) %}[{{ x|trim }}]{% endmacro %}{% set ns = namespace(n=0) %}"
      "{% for msg in messages %}{% set ns.n = ns.n + 1 %}{{ m(msg.content) }}{% endfor %}"
      "{{ ns.n }}",
      "<s>", "</s>");
  ASSERT_TRUE(chat.ok()) << chat.status();
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ChatInput input;
      for (int i = 0; i <= t; ++i) input.messages.push_back(UserMessage(absl::StrCat(" m", i)));
      for (int round = 0; round < 200; ++round) {
        absl::StatusOr<ChatPrompt> prompt = chat->Render(input);
        if (!prompt.ok() || (!results[t].empty() && results[t] != prompt->text)) {
          results[t] = "mismatch";
          return;
        }
        results[t] = prompt->text;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(results[0], "[m0]1");
  EXPECT_EQ(results[3], "[m0][m1][m2][m3]4");
}

TEST(ChatTemplateTest, OversizedOrBrokenTemplatesAreRefused) {
  EXPECT_EQ(
      ChatTemplate::Create(std::string(kMaxChatTemplateBytes + 1, 'x'), "", "").status().code(),
      absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ChatTemplate> broken = ChatTemplate::Create("{% for %}", "", "");
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr("line 1, column 8"));
}

// Found by textgen-fuzz-jinja: a positional index too long for size_t threw from std::stoul
// and aborted the process; it is an ordinary "index out of range" error, as in Python.
TEST(JinjaFormatTest, HugePositionalIndexIsAnErrorNotACrash) {
  absl::StatusOr<jinja::TaintedString> out =
      jinja::Render("{{ '{2222222222222222222222220}'.format('x') }}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Replacement index out of range"), std::string::npos)
      << out.status();
  out = jinja::Render("{{ '{1}{0}'.format('a', 'b') }}");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->bytes, "ba");
}

// Found by textgen-fuzz-jinja: repeating an empty list or string a huge number of times looped
// that many times (no output, so no budget was charged); it is empty at once.
TEST(JinjaFormatTest, RepeatingAnEmptySequenceHugeTimesIsImmediate) {
  absl::StatusOr<jinja::TaintedString> out =
      jinja::Render("[{{ [] * 214444444444444 }}][{{ '' * 214444444444444 }}]");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->bytes, "[[]][]");
}

}  // namespace
}  // namespace textgen::model
