// libFuzzer targets over the constraint compilers: the input is a schema (TEXTGEN_FUZZ_SCHEMA)
// or a GBNF grammar (otherwise), then NUL, then bytes fed to a matcher of what compiled. Any
// input must give a grammar or a clean refusal, and the matcher must never fail on its own
// (a limit) for these small inputs; every mask must equal the brute-force one.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "model/constraint/gbnf.h"
#include "model/constraint/grammar_matcher.h"
#include "model/constraint/json_schema.h"
#include "model/constraint/token_trie.h"

namespace {

// A small vocabulary: every byte, JSON pieces, and multi-byte UTF-8 pieces (whole, partial,
// closing a string, invalid), so masks take every path of the trie walk.
std::shared_ptr<const textgen::model::TokenTrie> Vocabulary() {
  static const auto* trie = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t :
         {"{\"",    "\":",      "\"",   ", \"",      "true",     "null",        "12",
          "ab",     "\n  ",     "é",    "éé",        "aé",       "ab\"",        "日本",
          "日本\"", "abcdefgh", "\xC3", "a\xE2\x82", "\xC0\x80", "\xED\xA0\x80"}) {
      tokens.push_back(t);
    }
    return new std::shared_ptr<const textgen::model::TokenTrie>(
        textgen::model::TokenTrie::FromBytes(tokens));
  }();
  return *trie;
}

// Every token whose bytes the matcher accepts one by one: what FillMask must equal (unless a
// limit tripped on the way, after which nothing is allowed).
void CheckMask(textgen::model::GrammarMatcher& matcher, const std::vector<uint64_t>& mask) {
  const textgen::model::TokenTrie& trie = *Vocabulary();
  std::vector<uint64_t> brute(mask.size());
  for (int id = 0; id < trie.vocab_size(); ++id) {
    if (matcher.CanAccept(trie.token_bytes(id))) brute[id / 64] |= uint64_t{1} << (id % 64);
  }
  if (matcher.status().ok() && brute != mask) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  std::string_view feed = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  textgen::model::GrammarLimits small{.max_positions = 200000};
#ifdef TEXTGEN_FUZZ_SCHEMA
  // A feed that opens with the control-token mark frames the document as a harmony reply does
  // (free-text sections behind marked tags, then a marked header).
  // One that opens with 0xFE writes the schema as a tool's qwen3-coder XML parameters: the
  // schema becomes the only branch of a root anyOf.
  textgen::model::JsonFraming framing;
  std::string schema(source);
  if (!feed.empty() && feed[0] == '\xFF') {
    framing.section_open = "\xFF<s>";
    framing.section_close = "\xFF</s>";
    framing.max_sections = 2;
    framing.before = "\xFF<h>";
  } else if (!feed.empty() && feed[0] == '\xFE') {
    framing.before_branch = {"<function=f>\n"};
    framing.arguments = textgen::model::JsonFraming::Arguments::kXmlParameters;
    schema = "{\"anyOf\": [" + schema + "]}";
    feed.remove_prefix(1);  // the mark is not part of the document
  }
  auto grammar = textgen::model::CompileJsonSchema(
      schema, textgen::model::JsonSchemaLimits{.max_length_bound = 256, .grammar = small}, framing);
#else
  auto grammar = textgen::model::ParseGbnf(
      source, textgen::model::GbnfLimits{.max_repeat = 256, .grammar = small});
#endif
  if (!grammar.ok()) return 0;
  auto shared = std::make_shared<const textgen::model::Grammar>(std::move(*grammar));
  textgen::model::GrammarMatcher matcher(shared);
  std::vector<uint64_t> mask((Vocabulary()->vocab_size() + 63) / 64);
  matcher.FillMask(*Vocabulary(), mask);
  CheckMask(matcher, mask);
  for (size_t i = 0; i < feed.size() && i < 64; ++i) {
    if (!matcher.Accept(feed.substr(i, 1))) break;
    if (i % 8 == 0) {
      matcher.FillMask(*Vocabulary(), mask);
      CheckMask(matcher, mask);
    }
  }
  (void)matcher.complete();
  return 0;
}
