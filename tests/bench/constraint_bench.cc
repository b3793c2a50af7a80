// Token-mask cost of structured output on a real vocabulary: compiles ten ordinary schemas (and
// JSON mode), then walks each grammar the way a sampler would (a seeded random allowed token
// per step, finishing when the grammar allows the end) and times every mask.
//
//   textgen-bench-constraint --vocab ggml-vocab-llama-bpe.gguf [--walks 20] [--steps 256]
//                            [--schema NAME]
//
// Prints one JSON object per schema: compile ms, mask p50 / p99 / max in microseconds, steps.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/constraint/constraint.h"
#include "model/constraint/grammar_matcher.h"
#include "model/constraint/token_trie.h"
#include "model/format/gguf_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace {

using textgen::model::ConstraintKind;
using textgen::model::ConstraintSpec;

struct Case {
  const char* name;
  ConstraintSpec spec;
};

std::vector<Case> Cases() {
  return {
      {"enum",
       {ConstraintKind::kJsonSchema,
        R"({"type":"object","properties":{"sentiment":{"enum":["positive","negative","neutral"]}},"required":["sentiment"],"additionalProperties":false})"}},
      {"bounded",
       {ConstraintKind::kJsonSchema,
        R"({"type":"object","properties":{"age":{"type":"integer","minimum":0,"maximum":150},"name":{"type":"string","minLength":1,"maxLength":40}},"required":["age","name"],"additionalProperties":false})"}},
      {"nested",
       {ConstraintKind::kJsonSchema,
        R"({"type":"object","properties":{"user":{"type":"object","properties":{"id":{"type":"integer"},"email":{"type":"string","format":"email"}},"required":["id","email"],"additionalProperties":false},"active":{"type":"boolean"}},"required":["user","active"],"additionalProperties":false})"}},
      {"array",
       {ConstraintKind::kJsonSchema,
        R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":5}},"required":["items"],"additionalProperties":false})"}},
      {"defs_ref",
       {ConstraintKind::kJsonSchema,
        R"({"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"],"additionalProperties":false}},"type":"object","properties":{"a":{"$ref":"#/$defs/point"},"b":{"$ref":"#/$defs/point"}},"required":["a","b"],"additionalProperties":false})"}},
      {"any_of",
       {ConstraintKind::kJsonSchema,
        R"({"type":"object","properties":{"value":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}},"required":["value"],"additionalProperties":false})"}},
      {"prefix_items",
       {ConstraintKind::kJsonSchema,
        R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"},{"type":"boolean"}],"items":false,"minItems":3})"}},
      {"optional",
       {ConstraintKind::kJsonSchema,
        R"({"type":"object","properties":{"title":{"type":"string"},"year":{"type":"integer"},"rating":{"type":"number"},"genre":{"type":"string"}},"required":["title"],"additionalProperties":false})"}},
      {"recursive",
       {ConstraintKind::kJsonSchema,
        R"({"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name","children"],"additionalProperties":false}},"$ref":"#/$defs/node"})"}},
      {"formats",
       {ConstraintKind::kJsonSchema, R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"when":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"}},"required":["id","when","day"],"additionalProperties":false})"}},
      {"json_object", {ConstraintKind::kJsonObject, ""}},
  };
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string vocab, only;
  std::vector<std::string> grammars;
  int walks = 20, steps = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--vocab")) vocab = argv[i + 1];
    if (!std::strcmp(argv[i], "--walks")) walks = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--schema")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--grammar")) grammars.push_back(argv[i + 1]);
  }
  if (vocab.empty()) {
    std::fprintf(stderr,
                 "usage: textgen-bench-constraint --vocab FILE.gguf [--walks N] [--steps N] "
                 "[--schema NAME] [--grammar FILE.gbnf]...\n"
                 "  --grammar: GBNF files measured instead of the built-in schemas\n");
    return 2;
  }
  std::vector<Case> cases = Cases();
  std::vector<std::string> names;  // the cases' names point into it
  if (!grammars.empty()) {
    cases.clear();
    names.reserve(grammars.size());
    for (const std::string& path : grammars) {
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
      }
      std::stringstream text;
      text << in.rdbuf();
      names.push_back(std::filesystem::path(path).filename().string());
      cases.push_back({names.back().c_str(), {ConstraintKind::kGrammar, text.str()}});
    }
  }
  auto data = textgen::model::ReadGgufVocabularyFile(vocab);
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", std::string(data.status().message()).c_str());
    return 1;
  }
  auto tokenizer = textgen::model::CreateTokenizer(std::move(*data));
  if (!tokenizer.ok()) return 1;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto trie = textgen::model::TokenTrie::Build(**tokenizer);
  const double trie_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("{\"vocab\": %d, \"trie_nodes\": %zu, \"trie_build_ms\": %.1f}\n", trie->vocab_size(),
              trie->nodes().size(), trie_ms);
  for (const Case& c : cases) {
    if (!only.empty() && only != c.name) continue;
    textgen::model::ConstraintCompiler compiler({});
    const auto c0 = Clock::now();
    auto compiled = compiler.Compile(c.spec);
    const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
    if (!compiled.ok()) {
      std::printf("{\"schema\": \"%s\", \"error\": \"%s\"}\n", c.name,
                  std::string(compiled.status().message()).c_str());
      continue;
    }
    std::vector<double> micros;
    std::vector<uint64_t> mask((trie->vocab_size() + 63) / 64);
    std::mt19937 rng(1);
    int finished = 0;
    for (int w = 0; w < walks; ++w) {
      textgen::model::GrammarMatcher matcher(compiled->grammar);
      for (int s = 0; s < steps; ++s) {
        const auto m0 = Clock::now();
        matcher.FillMask(*trie, mask);
        micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - m0).count());
        if (matcher.complete() && (rng() % 4 == 0 || !matcher.can_continue())) {
          ++finished;
          break;
        }
        std::vector<int> allowed;
        for (size_t i = 0; i < mask.size(); ++i) {
          for (uint64_t bits = mask[i]; bits != 0; bits &= bits - 1) {
            allowed.push_back(static_cast<int>(i * 64 + __builtin_ctzll(bits)));
          }
        }
        if (allowed.empty()) break;
        matcher.Accept(trie->token_bytes(allowed[rng() % allowed.size()]));
      }
    }
    std::printf(
        "{\"schema\": \"%s\", \"compile_ms\": %.3f, \"mask_p50_us\": %.1f, \"mask_p90_us\": %.1f, "
        "\"mask_p99_us\": %.1f, "
        "\"mask_max_us\": %.1f, \"masks\": %zu, \"walks_finished\": %d}\n",
        c.name, compile_ms, Percentile(micros, 0.5), Percentile(micros, 0.9),
        Percentile(micros, 0.99), Percentile(micros, 1.0), micros.size(), finished);
  }
  return 0;
}
