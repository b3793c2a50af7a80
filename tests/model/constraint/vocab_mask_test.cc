// Token masks on real vocabularies (llama.cpp's models/ggml-vocab-{llama-bpe,qwen2,llama-spm}
// .gguf: 128k, 152k and 32k tokens): along seeded random walks through JSON Schema and GBNF
// grammars, every mask equals the set of tokens found by trying each token's bytes against
// the grammar. Needs TEXTGEN_LLAMACPP_MODELS_DIR (the ctest fixture fetches llama.cpp's
// source).

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "model/constraint/gbnf.h"
#include "model/constraint/grammar_matcher.h"
#include "model/constraint/json_schema.h"
#include "model/constraint/token_trie.h"
#include "model/format/gguf_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace textgen::model {
namespace {

std::filesystem::path ModelsDir() {
  const char* env = std::getenv("TEXTGEN_LLAMACPP_MODELS_DIR");
  return env != nullptr ? env : "";
}

class VocabMaskTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabMaskTest, MasksEqualBruteForce) {
  const std::filesystem::path path = ModelsDir() / ("ggml-vocab-" + GetParam() + ".gguf");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " (set TEXTGEN_LLAMACPP_MODELS_DIR)";
  absl::StatusOr<TokenizerData> data = ReadGgufVocabularyFile(path.string());
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = CreateTokenizer(*std::move(data));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto trie = TokenTrie::Build(**tokenizer);
  std::vector<absl::StatusOr<Grammar>> grammars;
  grammars.push_back(CompileJsonSchema(
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},)"
      R"("tags":{"type":"array","items":{"enum":["a","é","日本"]}},"n":{"type":"number"}},)"
      R"("required":["name"]})"));
  grammars.push_back(
      ParseGbnf("root ::= (\"- \" [^\\n]{1,30} \"\\n\")+ | [0-9]+ \".\" [0-9]{2}\n"));
  // Bounded runs (a string's characters left, a repetition's count) reach their end here:
  // the masks near it take the subtree-by-length shortcut.
  grammars.push_back(CompileJsonSchema(
      R"({"type":"object","properties":{"code":{"type":"string","minLength":2,"maxLength":5},)"
      R"("note":{"type":"string","maxLength":40}},"required":["code","note"]})"));
  std::mt19937 rng(11);
  std::vector<uint64_t> mask((trie->vocab_size() + 63) / 64);
  int compared = 0;
  for (auto& grammar : grammars) {
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    auto shared = std::make_shared<const Grammar>(std::move(*grammar));
    for (int walk = 0; walk < 3; ++walk) {
      GrammarMatcher matcher(shared);
      for (int step = 0; step < 24; ++step) {
        matcher.FillMask(*trie, mask);
        std::vector<int> allowed;
        for (int id = 0; id < trie->vocab_size(); ++id) {
          const bool in_mask = (mask[id / 64] >> (id % 64)) & 1;
          const std::string& bytes = trie->token_bytes(id);
          const bool brute = !bytes.empty() && matcher.CanAccept(bytes);
          ASSERT_EQ(in_mask, brute) << "token " << id << " [" << bytes << "] step " << step;
          if (in_mask) allowed.push_back(id);
          ++compared;
        }
        if (allowed.empty()) break;
        ASSERT_TRUE(matcher.Accept(trie->token_bytes(allowed[rng() % allowed.size()])));
      }
    }
  }
  EXPECT_GT(compared, trie->vocab_size() * 10);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, VocabMaskTest,
                         ::testing::Values("llama-bpe", "qwen2", "llama-spm"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace textgen::model
