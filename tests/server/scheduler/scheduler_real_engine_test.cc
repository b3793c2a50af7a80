// Exactness under batching with the real engine, on stories260K and on random-weight models of
// every other architecture: greedy and seeded sampling give exactly the same tokens alone, in a
// batch of 64 (with chunked prefill mixed in) and after a session prefix hit. Kept out of the
// TSan run (oneDNN/OpenMP are uninstrumented).

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/arch/architectures.h"
#include "model/constraint/constraint.h"
#include "model/constraint/grammar_matcher.h"
#include "model/format/model_loader.h"
#include "model/kernels/cpu_features.h"
#include "model/runtime/engine.h"
#include "model/tokenizer/tokenizer.h"
#include "server/scheduler/scheduler.h"
#include "tests/testing/fake_engine.h"
#include "tests/testing/shared_files.h"
#include "tests/testing/temp_files.h"
#include "tests/tools/random_gguf.h"

namespace textgen::server {
namespace {

using ::testing::ElementsAreArray;
using testing::RecordingSink;
using testing::Summarize;

std::string Stories260KPath() {
  return ::textgen::test_support::SharedModelPath("stories260K/stories260K.gguf");
}

// Remembers the largest batch, to show the batch test really batched, and counts drafted
// tokens, to show speculation really drafted.
class MaxBatchObserver : public SchedulerObserver {
 public:
  void OnStep(int batch_sequences, int, int, double) override {
    max_sequences = std::max(max_sequences.load(), batch_sequences);
  }
  void OnDraftVerified(int drafted, int accepted) override {
    drafted_tokens += drafted;
    accepted_tokens += accepted;
  }
  std::atomic<int> max_sequences{0};
  std::atomic<int> drafted_tokens{0};
  std::atomic<int> accepted_tokens{0};
};

// "stories260K" (the real model in ../shared), an architecture name: a random-weight model of
// it written here (head size 24, not dim / heads, where the architecture allows it), or
// "llama_Q4_K_M": a random quantized model with llama.cpp's Q4_K_M mix of types; mixtures of
// experts: "qwen3moe" and "gpt-oss" (8 experts, 2 per token), "llama_experts" (Mixtral's layout:
// 4 experts, 2 per token) and "qwen3moe_Q4_K_M" (quantized experts, f32 router).
// `seed` 1 is the model the tests run; another seed gives the same shapes and vocabulary with
// other weights (a draft model that is sometimes wrong).
absl::StatusOr<std::string> ModelFor(const std::string& name, uint64_t seed = 1) {
  if (name == "stories260K") return Stories260KPath();
  model::RandomModelSpec spec;
  if (name == "llama_Q4_K_M" || name == "qwen3moe_Q4_K_M") {
    // A quantized mix as llama.cpp writes it, through the integer kernels.
    spec = model::QuantizedModelSpec(model::DType::kQ4_K, /*k_quant_mix=*/true);
    if (name == "qwen3moe_Q4_K_M") {
      spec.architecture = model::Architecture::kQwen3Moe;
      spec.experts = 8, spec.experts_used = 2, spec.expert_hidden_dim = 256;
    }
  } else if (name == "llama_experts") {
    spec.experts = 4, spec.experts_used = 2;
    spec.tied_output = false;
  } else {
    const model::ArchitectureSpec* arch = model::FindArchitecture(name);
    if (arch == nullptr) return absl::NotFoundError(name);
    spec.architecture = arch->architecture;
    spec.head_dim = arch->learned_positions ? 0 : 24;
    if (arch->learned_positions) spec.n_kv_heads = spec.n_heads;
    spec.tied_output = false;
    if (arch->sliding.pattern > 0) spec.sliding_window = 7;  // shorter than the prompts
    if (arch->experts.required)
      spec.experts = 8, spec.experts_used = 2, spec.expert_hidden_dim = 48;
    // Hybrids: recurrent, attention, recurrent, attention (Nemotron-H's blocks: Mamba2, MLP,
    // attention, MLP, Mamba2, MLP).
    if (arch->recurrent_mixer != model::LayerMixer::kAttention) {
      spec.n_layers = arch->single_sublayer_blocks ? 6 : 4, spec.full_attention_interval = 2;
    }
  }
  spec.context_length = 512;
  spec.seed = seed;
  absl::StatusOr<model::GgufWriter> writer = model::BuildRandomModel(spec);
  if (!writer.ok()) return writer.status();
  const std::string path =
      test_support::TestTempPath(absl::StrCat("real_engine_", name, "_", seed, ".gguf"));
  if (absl::Status status = writer->WriteFile(path); !status.ok()) return status;
  return path;
}

const std::vector<std::string>& Prompts() {
  static const std::vector<std::string> prompts = {
      "Once upon a time", "Lily and Tom went to the park to play with a big red ball", "The cat",
      "One day, a little girl named Sue found a shiny stone in the garden. She"};
  return prompts;
}

// Requests that speculation must not change: greedy and seeded sampling, end tokens after
// min_new_tokens, a JSON Schema constraint, then (added by SpeculationBaseline) a stop string
// and a stop token from the middle of a plain answer.
struct SpeculationCases {
  std::vector<ValidatedRequest> requests;
  std::vector<testing::Outcome> plain;  // each request's answer without speculation
};

class RealEngineSchedulerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> model_path = ModelFor(GetParam());
    ASSERT_TRUE(model_path.ok()) << model_path.status();
    const std::string& path = *model_path;
    TEXTGEN_REQUIRE_SHARED_FILE(path);  // only stories260K comes from ../shared
    absl::StatusOr<model::LoadedModel> loaded = model::LoadModel(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    model_ = std::make_unique<model::LoadedModel>(*std::move(loaded));
    absl::StatusOr<std::unique_ptr<model::Tokenizer>> tok =
        model::CreateTokenizer(model_->tokenizer);
    ASSERT_TRUE(tok.ok()) << tok.status();
    tokenizer_ = *std::move(tok);
    model_path_ = path;
    StartEngine("");
  }
  void TearDown() override { scheduler_.reset(); }
  bool IsHybrid() const { return model_->config.has_recurrent_layers(); }

  // A fresh engine and scheduler (a "restart"); with `kv_dir`, its KV cache keeps blocks there;
  // with `draft`, speculation's draft model.
  void StartEngine(const std::string& kv_dir, SpeculationOptions speculation = {},
                   bool bf16 = false, const model::LoadedModel* draft = nullptr) {
    scheduler_.reset();
    engine_.reset();
    draft_engine_.reset();
    model::EngineOptions engine_options;
    engine_options.bf16 = bf16;
    engine_options.threads = 1;
    engine_options.kv_cache_bytes = int64_t{64} << 20;
    engine_options.max_batch_tokens = 512;
    absl::StatusOr<std::unique_ptr<model::Engine>> engine =
        model::Engine::Create(*model_, engine_options);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    if (draft != nullptr) {
      absl::StatusOr<std::unique_ptr<model::Engine>> draft_engine =
          model::Engine::Create(*draft, engine_options);
      ASSERT_TRUE(draft_engine.ok()) << draft_engine.status();
      draft_engine_ = *std::move(draft_engine);
    }
    if (!kv_dir.empty()) {
      model::KvCache& cache = engine_->kv_cache();
      absl::StatusOr<model::BlockKey> name_space =
          model::KvDiskNamespace(model_path_, cache.layout(), "f32");
      ASSERT_TRUE(name_space.ok()) << name_space.status();
      absl::StatusOr<std::unique_ptr<model::KvDiskTier>> tier =
          model::KvDiskTier::Open({.dir = kv_dir,
                                   .max_bytes = int64_t{1} << 30,
                                   .name_space = *name_space,
                                   .block_bytes = cache.block_bytes(),
                                   .warn = nullptr});
      ASSERT_TRUE(tier.ok()) << tier.status();
      cache.AttachDiskTier(*std::move(tier));
      if (cache.has_recurrent_state()) {  // the state snapshots, as the server keeps them
        absl::StatusOr<std::unique_ptr<model::KvDiskTier>> state_tier =
            model::KvDiskTier::Open({.dir = kv_dir,
                                     .max_bytes = int64_t{1} << 30,
                                     .name_space = model::KvStateNamespace(
                                         *name_space, cache.layout().recurrent_state_bytes),
                                     .block_bytes = cache.layout().recurrent_state_bytes,
                                     .warn = nullptr});
        ASSERT_TRUE(state_tier.ok()) << state_tier.status();
        cache.AttachSnapshotTier(*std::move(state_tier));
      }
    }
    SchedulerOptions options;
    options.max_batch_sequences = 64;
    options.max_batch_tokens = 96;  // forces chunked prefill next to decodes in the batch
    options.speculation = speculation;
    scheduler_ = CreateBatchingScheduler(engine_.get(), tokenizer_.get(), options, &observer_,
                                         draft_engine_.get());
  }

  ValidatedRequest Make(const std::string& text, int variant, int max_new) {
    ValidatedRequest r;
    r.request_id = absl::StrCat("v", variant);
    r.prompt_tokens = tokenizer_->Encode(text, /*add_bos=*/true);
    r.stopping.max_new_tokens = max_new;
    r.stopping.ignore_eos = true;  // same length whatever is sampled
    if (variant % 2 == 0) {
      r.sampling.temperature = 0.0f;
    } else {
      r.sampling.temperature = 0.9f;
      r.sampling.top_p = 0.9f;
      r.sampling.seed = 1000 + variant;
    }
    return r;
  }
  // The request under a principal of its own: nothing it computes comes from the prefix cache
  // (scoped per principal), so it is the baseline cached runs must match bitwise.
  ValidatedRequest Cold(ValidatedRequest r) {
    r.principal = absl::StrCat("cold-", ++cold_principals_);
    r.session_id.clear();
    return r;
  }
  testing::Outcome Run(ValidatedRequest r) {
    auto sink = std::make_shared<RecordingSink>();
    EXPECT_TRUE(scheduler_->Submit(std::move(r), sink).ok());
    return Summarize(sink->Wait());
  }
  std::vector<int> RunAlone(ValidatedRequest r) {
    auto sink = std::make_shared<RecordingSink>();
    EXPECT_TRUE(scheduler_->Submit(std::move(r), sink).ok());
    testing::Outcome out = Summarize(sink->Wait());
    EXPECT_TRUE(out.error.ok()) << out.error;
    return out.tokens;
  }

  // The speculation cases and their answers without speculation (on the current engine).
  SpeculationCases SpeculationBaseline();
  // A session's two turns (the second resumes the first's K/V, drafts and all): all tokens.
  std::vector<int> TwoTurns(int variant) {
    ValidatedRequest first = Make(Prompts()[1], variant, 20);
    first.session_id = absl::StrCat("spec", variant);
    std::vector<int> turn1 = RunAlone(first);
    ValidatedRequest second = first;
    second.prompt_tokens.insert(second.prompt_tokens.end(), turn1.begin(), turn1.end());
    std::vector<int> more = tokenizer_->Encode(" And then?", /*add_bos=*/false);
    second.prompt_tokens.insert(second.prompt_tokens.end(), more.begin(), more.end());
    std::vector<int> turn2 = RunAlone(second);
    turn1.insert(turn1.end(), turn2.begin(), turn2.end());
    return turn1;
  }
  // Runs `requests` one at a time, then twice over all at once (side by side in one batch),
  // and compares each answer with `expected`.
  void ExpectSameOutcomes(const std::vector<ValidatedRequest>& requests,
                          const std::vector<testing::Outcome>& expected) {
    for (size_t i = 0; i < requests.size(); ++i) {
      const testing::Outcome out = Run(requests[i]);
      ASSERT_TRUE(out.error.ok()) << out.error;
      EXPECT_THAT(out.tokens, ElementsAreArray(expected[i].tokens)) << "case " << i;
      EXPECT_EQ(out.text, expected[i].text) << "case " << i;
      ASSERT_TRUE(out.finished && expected[i].finished);
      EXPECT_EQ(out.finished->reason, expected[i].finished->reason) << "case " << i;
    }
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    for (size_t i = 0; i < 2 * requests.size(); ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      ASSERT_TRUE(scheduler_->Submit(Cold(requests[i % requests.size()]), sinks.back()).ok());
    }
    for (size_t i = 0; i < sinks.size(); ++i) {
      const testing::Outcome out = Summarize(sinks[i]->Wait());
      ASSERT_TRUE(out.error.ok()) << out.error;
      EXPECT_THAT(out.tokens, ElementsAreArray(expected[i % requests.size()].tokens))
          << "batched case " << i;
    }
  }

  int cold_principals_ = 0;
  std::string model_path_;
  MaxBatchObserver observer_;
  std::unique_ptr<model::LoadedModel> model_;
  std::unique_ptr<model::Tokenizer> tokenizer_;
  std::unique_ptr<model::Engine> engine_;
  std::unique_ptr<model::Engine> draft_engine_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_P(RealEngineSchedulerTest, SameTokensAloneAndInABatchOf64) {
  constexpr int kNew = 24;
  std::vector<std::vector<int>> alone;  // [prompt * 2 + variant]
  for (int p = 0; p < 4; ++p) {
    for (int v = 0; v < 2; ++v) alone.push_back(RunAlone(Cold(Make(Prompts()[p], v, kNew))));
  }
  for (const auto& tokens : alone) ASSERT_EQ(tokens.size(), static_cast<size_t>(kNew));
  if (GetParam() == "stories260K") {
    EXPECT_NE(alone[0], alone[2]);  // different prompts, different stories
  }

  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 64; ++i) {
    const int config = i % 8;
    sinks.push_back(std::make_shared<RecordingSink>());
    ASSERT_TRUE(
        scheduler_->Submit(Make(Prompts()[config / 2], config % 2, kNew), sinks.back()).ok());
  }
  for (int i = 0; i < 64; ++i) {
    testing::Outcome out = Summarize(sinks[i]->Wait());
    ASSERT_TRUE(out.error.ok()) << out.error;
    EXPECT_THAT(out.tokens, ElementsAreArray(alone[i % 8])) << "request " << i;
  }
  EXPECT_GT(observer_.max_sequences.load(), 8);  // requests really shared forward passes
}

TEST_P(RealEngineSchedulerTest, SameTokensAfterASessionPrefixHit) {
  constexpr int kNew = 16;
  for (int v = 0; v < 2; ++v) {
    const std::string session = absl::StrCat("s", v);
    ValidatedRequest first = Make(Prompts()[3], v, kNew);
    first.session_id = session;
    std::vector<int> turn1 = RunAlone(first);
    // Turn 2 carries the whole conversation plus a new sentence.
    ValidatedRequest second = Make(Prompts()[3], v, kNew);
    second.prompt_tokens.insert(second.prompt_tokens.end(), turn1.begin(), turn1.end());
    std::vector<int> more = tokenizer_->Encode(" Then they went home.", /*add_bos=*/false);
    second.prompt_tokens.insert(second.prompt_tokens.end(), more.begin(), more.end());
    std::vector<int> expected = RunAlone(Cold(second));

    second.session_id = session;
    auto sink = std::make_shared<RecordingSink>();
    ASSERT_TRUE(scheduler_->Submit(second, sink).ok());
    testing::Outcome hit = Summarize(sink->Wait());
    ASSERT_TRUE(hit.finished) << hit.error;
    EXPECT_GE(hit.finished->usage.cached_tokens,
              static_cast<int>(first.prompt_tokens.size() + turn1.size()) - 1);
    EXPECT_THAT(hit.tokens, ElementsAreArray(expected)) << "variant " << v;
  }
}

// The agent workload: a stateless follow-up turn resends the conversation; it continues from
// the cached prefix the first turn left (for a recurrent model, the state snapshot at the last
// block boundary it passed) and answers bitwise as computed cold.
TEST_P(RealEngineSchedulerTest, StatelessFollowUpContinuesFromTheCachedConversation) {
  constexpr int kNew = 20;
  ValidatedRequest first = Make(Prompts()[3], 0, kNew);
  std::vector<int> turn1 = RunAlone(first);
  ValidatedRequest second = Make(Prompts()[3], 0, kNew);
  second.prompt_tokens.insert(second.prompt_tokens.end(), turn1.begin(), turn1.end());
  std::vector<int> more = tokenizer_->Encode(" Then they went home.", /*add_bos=*/false);
  second.prompt_tokens.insert(second.prompt_tokens.end(), more.begin(), more.end());
  std::vector<int> expected = RunAlone(Cold(second));
  testing::Outcome hit = Run(second);
  ASSERT_TRUE(hit.finished) << hit.error;
  // The first turn stored its prompt and all but its last token.
  const int stored = static_cast<int>(first.prompt_tokens.size() + turn1.size()) - 1;
  EXPECT_GE(hit.finished->usage.cached_tokens, stored / 16 * 16);
  EXPECT_THAT(hit.tokens, ElementsAreArray(expected));
}

// A JSON Schema constraint: every answer that ends by itself is valid, and a constrained
// request gives the same tokens alone or batched with unconstrained ones.
TEST_P(RealEngineSchedulerTest, ConstrainedOutputIsValidAndBatchInvariant) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<model::CompiledConstraint> compiled = compiler.Compile(
      {model::ConstraintKind::kJsonSchema,
       R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},)"
       R"("n":{"type":"integer","minimum":0,"maximum":99},"ok":{"type":"boolean"}},)"
       R"("required":["name","n"],"additionalProperties":false})"});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const auto trie = model::TokenTrie::Build(*tokenizer_);
  const auto constrained = [&](int p, int v) {
    ValidatedRequest r = Make(Prompts()[p], v, 160);
    r.stopping.ignore_eos = false;
    r.constraint.grammar = compiled->grammar;
    r.constraint.token_trie = trie;
    return r;
  };
  std::vector<testing::Outcome> alone;
  for (int p = 0; p < 4; ++p) {
    for (int v = 0; v < 2; ++v) {
      auto sink = std::make_shared<RecordingSink>();
      ASSERT_TRUE(scheduler_->Submit(constrained(p, v), sink).ok());
      alone.push_back(Summarize(sink->Wait()));
      const testing::Outcome& out = alone.back();
      ASSERT_TRUE(out.error.ok()) << out.error;
      ASSERT_TRUE(out.finished.has_value());
      if (out.finished->reason == FinishReason::kEos) {
        model::GrammarMatcher matcher(compiled->grammar);
        EXPECT_TRUE(matcher.Accept(out.text) && matcher.complete()) << out.text;
      } else {
        // Cut short: still a prefix of a valid answer.
        model::GrammarMatcher matcher(compiled->grammar);
        EXPECT_TRUE(matcher.Accept(out.text)) << out.text;
      }
    }
  }
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 16; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ValidatedRequest r =
        i % 2 == 0 ? constrained((i / 2) % 4, (i / 8) % 2) : Make(Prompts()[i % 4], 1, 24);
    ASSERT_TRUE(scheduler_->Submit(std::move(r), sinks.back()).ok());
  }
  for (int i = 0; i < 16; i += 2) {
    testing::Outcome out = Summarize(sinks[i]->Wait());
    ASSERT_TRUE(out.error.ok()) << out.error;
    const int p = (i / 2) % 4, v = (i / 8) % 2;
    EXPECT_THAT(out.tokens, ElementsAreArray(alone[p * 2 + v].tokens)) << "request " << i;
  }
  for (int i = 1; i < 16; i += 2) EXPECT_TRUE(Summarize(sinks[i]->Wait()).error.ok());
}

// A lazy constraint armed by a token id (a tag the vocabulary holds as one control token, which
// has no text): free until that token is sampled, then what follows matches the grammar.
TEST_P(RealEngineSchedulerTest, LazyConstraintStartsAtItsTriggerToken) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<model::CompiledConstraint> compiled =
      compiler.Compile({model::ConstraintKind::kRegex, "[^0-9]{0,16}[0-9]{2}!"});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const auto trie = model::TokenTrie::Build(*tokenizer_);
  int triggered = 0;
  for (int p = 0; p < 4; ++p) {
    // The trigger: a token the model writes unconstrained, a third of the way in.
    auto sink = std::make_shared<RecordingSink>();
    ASSERT_TRUE(scheduler_->Submit(Make(Prompts()[p], p % 2, 40), sink).ok());
    const std::vector<int> free = Summarize(sink->Wait()).tokens;
    ASSERT_FALSE(free.empty());
    // A third of the way in, before any end token (the constrained run stops at one).
    size_t ends = 0;
    while (ends < free.size() && !tokenizer_->IsEndOfGeneration(free[ends])) ++ends;
    ASSERT_GT(ends, 0u) << "prompt " << p << ": the free run ends at once";
    const int trigger = free[std::min(free.size() / 3, ends - 1)];
    ValidatedRequest r = Make(Prompts()[p], p % 2, 120);
    r.stopping.ignore_eos = false;
    r.constraint.grammar = compiled->grammar;
    r.constraint.token_trie = trie;
    r.constraint.trigger_token = trigger;
    sink = std::make_shared<RecordingSink>();
    ASSERT_TRUE(scheduler_->Submit(std::move(r), sink).ok());
    const testing::Outcome out = Summarize(sink->Wait());
    ASSERT_TRUE(out.error.ok()) << out.error;
    // Unconstrained up to the trigger: the same tokens as the free run.
    const auto at = std::find(out.tokens.begin(), out.tokens.end(), trigger);
    ASSERT_NE(at, out.tokens.end());
    EXPECT_TRUE(std::equal(out.tokens.begin(), at + 1, free.begin()));
    ++triggered;
    model::GrammarMatcher matcher(compiled->grammar);
    const std::string rest = tokenizer_->Decode(std::vector<int>(at + 1, out.tokens.end()));
    EXPECT_TRUE(matcher.Accept(rest)) << rest;
    if (out.finished->reason == FinishReason::kEos) {
      EXPECT_TRUE(matcher.complete()) << rest;
    }
  }
  EXPECT_EQ(triggered, 4);
}

// A lazy constraint: free until the output holds the trigger, then what follows matches the
// grammar; the same tokens alone or batched.
TEST_P(RealEngineSchedulerTest, LazyConstraintStartsAtItsTrigger) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<model::CompiledConstraint> compiled =
      compiler.Compile({model::ConstraintKind::kRegex, "[^0-9]{0,16}[0-9]{2}!"});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const auto trie = model::TokenTrie::Build(*tokenizer_);
  // The trigger: an ASCII letter the model writes unconstrained (so it comes up).
  std::vector<std::string> triggers;
  for (int p = 0; p < 4; ++p) {
    auto sink = std::make_shared<RecordingSink>();
    ValidatedRequest free = Make(Prompts()[p], p % 2, 40);
    ASSERT_TRUE(scheduler_->Submit(free, sink).ok());
    const std::string text = Summarize(sink->Wait()).text;
    std::string trigger = "e";
    for (size_t i = text.size() / 3; i < text.size(); ++i) {
      if (std::isalpha(static_cast<unsigned char>(text[i]))) {
        trigger = text.substr(i, 1);
        break;
      }
    }
    triggers.push_back(trigger);
  }
  const auto lazy = [&](int p, int v) {
    ValidatedRequest r = Make(Prompts()[p], v, 120);
    r.stopping.ignore_eos = false;
    r.constraint.grammar = compiled->grammar;
    r.constraint.token_trie = trie;
    r.constraint.trigger = triggers[p];
    return r;
  };
  int triggered = 0;
  std::vector<std::vector<int>> alone;
  for (int p = 0; p < 4; ++p) {
    auto sink = std::make_shared<RecordingSink>();
    ASSERT_TRUE(scheduler_->Submit(lazy(p, p % 2), sink).ok());
    const testing::Outcome out = Summarize(sink->Wait());
    ASSERT_TRUE(out.error.ok()) << out.error;
    alone.push_back(out.tokens);
    const size_t at = out.text.find(triggers[p]);
    if (at == std::string::npos) continue;
    ++triggered;
    model::GrammarMatcher matcher(compiled->grammar);
    const std::string rest = out.text.substr(at + 1);
    EXPECT_TRUE(matcher.Accept(rest)) << out.text;
    if (out.finished->reason == FinishReason::kEos) {
      EXPECT_TRUE(matcher.complete()) << out.text;
    }
  }
  EXPECT_GT(triggered, 0);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 8; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ValidatedRequest r = i % 2 == 0 ? lazy(i / 2, (i / 2) % 2) : Make(Prompts()[i % 4], 1, 24);
    ASSERT_TRUE(scheduler_->Submit(std::move(r), sinks.back()).ok());
  }
  for (int i = 0; i < 8; i += 2) {
    testing::Outcome out = Summarize(sinks[i]->Wait());
    ASSERT_TRUE(out.error.ok()) << out.error;
    EXPECT_THAT(out.tokens, ElementsAreArray(alone[i / 2])) << "request " << i;
  }
  for (int i = 1; i < 8; i += 2) EXPECT_TRUE(Summarize(sinks[i]->Wait()).error.ok());
}

// A constrained follow-up turn on a session reuses the KV cache and gives the same tokens
// as the same request computed cold.
TEST_P(RealEngineSchedulerTest, ConstrainedTurnReusesTheSession) {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<model::CompiledConstraint> compiled =
      compiler.Compile({model::ConstraintKind::kRegex, "(yes|no), [a-z ]{1,12}\\."});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const auto trie = model::TokenTrie::Build(*tokenizer_);
  ValidatedRequest first = Make(Prompts()[3], 1, 24);
  first.session_id = "constrained";
  first.stopping.ignore_eos = false;
  first.constraint = {compiled->grammar, trie, 0, false, ""};
  std::vector<int> turn1 = RunAlone(first);
  ValidatedRequest second = first;
  second.prompt_tokens.insert(second.prompt_tokens.end(), turn1.begin(), turn1.end());
  std::vector<int> more = tokenizer_->Encode(" And then?", /*add_bos=*/false);
  second.prompt_tokens.insert(second.prompt_tokens.end(), more.begin(), more.end());
  const std::vector<int> expected = RunAlone(Cold(second));
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(second, sink).ok());
  testing::Outcome hit = Summarize(sink->Wait());
  ASSERT_TRUE(hit.finished) << hit.error;
  EXPECT_GE(hit.finished->usage.cached_tokens, static_cast<int>(first.prompt_tokens.size()));
  EXPECT_THAT(hit.tokens, ElementsAreArray(expected));
  if (hit.finished->reason == FinishReason::kEos) {
    model::GrammarMatcher matcher(compiled->grammar);
    EXPECT_TRUE(matcher.Accept(hit.text) && matcher.complete()) << hit.text;
  }
}

// Stateless requests after one shared system prompt: submitted together, the prompt is
// computed once (every other request takes its blocks from the prefix cache as they are
// published), and each answer is bitwise the answer computed cold.
TEST_P(RealEngineSchedulerTest, SharedPrefixIsComputedOnceAndGivesTheSameTokens) {
  constexpr int kNew = 12;
  constexpr int kRequests = 8;
  std::vector<int> system;
  while (system.size() < 150) {
    std::vector<int> more = tokenizer_->Encode(
        " The children played in the garden until the sun went down.", /*add_bos=*/false);
    system.insert(system.end(), more.begin(), more.end());
  }
  std::vector<ValidatedRequest> requests;
  std::vector<std::vector<int>> expected;
  for (int i = 0; i < kRequests; ++i) {
    ValidatedRequest r = Make(Prompts()[i % 4], i % 2, kNew);
    r.request_id = absl::StrCat("shared", i);
    r.prompt_tokens.insert(r.prompt_tokens.begin() + 1, system.begin(), system.end());
    expected.push_back(RunAlone(Cold(r)));
    requests.push_back(std::move(r));
  }
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (ValidatedRequest& r : requests) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ASSERT_TRUE(scheduler_->Submit(std::move(r), sinks.back()).ok());
  }
  // A recurrent model continues from state snapshots, kept at every interval boundary (and at
  // the end of each prompt, which here is past the shared part).
  const model::KvCache& cache = engine_->kv_cache();
  const int unit = cache.has_recurrent_state() ? cache.SnapshotIntervalBlocks() * 16 : 16;
  const int shared_blocks = static_cast<int>(1 + system.size()) / unit * unit;
  ASSERT_GT(shared_blocks, 0);
  int computed_prefix_copies = 0;
  for (int i = 0; i < kRequests; ++i) {
    testing::Outcome out = Summarize(sinks[i]->Wait());
    ASSERT_TRUE(out.finished) << out.error;
    EXPECT_THAT(out.tokens, ElementsAreArray(expected[i])) << "request " << i;
    if (out.finished->usage.cached_tokens < shared_blocks) ++computed_prefix_copies;
  }
  EXPECT_EQ(computed_prefix_copies, 1) << "the shared prefix was computed more than once";

  // Under another principal nothing is shared.
  ValidatedRequest stranger = Make(Prompts()[0], 0, kNew);
  stranger.prompt_tokens.insert(stranger.prompt_tokens.begin() + 1, system.begin(), system.end());
  stranger.principal = "someone-else";
  testing::Outcome isolated = Run(stranger);
  ASSERT_TRUE(isolated.finished) << isolated.error;
  EXPECT_EQ(isolated.finished->usage.cached_tokens, 0);
  EXPECT_THAT(isolated.tokens, ElementsAreArray(expected[0]));
}

// The same requests before and after a restart on a KV cache directory: after it, their shared
// prefix and their own full blocks come from disk, and every answer is bitwise the one
// computed cold.
TEST_P(RealEngineSchedulerTest, PrefixesReadFromDiskAfterARestartGiveTheSameTokens) {
  constexpr int kNew = 10;
  const std::string kv_dir = test_support::TestTempPath("kv_dir_" + GetParam());
  std::filesystem::remove_all(kv_dir);
  StartEngine(kv_dir);
  std::vector<int> system;
  while (system.size() < 100) {
    std::vector<int> more = tokenizer_->Encode(" Tom had a small dog that liked to run and jump.",
                                               /*add_bos=*/false);
    system.insert(system.end(), more.begin(), more.end());
  }
  std::vector<ValidatedRequest> requests;
  std::vector<std::vector<int>> expected;
  for (int i = 0; i < 4; ++i) {
    ValidatedRequest r = Make(Prompts()[i], i, kNew);
    r.prompt_tokens.insert(r.prompt_tokens.begin() + 1, system.begin(), system.end());
    r.principal = "tenant";
    expected.push_back(RunAlone(Cold(r)));
    requests.push_back(std::move(r));
  }
  for (int i = 0; i < 4; ++i) {  // computed (and written) under the tenant's scope
    EXPECT_THAT(RunAlone(requests[i]), ElementsAreArray(expected[i])) << "request " << i;
  }
  StartEngine(kv_dir);
  const int shared = static_cast<int>(1 + system.size()) / 16 * 16;
  for (int i = 0; i < 4; ++i) {
    testing::Outcome out = Run(requests[i]);
    ASSERT_TRUE(out.finished) << out.error;
    EXPECT_GE(out.finished->usage.cached_tokens, shared) << "request " << i;
    EXPECT_THAT(out.tokens, ElementsAreArray(expected[i])) << "request " << i;
  }
  scheduler_.reset();  // the engine thread is gone: its stats can be read here
  EXPECT_GE(engine_->kv_cache().disk_tier()->stats().reads, shared / 16);
  EXPECT_EQ(engine_->kv_cache().disk_tier()->stats().rejected, 0);
  if (IsHybrid()) {  // each request continued from a snapshot read back
    EXPECT_GE(engine_->kv_cache().snapshot_tier()->stats().reads, 4);
    EXPECT_EQ(engine_->kv_cache().snapshot_tier()->stats().rejected, 0);
  }
  std::filesystem::remove_all(kv_dir);
}

// Speculative decoding (prompt lookup) gives bit for bit the tokens plain decoding gives:
// greedy and seeded sampling, alone and 26 at once, with a stop string, a stop token,
// min_new_tokens and end tokens, a JSON Schema constraint and a session's second turn; in f32
// and in bf16.

SpeculationCases RealEngineSchedulerTest::SpeculationBaseline() {
  model::ConstraintCompiler compiler({});
  absl::StatusOr<model::CompiledConstraint> compiled = compiler.Compile(
      {model::ConstraintKind::kJsonSchema,
       R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},)"
       R"("n":{"type":"integer","minimum":0,"maximum":99}},"required":["name","n"]})"});
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  if (!compiled.ok()) return {};
  const auto trie = model::TokenTrie::Build(*tokenizer_);
  SpeculationCases cases;
  std::vector<ValidatedRequest>& requests = cases.requests;
  for (int p = 0; p < 4; ++p) {
    for (int v = 0; v < 2; ++v) requests.push_back(Make(Prompts()[p], v, 48));
  }
  for (int v = 0; v < 2; ++v) {
    ValidatedRequest ends = Make(Prompts()[v], v, 48);  // end tokens after min_new_tokens
    ends.stopping.ignore_eos = false;
    ends.stopping.min_new_tokens = 9;
    requests.push_back(ends);
    ValidatedRequest json = Make(Prompts()[2 + v], v, 64);
    json.stopping.ignore_eos = false;
    json.constraint.grammar = compiled->grammar;
    json.constraint.token_trie = trie;
    requests.push_back(json);
  }
  for (const ValidatedRequest& r : requests) cases.plain.push_back(Run(r));
  // A stop string from the middle of a plain answer: both must stop at the same place.
  const std::string text = cases.plain[0].text;
  EXPECT_GE(text.size(), 24u);
  ValidatedRequest stop = requests[0];
  stop.stopping.stop_strings = {text.substr(text.size() / 2, 3)};
  requests.push_back(stop);
  cases.plain.push_back(Run(stop));
  // A stop token from the middle of a sampled answer.
  EXPECT_GE(cases.plain[1].tokens.size(), 20u);
  ValidatedRequest stop_token = requests[1];
  stop_token.stopping.stop_token_ids = {cases.plain[1].tokens.at(12)};
  requests.push_back(stop_token);
  cases.plain.push_back(Run(stop_token));
  return cases;
}

TEST_P(RealEngineSchedulerTest, SpeculationGivesTheSameTokens) {
  const SpeculationCases cases = SpeculationBaseline();
  const std::vector<int> plain_turns[] = {TwoTurns(0), TwoTurns(1)};

  SpeculationOptions speculation;
  speculation.mode = Speculation::kNgram;
  speculation.max_batch = 64;
  speculation.max_draft_tokens = 64;  // shared out: still 2 each when all 26 run at once
  for (const bool bf16 : {false, true}) {
    if (bf16 && !model::ops::CpuHasAvx512Bf16()) {
      std::printf("bf16 not run: this CPU has no AVX512-BF16\n");
      continue;
    }
    SCOPED_TRACE(bf16 ? "bf16" : "f32");
    std::vector<testing::Outcome> expected = cases.plain;
    if (bf16) {  // bf16's own plain answers are the baseline
      StartEngine("", {}, /*bf16=*/true);
      for (size_t i = 0; i < cases.requests.size(); ++i) expected[i] = Run(cases.requests[i]);
    }
    StartEngine("", speculation, bf16);
    ExpectSameOutcomes(cases.requests, expected);
    if (!bf16) {
      EXPECT_THAT(TwoTurns(0), ElementsAreArray(plain_turns[0]));
      EXPECT_THAT(TwoTurns(1), ElementsAreArray(plain_turns[1]));
    }
  }
  // The drafts were real: some were verified and some kept (random weights repeat themselves).
  EXPECT_GT(observer_.drafted_tokens.load(), 100);
  EXPECT_GT(observer_.accepted_tokens.load(), 10);
}

// The same with drafts from a draft model (--speculative draft): the target itself, whose
// greedy drafts are all right, and a model of the same shape and vocabulary with other
// weights, whose drafts are mostly wrong.
TEST_P(RealEngineSchedulerTest, DraftModelSpeculationGivesTheSameTokens) {
  const SpeculationCases cases = SpeculationBaseline();
  const std::vector<int> plain_turns[] = {TwoTurns(0), TwoTurns(1)};
  SpeculationOptions speculation;
  speculation.mode = Speculation::kDraft;
  speculation.max_batch = 64;
  speculation.max_draft_tokens = 64;

  // The target drafting for itself: greedy drafts are what greedy decoding samples (the
  // engine's rows are batch invariant), so every one of them is kept. That holds only while
  // each sequence's K/V in the draft model stay exactly its tokens, step after step.
  StartEngine("", speculation, /*bf16=*/false, model_.get());
  std::vector<ValidatedRequest> greedy;
  std::vector<testing::Outcome> greedy_plain;
  for (size_t i = 0; i < 8; i += 2) {  // the plain greedy cases: no constraint, stop or end
    greedy.push_back(cases.requests[i]);
    greedy_plain.push_back(cases.plain[i]);
  }
  ExpectSameOutcomes(greedy, greedy_plain);
  EXPECT_GT(observer_.drafted_tokens.load(), 60);
  EXPECT_EQ(observer_.accepted_tokens.load(), observer_.drafted_tokens.load());
  ExpectSameOutcomes(cases.requests, cases.plain);
  EXPECT_THAT(TwoTurns(0), ElementsAreArray(plain_turns[0]));
  EXPECT_THAT(TwoTurns(1), ElementsAreArray(plain_turns[1]));

  if (GetParam() == "stories260K") return;  // no other model has its vocabulary
  absl::StatusOr<std::string> other_path = ModelFor(GetParam(), /*seed=*/2);
  ASSERT_TRUE(other_path.ok()) << other_path.status();
  absl::StatusOr<model::LoadedModel> other = model::LoadModel(*other_path);
  ASSERT_TRUE(other.ok()) << other.status();
  observer_.drafted_tokens = 0;
  observer_.accepted_tokens = 0;
  StartEngine("", speculation, /*bf16=*/false, &*other);
  ExpectSameOutcomes(cases.requests, cases.plain);
  EXPECT_THAT(TwoTurns(0), ElementsAreArray(plain_turns[0]));
  EXPECT_GT(observer_.drafted_tokens.load(), 100);
  EXPECT_LT(observer_.accepted_tokens.load(), observer_.drafted_tokens.load());
}

INSTANTIATE_TEST_SUITE_P(Models, RealEngineSchedulerTest,
                         ::testing::Values("stories260K", "llama", "gpt2", "qwen2", "qwen3", "phi3",
                                           "gemma2", "gemma3", "llama_Q4_K_M", "qwen3moe",
                                           "llama_experts", "qwen3moe_Q4_K_M", "gpt-oss", "qwen35",
                                           "qwen35moe", "lfm2", "nemotron_h"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace textgen::server
