#include "model/constraint/constraint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model/constraint/gbnf.h"
#include "model/constraint/grammar_matcher.h"
#include "model/constraint/json_schema.h"
#include "model/constraint/regex.h"
#include "model/constraint/token_trie.h"
#include "model/tokenizer/tokenizer.h"

namespace textgen::model {
namespace {

std::shared_ptr<const Grammar> Shared(absl::StatusOr<Grammar> g) {
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::make_shared<const Grammar>(std::move(*g)) : nullptr;
}

std::shared_ptr<const Grammar> Schema(const std::string& schema) {
  return Shared(CompileJsonSchema(schema));
}

std::shared_ptr<const Grammar> Regex(const std::string& regex) {
  GrammarBuilder b;
  absl::StatusOr<CompiledRegex> r = CompileRegex(b, regex, TextContext::kRaw);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return nullptr;
  return Shared(b.Build(r->rule, {}));
}

// Whether the whole of `text` is a string of the grammar.
bool Matches(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.Accept(text) && m.complete();
}
bool IsPrefix(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.Accept(text);
}

TEST(GrammarTest, RefusesLeftRecursionUndefinedUnusedAndEndlessRules) {
  EXPECT_EQ(ParseGbnf("root ::= root \"a\" | \"b\"").status().message(),
            "left recursion: root -> root (rewrite it as repetition, e.g. list ::= item (\",\" "
            "item)*)");
  EXPECT_EQ(ParseGbnf("root ::= item\n").status().message(), "rule item is used but not defined");
  EXPECT_EQ(ParseGbnf("root ::= \"a\"\nspare ::= \"b\"\n").status().message(),
            "rule spare is never used (it is unreachable from root)");
  EXPECT_EQ(ParseGbnf("root ::= \"a\" root\n").status().message(), "rule root matches nothing");
  EXPECT_EQ(ParseGbnf("root ::= x\nx ::= \"[\" x \"]\"\n").status().message(),
            "rule x can never finish (every alternative needs itself or an empty set)");
  EXPECT_EQ(ParseGbnf("item ::= \"a\"\n").status().message(),
            "the grammar has no root rule (generation starts there)");
  EXPECT_EQ(ParseGbnf("root ::= \"a\n").status().message(), "grammar line 1: unterminated literal");
  EXPECT_EQ(ParseGbnf("root ::= a | b\na ::= b\nb ::= a \"x\"\n").status().message(),
            "left recursion: a -> b -> a (rewrite it as repetition, e.g. list ::= item (\",\" "
            "item)*)");
}

TEST(GrammarTest, GbnfAsLlamaCppWritesIt) {
  // llama.cpp's grammars/list.gbnf style: multi-line rules, classes, repetition, comments.
  auto g = Shared(ParseGbnf(R"(# a list
root ::= item+
item ::= "- " [^\r\n]{1,20} "\n"  # one line each
)"));
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Matches(g, "- milk\n- eggs\n"));
  EXPECT_FALSE(Matches(g, "- milk"));
  EXPECT_TRUE(IsPrefix(g, "- milk"));
  EXPECT_FALSE(IsPrefix(g, "* milk"));
  EXPECT_FALSE(Matches(g, "- " + std::string(21, 'x') + "\n"));
  auto alt = Shared(ParseGbnf("root ::= (\"yes\" | \"no\")\n  \" please\"?\n"));
  EXPECT_TRUE(Matches(alt, "yes please"));
  EXPECT_TRUE(Matches(alt, "no"));
  EXPECT_FALSE(Matches(alt, "maybe"));
  auto unicode = Shared(ParseGbnf("root ::= [α-ω]+ \"\\u00e9\"\n"));
  EXPECT_TRUE(Matches(unicode, "λμé"));
  EXPECT_FALSE(Matches(unicode, "lé"));
}

TEST(RegexTest, MatchesWholeOutputs) {
  auto phone = Regex("\\d{3}-\\d{4}");
  EXPECT_TRUE(Matches(phone, "555-1234"));
  EXPECT_FALSE(Matches(phone, "555-123"));
  EXPECT_FALSE(Matches(phone, "555-12345"));
  auto word = Regex("^(cat|dog)s?$");
  EXPECT_TRUE(Matches(word, "dogs"));
  EXPECT_FALSE(Matches(word, "cow"));
  auto any = Regex("[^a-c]+");
  EXPECT_TRUE(Matches(any, "xyz€"));
  EXPECT_FALSE(Matches(any, "xaz"));
  auto braces = Regex("a{2,}b{,3}");  // "{,3}" is not a quantifier: literal text
  EXPECT_TRUE(Matches(braces, "aaab{,3}"));
}

TEST(RegexTest, RefusesWhatItCannotMatchWithTheOffset) {
  GrammarBuilder b;
  EXPECT_EQ(CompileRegex(b, "(a", TextContext::kRaw).status().message(),
            "regex: missing ')' at offset 2");
  EXPECT_EQ(CompileRegex(b, "(a)\\1", TextContext::kRaw).status().message(),
            "regex: backreferences are not supported at offset 4");
  EXPECT_EQ(CompileRegex(b, "(?=a)", TextContext::kRaw).status().message(),
            "regex: lookaround and named groups are not supported at offset 1");
  EXPECT_EQ(CompileRegex(b, "*a", TextContext::kRaw).status().message(),
            "regex: nothing to repeat at offset 0");
  EXPECT_EQ(CompileRegex(b, "[z-a]", TextContext::kRaw).status().message(),
            "regex: range out of order at offset 4");
  EXPECT_EQ(CompileRegex(b, "a{5000}", TextContext::kRaw).status().message(),
            "regex: repetition bound over the limit of 1000 at offset 7");
}

// qwen3-coder's XML parameters: a tool's arguments as <parameter=KEY> blocks (the whole framed
// call is ToolPlanTest's).
TEST(JsonSchemaTest, XmlParametersWriteTextRawAndOtherValuesAsJson) {
  JsonFraming framing;
  framing.before_branch = {"<function=f>\n"};
  framing.arguments = JsonFraming::Arguments::kXmlParameters;
  const auto g = Shared(CompileJsonSchema(
      R"({"anyOf": [{"type": "object", "properties": {
           "code": {"type": "string", "minLength": 2, "maxLength": 4},
           "id": {"type": "string", "pattern": "^[a-z]+[0-9]$"},
           "any": {"type": "string"},
           "n": {"type": "integer"}},
         "required": ["code", "n"]}]})",
      {}, framing));
  const auto call = [](const std::string& blocks) { return "<function=f>\n" + blocks; };
  const auto block = [](const std::string& key, const std::string& value) {
    return "<parameter=" + key + ">\n" + value + "\n</parameter>\n";
  };
  EXPECT_TRUE(Matches(g, call(block("code", "ab") + block("n", "7"))));
  EXPECT_TRUE(Matches(g, call(block("code", "λμé") + block("id", "ab3") +
                              block("any", "x </param <p>\n\"y\"") + block("n", "-1"))));
  // Length bounds count characters (none of them "<"); the pattern is anchored as written.
  EXPECT_FALSE(Matches(g, call(block("code", "a") + block("n", "7"))));
  EXPECT_FALSE(Matches(g, call(block("code", "abcde") + block("n", "7"))));
  EXPECT_FALSE(Matches(g, call(block("code", "a<") + block("n", "7"))));
  EXPECT_FALSE(Matches(g, call(block("code", "ab") + block("id", "3ab") + block("n", "7"))));
  // Raw text never holds its closing tag; JSON values follow their schema; order as declared.
  EXPECT_FALSE(
      Matches(g, call(block("code", "ab") + block("any", "</parameter>") + block("n", "7"))));
  EXPECT_FALSE(Matches(g, call(block("code", "ab") + block("n", "\"7\""))));
  EXPECT_FALSE(Matches(g, call(block("n", "7") + block("code", "ab"))));
  // A required property that is not declared cannot be written.
  const absl::Status undeclared =
      CompileJsonSchema(R"({"anyOf": [{"type": "object", "required": ["x"]}]})", {}, framing)
          .status();
  EXPECT_TRUE(absl::StrContains(undeclared.message(), "\"x\" is required but not declared"))
      << undeclared;
}

TEST(JsonSchemaTest, ObjectsFollowTheSchema) {
  auto g = Schema(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":5},
      "age":{"type":"integer","minimum":0,"maximum":120},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},
    "required":["name","age"],"additionalProperties":false})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Matches(g, R"({"name":"Ann","age":42})"));
  EXPECT_TRUE(Matches(g, "{ \"name\": \"Ann\",\n  \"age\": 7, \"tags\": [\"a\", \"b\"] }"));
  EXPECT_FALSE(Matches(g, R"({"name":"Ann"})"));                // age required
  EXPECT_FALSE(Matches(g, R"({"name":"Annabel","age":42})"));   // maxLength
  EXPECT_FALSE(Matches(g, R"({"name":"Ann","age":121})"));      // maximum
  EXPECT_FALSE(Matches(g, R"({"name":"Ann","age":-1})"));       // minimum
  EXPECT_FALSE(Matches(g, R"({"name":"Ann","age":1,"x":1})"));  // no additional
  EXPECT_FALSE(Matches(g, R"({"name":"Ann","age":1,"tags":["c"]})"));
  EXPECT_FALSE(Matches(g, R"({"name":"Ann","age":1,"tags":["a","a","a"]})"));
  // Whitespace is bounded: a model cannot stall on newlines or indentation.
  EXPECT_FALSE(IsPrefix(g, "{\n\n\n"));
  EXPECT_TRUE(IsPrefix(g, "{\n\n" + std::string(20, ' ') + "\"name\""));
  EXPECT_FALSE(IsPrefix(g, "{\n" + std::string(21, ' ')));
  EXPECT_FALSE(IsPrefix(g, "{  \"name\""));  // one space, not two
}

TEST(JsonSchemaTest, AdditionalPropertiesOtherThanTheDeclaredKeys) {
  auto g =
      Schema(R"({"properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Matches(g, R"({"a":1,"b":"x","ab":"y"})"));
  EXPECT_FALSE(Matches(g, R"({"a":1,"a":"x"})"));  // a declared key cannot come back as extra
  EXPECT_FALSE(Matches(g, R"({"b":1})"));
}

TEST(JsonSchemaTest, RefsUnionsFormatsAndNumbers) {
  auto tree = Schema(R"({"$defs":{"node":{"type":"object","properties":{
      "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"})");
  ASSERT_NE(tree, nullptr);
  EXPECT_TRUE(Matches(tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]})"));
  EXPECT_FALSE(Matches(tree, R"({"v":1,"kids":[{"kids":[]}]})"));
  auto either = Schema(R"({"anyOf":[{"type":"null"},{"type":"string","format":"date"}]})");
  EXPECT_TRUE(Matches(either, "null"));
  EXPECT_TRUE(Matches(either, "\"2024-02-29\""));
  EXPECT_FALSE(Matches(either, "\"2023-02-29\""));
  EXPECT_FALSE(Matches(either, "\"2023-04-31\""));
  auto uuid = Schema(R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(Matches(uuid, "\"123e4567-e89b-12d3-a456-426614174000\""));
  EXPECT_FALSE(Matches(uuid, "\"123e4567e89b12d3a456426614174000\""));
  auto number = Schema(R"({"type":"number","minimum":-2,"exclusiveMaximum":3})");
  for (const char* ok : {"-2", "-1.5", "0", "2.999", "-0.25"})
    EXPECT_TRUE(Matches(number, ok)) << ok;
  for (const char* bad : {"3", "-2.5", "3.5", "-3"}) EXPECT_FALSE(Matches(number, bad)) << bad;
  auto digits = Schema(R"({"type":"integer"})");
  EXPECT_TRUE(Matches(digits, "1234567890123456789"));
  EXPECT_FALSE(IsPrefix(digits, "12345678901234567890"));  // 20 digits: bounded
  auto pattern = Schema(R"({"type":"string","pattern":"^[A-Z]{2}\\d+$"})");
  EXPECT_TRUE(Matches(pattern, "\"AB12\""));
  EXPECT_FALSE(Matches(pattern, "\"A12\""));
  auto escaped = Schema(R"({"type":"string","pattern":"a\"b"})");  // a quote inside the text
  EXPECT_TRUE(Matches(escaped, R"("xa\"by")"));
  auto tuple = Schema(
      R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false})");
  EXPECT_TRUE(Matches(tuple, R"([1,"a"])"));
  EXPECT_TRUE(Matches(tuple, R"([1])"));
  EXPECT_FALSE(Matches(tuple, R"([1,"a",2])"));
}

TEST(JsonSchemaTest, RefusesWhatItDoesNotEnforceNamingKeywordAndPointer) {
  const auto message = [](const std::string& schema) {
    return std::string(CompileJsonSchema(schema).status().message());
  };
  EXPECT_EQ(message(R"({"type":"object","properties":{"a":{"type":"string","not":{}}}})"),
            "schema /properties/a/not: keyword \"not\" is not supported");
  EXPECT_EQ(message(R"({"type":"array","uniqueItems":true})"),
            "schema /uniqueItems: keyword \"uniqueItems\" is not supported (true)");
  EXPECT_EQ(message(R"({"type":"number","maximum":1.5})"),
            "schema /maximum: 1.5: only whole-number bounds are supported");
  EXPECT_EQ(message(R"({"type":"string","format":"hostname"})"),
            "schema /format: format \"hostname\" is not supported (date, time, date-time, uuid, "
            "email)");
  EXPECT_EQ(message(R"({"$ref":"#/$defs/missing"})"),
            "schema /$ref: \"#/$defs/missing\" points at nothing");
  // Not an array index where the pointer meets an array (found by the schema fuzzer: nlohmann
  // threw from contains()).
  EXPECT_EQ(message(R"({"items":[{"type":"integer"},{"$ref":"#/items//items/0"}]})"),
            "schema /items/1/$ref: \"#/items//items/0\" points at nothing");
  EXPECT_EQ(message(R"({"type":"string","pattern":"(a"})"),
            "schema /pattern: regex: missing ')' at offset 2");
  EXPECT_EQ(message("{\"type\": "), message("{\"type\": "));  // deterministic
  EXPECT_TRUE(absl::StrContains(message("{\"type\": "), "the schema is not valid JSON"));
  // A number too large for a double is out_of_range in nlohmann, not a parse error.
  EXPECT_TRUE(absl::StrContains(message("{\"not\": 1e1198}"), "number overflow"))
      << message("{\"not\": 1e1198}");
  EXPECT_EQ(message(std::string(200, '[') + std::string(200, ']')),
            "the schema nests deeper than 64 levels");
}

TEST(ConstraintLimitsTest, LongNamesAndRuleChainsStayOffTheStack) {
  // A 200 KB property name with additional properties: the "other key" rules are bounded.
  const std::string name(200'000, 'k');
  auto keyed = Schema(absl::StrCat(R"({"properties":{")", name, R"(":{"type":"integer"}}})"));
  ASSERT_NE(keyed, nullptr);
  EXPECT_TRUE(Matches(keyed, absl::StrCat(R"({")", name, R"(":1})")));
  // A chain of 9,000 rules (a0 ::= a1, a1 ::= a2, ...): the matcher expands it without recursion.
  std::string gbnf = "root ::= a0\n";
  for (int i = 0; i < 9000; ++i) absl::StrAppend(&gbnf, "a", i, " ::= a", i + 1, "\n");
  absl::StrAppend(&gbnf, "a9000 ::= \"x\"\n");
  auto chain = Shared(ParseGbnf(gbnf));
  ASSERT_NE(chain, nullptr);
  EXPECT_TRUE(Matches(chain, "x"));
}

TEST(ConstraintLimitsTest, MatcherStateMemoryIsBoundedWithAStatus) {
  // Each new length of a bounded string is a new state with its transition row.
  auto g = Schema(R"({"type":"string","maxLength":900})");
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g, MatcherLimits{.max_state_bytes = 64 << 10});
  EXPECT_TRUE(m.Accept("\""));
  bool refused = false;
  for (int i = 0; i < 900 && !refused; ++i) refused = !m.Accept("x");
  EXPECT_TRUE(refused);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(m.status().message(), "the grammar's parse state outgrew its memory limit of 64 KiB");
  // The default budget takes the whole string.
  GrammarMatcher roomy(g);
  EXPECT_TRUE(roomy.Accept(absl::StrCat("\"", std::string(900, 'x'), "\"")));
  EXPECT_TRUE(roomy.complete());
}

// Brute force: the tokens whose bytes the matcher accepts from its current state.
std::vector<uint64_t> BruteForceMask(const GrammarMatcher& m, const TokenTrie& trie) {
  std::vector<uint64_t> bits((trie.vocab_size() + 63) / 64, 0);
  for (int id = 0; id < trie.vocab_size(); ++id) {
    if (trie.token_bytes(id).empty()) continue;
    GrammarMatcher copy = m;
    if (copy.Accept(trie.token_bytes(id))) bits[id / 64] |= uint64_t{1} << (id % 64);
  }
  return bits;
}

TEST(GrammarTest, ByteClassesSplitBytesExactlyAsTheByteSetsDo) {
  // The matcher memoizes one transition per class, so two bytes may share a class only when
  // every byte set of the grammar holds both or neither.
  for (const std::string& schema :
       {std::string(R"({"type":"object","properties":{"s":{"type":"string","maxLength":3},)"
                    R"("d":{"type":"string","format":"date-time"},"n":{"type":"number"}}})"),
        std::string(R"({"type":"string","pattern":"^[a-f0-9]{2}é\\d$"})")}) {
    auto g = Schema(schema);
    ASSERT_NE(g, nullptr);
    ByteSet seen;
    for (int c = 0; c < g->byte_class_count(); ++c) {
      for (int b = 0; b < 256; ++b) {
        if (!g->class_bytes(c).Has(static_cast<uint8_t>(b))) continue;
        EXPECT_FALSE(seen.Has(static_cast<uint8_t>(b))) << "byte " << b << " in two classes";
        seen.Add(static_cast<uint8_t>(b));
        EXPECT_EQ(g->byte_class(static_cast<uint8_t>(b)), c);
      }
    }
    EXPECT_EQ(seen, ByteSet::All());
    // Class count: more than the few a JSON grammar could get away with, fewer than bytes.
    EXPECT_GT(g->byte_class_count(), 8);
    EXPECT_LT(g->byte_class_count(), 256);
    for (int64_t p = 0; p < g->positions(); ++p) {
      if (g->at(static_cast<int32_t>(p)).op != Grammar::Op::kBytes) continue;
      const ByteSet& set = g->byte_set(g->at(static_cast<int32_t>(p)).index);
      for (int a = 0; a < 256; ++a) {
        for (int b = a + 1; b < 256; ++b) {
          if (g->byte_class(static_cast<uint8_t>(a)) != g->byte_class(static_cast<uint8_t>(b))) {
            continue;
          }
          ASSERT_EQ(set.Has(static_cast<uint8_t>(a)), set.Has(static_cast<uint8_t>(b)))
              << "bytes " << a << " and " << b << " share a class but not byte set " << p;
        }
      }
    }
  }
}

TEST(GrammarMatcherTest, LongTokensInBoundedStringsMatchBruteForce) {
  // Runs of one state chain (a string's length bound) let the mask take a subtree whole;
  // tokens longer than what is left, or ending the string, must still be told apart.
  std::vector<std::string> vocab = {"\"", "\"}", "\",", "a\"", "ab\"}"};
  std::string run;
  for (int n = 1; n <= 60; ++n) {
    run += static_cast<char>('a' + n % 26);
    vocab.push_back(run);
    vocab.push_back(run + "\"");
    vocab.push_back(std::string(static_cast<size_t>(n), ' '));
    vocab.push_back("é" + run);
  }
  auto trie = TokenTrie::FromBytes(vocab);
  auto g = Schema(R"({"type":"object","properties":{"s":{"type":"string","minLength":2,)"
                  R"("maxLength":50}},"required":["s"],"additionalProperties":false})");
  ASSERT_NE(g, nullptr);
  for (int prefix = 0; prefix <= 52; ++prefix) {
    GrammarMatcher m(g);
    ASSERT_TRUE(m.Accept(R"({"s":")"));
    if (!m.Accept(std::string(static_cast<size_t>(prefix), 'x'))) {
      EXPECT_GT(prefix, 50);
      continue;
    }
    std::vector<uint64_t> mask((trie->vocab_size() + 63) / 64);
    m.FillMask(*trie, mask);
    ASSERT_EQ(mask, BruteForceMask(m, *trie)) << "after " << prefix << " characters";
  }
}

// Where a state's run of plain characters stops, the slices are exact only if no plain
// character can follow; these grammars end runs every way (a bound, another state taking plain
// characters, ASCII only, a loop, several states for different plain bytes), with plain
// tokens of every length in both slices and past their cap.
TEST(GrammarMatcherTest, PlainSlicesMatchBruteForceWhereverARunStops) {
  std::vector<std::string> vocab = {"\"", "x",    "x\"",  "é\"",      "\\",
                                    "\n", "\x7F", "\xC3", "a\xE2\x82"};
  std::string ascii, multibyte;
  for (int n = 1; n <= 52; ++n) {
    ascii += static_cast<char>('a' + n % 7);
    multibyte += n % 3 == 0 ? "日" : (n % 3 == 1 ? "é" : "q");
    vocab.push_back(ascii);
    vocab.push_back(multibyte);
    vocab.push_back(ascii + "\"");
    vocab.push_back(std::string(static_cast<size_t>(n), 'x'));
  }
  for (int b = 0x20; b < 0x7F; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  auto trie = TokenTrie::FromBytes(vocab);
  const std::vector<std::string> grammars = {
      R"(root ::= [^"\\]{0,9} "\"")",                 // bounded, any character
      R"(root ::= [^"\\]* "\"")",                     // a loop
      R"(root ::= [ !#-[\]-~]{2,7} "\"")",            // plain ASCII only
      R"(root ::= [a-z ]{0,4} "x"{0,3} "\"")",        // after the run, another plain byte
      R"(root ::= [^"\\]{0,3} [a-c]* "\"")",          // after the run, a loop of some bytes
      R"(root ::= ("ab" | [c-z]) [^"\\]{0,5} "\"")",  // plain bytes to different states
      R"(root ::= [^"\\]{3} "é" "\"")",               // after the run, a multi-byte one
      R"(root ::= [^"\\]{0,60} "\"")"};               // past the slices' cap
  std::mt19937 rng(11);
  for (const std::string& source : grammars) {
    auto g = Shared(ParseGbnf(source, {}));
    ASSERT_NE(g, nullptr) << source;
    for (int walk = 0; walk < 6; ++walk) {
      GrammarMatcher m(g);
      for (int step = 0; step < 12; ++step) {
        std::vector<uint64_t> mask((trie->vocab_size() + 63) / 64);
        m.FillMask(*trie, mask);
        ASSERT_EQ(mask, BruteForceMask(m, *trie)) << source << " walk " << walk << " step " << step;
        std::vector<int> allowed;
        for (int id = 0; id < trie->vocab_size(); ++id) {
          if ((mask[id / 64] >> (id % 64)) & 1) allowed.push_back(id);
        }
        if (allowed.empty()) break;
        ASSERT_TRUE(m.Accept(trie->token_bytes(allowed[rng() % allowed.size()])));
      }
    }
  }
}

TEST(GrammarMatcherTest, MasksEqualBruteForceAlongRandomWalks) {
  // A small vocabulary with single bytes, words, JSON punctuation and multi-byte UTF-8.
  std::vector<std::string> vocab = {
      "", "\"", "{", "}", "{\"", "\":", ",\"", "\": \"", " ", "\n", "  ", "a", "ab", "abc", "name",
      "\"name\"", "1", "12", "0", "-", ".", "e", "true", "null", "[", "]", "é", "\xC3", "\xA9",
      "\xE2\x82", "\xAC", "\\", "\\n", "\\\"", "x\"", "\"}",
      // Subtrees judged by characters: whole ones, ones longer than a bounded string's rest,
      // ones that close the string, and invalid UTF-8 (an overlong form, a surrogate).
      "éé", "éa", "aé", "abé\"", "éééé", "abcdefgh", "日本語", "日本\"", "é\\n", "ab\"}",
      "\xC0\x80", "\xED\xA0\x80", "a\xC3"};
  for (int b = 0; b < 256; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  auto trie = TokenTrie::FromBytes(vocab);
  const std::vector<std::string> schemas = {
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":4},"n":{"type":"integer","minimum":-5,"maximum":300}},"required":["name"]})",
      R"({"type":"array","items":{"anyOf":[{"type":"number"},{"type":"boolean"},{"type":"null"}]}})",
      R"({"type":"string","pattern":"é+\\d"})",
      R"({"type":"array","items":{"type":"string","minLength":1,"maxLength":6}})"};
  std::mt19937 rng(7);
  for (const std::string& schema : schemas) {
    auto g = Schema(schema);
    ASSERT_NE(g, nullptr);
    for (int walk = 0; walk < 8; ++walk) {
      GrammarMatcher m(g);
      for (int step = 0; step < 30; ++step) {
        std::vector<uint64_t> mask((trie->vocab_size() + 63) / 64);
        m.FillMask(*trie, mask);
        ASSERT_EQ(mask, BruteForceMask(m, *trie)) << schema << " step " << step;
        std::vector<int> allowed;
        for (int id = 0; id < trie->vocab_size(); ++id) {
          if ((mask[id / 64] >> (id % 64)) & 1) allowed.push_back(id);
        }
        if (allowed.empty()) {
          EXPECT_TRUE(m.complete());
          break;
        }
        const int pick = allowed[rng() % allowed.size()];
        ASSERT_TRUE(m.Accept(trie->token_bytes(pick)));
      }
    }
  }
}

TEST(ConstraintCompilerTest, CachesByContentAndNamesItsLimits) {
  ConstraintCompiler compiler(ConstraintLimits{.max_text_bytes = 64, .cache_entries = 1});
  const ConstraintSpec spec{ConstraintKind::kRegex, "[a-z]+"};
  absl::StatusOr<CompiledConstraint> first = compiler.Compile(spec);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->from_cache);
  absl::StatusOr<CompiledConstraint> again = compiler.Compile(spec);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_cache);
  EXPECT_EQ(again->grammar, first->grammar);
  ASSERT_TRUE(compiler.Compile({ConstraintKind::kRegex, "[0-9]+"}).ok());  // evicts the first
  EXPECT_FALSE(compiler.Compile(spec)->from_cache);
  absl::StatusOr<CompiledConstraint> big =
      compiler.Compile({ConstraintKind::kJsonSchema, std::string(65, ' ')});
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(big.status().message(),
            "the json_schema is 65 bytes, over the limit of 64 (--max-constraint-bytes)");
  ConstraintCompiler small(ConstraintLimits{.max_grammar_symbols = 50});
  absl::StatusOr<CompiledConstraint> huge = small.Compile({ConstraintKind::kRegex, "a{40}b{40}"});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(huge.status().message(), "(--max-grammar-symbols)"))
      << huge.status();
}

// Specs that differ in any part of their framing compile to different grammars, never one
// taken from the cache for the other.
TEST(ConstraintCompilerTest, EveryPartOfTheFramingIsPartOfTheKey) {
  ConstraintCompiler compiler({});
  ConstraintSpec base{ConstraintKind::kJsonSchema,
                      R"({"anyOf":[{"type":"integer"},{"type":"boolean"}]})"};
  std::vector<ConstraintSpec> specs(7, base);
  specs[1].framing.max_leading_whitespace = 4;
  // Marked as control tokens are (text cannot hold 0xFF), so a section's text cannot close it.
  specs[2].framing.section_open = "\xFF<t>";
  specs[2].framing.section_close = "\xFF</t>";
  specs[2].framing.max_sections = 1;
  specs[3] = specs[2];
  specs[3].framing.max_sections = 2;
  specs[4].framing.before_branch = {"i:", "b:"};
  specs[5].framing.before_branch = {"i:", "c:"};
  specs[6].framing.before = "x";
  for (const ConstraintSpec& spec : specs) {
    absl::StatusOr<CompiledConstraint> compiled = compiler.Compile(spec);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_FALSE(compiled->from_cache);
  }
  // And what they accept: sections of any text before the document, a branch after its text.
  const auto accepts = [&](const ConstraintSpec& spec, std::string_view text) {
    GrammarMatcher m(compiler.Compile(spec)->grammar);
    return m.Accept(text) && m.complete();
  };
  EXPECT_TRUE(accepts(specs[2], "\xFF<t>any «text» {</t>\xFF</t>12"));
  EXPECT_TRUE(accepts(specs[3], "\xFF<t>a\xFF</t>\xFF<t>b\xFF</t>true"));
  EXPECT_FALSE(accepts(specs[2], "\xFF<t>a\xFF</t>\xFF<t>b\xFF</t>true"));
  EXPECT_TRUE(accepts(specs[2], "12"));
  EXPECT_TRUE(accepts(specs[4], "i:12"));
  EXPECT_TRUE(accepts(specs[4], "b:true"));
  EXPECT_FALSE(accepts(specs[4], "i:true"));
  EXPECT_FALSE(accepts(specs[4], "b:12"));
  ConstraintSpec mismatched = specs[4];
  mismatched.framing.before_branch = {"only one"};
  EXPECT_EQ(compiler.Compile(mismatched).status().code(), absl::StatusCode::kInvalidArgument);
}

// A tokenizer of explicit pieces, some of them control tokens (printed or not).
class PieceTokenizer : public Tokenizer {
 public:
  PieceTokenizer(std::vector<std::string> pieces, std::vector<int> control,
                 std::vector<int> printed)
      : pieces_(std::move(pieces)), control_(std::move(control)), printed_(std::move(printed)) {}
  std::vector<int> Encode(std::string_view, bool) const override { return {}; }
  std::vector<int> EncodeWithSpecialTokens(std::string_view, bool,
                                           std::span<const TextRange>) const override {
    return {};
  }
  std::string TokenBytes(int id, int) const override {
    if (IsControl(id) && std::find(printed_.begin(), printed_.end(), id) == printed_.end()) {
      return "";
    }
    return pieces_[id];
  }
  bool IsControl(int id) const override {
    return std::find(control_.begin(), control_.end(), id) != control_.end();
  }
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  int bos_id() const override { return -1; }
  int eos_id() const override { return 3; }
  const std::vector<int>& end_of_generation_ids() const override { return eog_; }
  std::string TokenText(int id) const override { return pieces_[id]; }

 private:
  std::vector<std::string> pieces_;
  std::vector<int> control_, printed_;
  std::vector<int> eog_ = {3};
};

// The slices hold whole plain characters by count; everything else stays in the walked tries.
TEST(TokenTrieTest, PlainSlicesHoldWholePlainCharactersByCount) {
  const std::vector<std::string> vocab = {"ab",
                                          "a b",
                                          "a\"",
                                          "a\\",
                                          "\t",
                                          "\x7F",
                                          "é",
                                          "aé日",
                                          "\xC3",
                                          "\xC3\xA9\xC3",
                                          "\xED\xA0\x80",
                                          std::string(48, 'z'),
                                          std::string(49, 'z'),
                                          "",
                                          "~"};
  auto trie = TokenTrie::FromBytes(vocab);
  const auto has = [](std::span<const uint64_t> bits, int id) {
    return ((bits[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) != 0;
  };
  const auto ids = [&](std::span<const uint64_t> bits) {
    std::vector<int> out;
    for (int id = 0; id < trie->vocab_size(); ++id) {
      if (has(bits, id)) out.push_back(id);
    }
    return out;
  };
  EXPECT_EQ(ids(trie->plain_ascii_up_to(1)), (std::vector<int>{14}));
  EXPECT_EQ(ids(trie->plain_ascii_up_to(3)), (std::vector<int>{0, 1, 14}));
  EXPECT_EQ(ids(trie->plain_ascii_up_to(TokenTrie::kMaxPlainChars)),
            (std::vector<int>{0, 1, 11, 14}));
  EXPECT_EQ(ids(trie->plain_multibyte_up_to(1)), (std::vector<int>{6}));
  EXPECT_EQ(trie->max_plain_multibyte_chars(), 3);
  EXPECT_EQ(ids(trie->plain_multibyte_up_to(3)), (std::vector<int>{6, 7}));
  // The walked tries: neither slice (quote, backslash, controls, partial or invalid UTF-8, too
  // long), and that plus the multi-byte slice.
  const auto spelled = [](const TokenTrie& t) {
    std::vector<int> out(t.order().begin(), t.order().end());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(spelled(*trie->rest()), (std::vector<int>{2, 3, 4, 5, 8, 9, 10, 12}));
  EXPECT_EQ(spelled(*trie->rest_with_multibyte()),
            (std::vector<int>{2, 3, 4, 5, 6, 7, 8, 9, 10, 12}));
  EXPECT_EQ(trie->rest()->rest(), nullptr);
}

// Printed control tokens (harmony's tags) enter the trie behind the 0xFF mark, so a grammar
// allows one only where it spells it so; text, byte tokens 0xFF included, never writes it.
TEST(TokenTrieTest, PrintedControlTokensAreSpelledApartFromText) {
  const PieceTokenizer tokenizer(
      {"<|channel|>", "<|", "channel|>", "<|return|>", "\xFF", "a\xFF", "x"},
      /*control=*/{0, 3}, /*printed=*/{0});
  auto trie = TokenTrie::Build(tokenizer);
  EXPECT_EQ(trie->token_bytes(0), TokenTrie::ControlTokenBytes("<|channel|>"));
  EXPECT_EQ(trie->token_bytes(0), "\xFF<|channel|>");
  EXPECT_EQ(trie->token_bytes(3), "");  // an end token, not printed
  EXPECT_EQ(trie->token_bytes(4), "");  // would spell the mark
  EXPECT_EQ(trie->token_bytes(5), "");
  EXPECT_EQ(trie->token_bytes(1), "<|");
  const auto mask = [&](const ConstraintSpec& spec) {
    ConstraintCompiler compiler({});
    GrammarMatcher m(compiler.Compile(spec)->grammar);
    std::vector<uint64_t> bits(1);
    m.FillMask(*trie, bits);
    return bits[0];
  };
  // Inside a JSON string "<|channel|>" is text: only the text tokens may write it.
  ConstraintSpec string{ConstraintKind::kRegex, "<\\|channel\\|>x"};
  EXPECT_EQ(mask(string), uint64_t{1} << 1);
  // Spelled as the trie spells it, only the control token.
  ConstraintSpec tag{ConstraintKind::kJsonSchema, R"({"type":"integer"})"};
  tag.framing.before = TokenTrie::ControlTokenBytes("<|channel|>");
  EXPECT_EQ(mask(tag), uint64_t{1} << 0);
}

}  // namespace
}  // namespace textgen::model
