// DraftModel against a draft model started from nothing: however a sequence moves on (drafts
// kept, refused, cut short by the batch budget, steps without drafting, a sample that equals
// a draft the draft model already holds), the K/V kept between steps hold exactly the
// sequence's tokens and its drafts, and give the drafts a fresh state fed the whole sequence
// gives. (A random-weight model's argmax hardly depends on anything but the last token, so the
// walk also runs on the trained stories260K, where K/V that drifted would change the drafts.)

#include "server/scheduler/draft_model.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/format/model_loader.h"
#include "model/runtime/engine.h"
#include "tests/testing/shared_files.h"
#include "tests/testing/temp_files.h"
#include "tests/tools/random_gguf.h"

namespace textgen::server {
namespace {

using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr int kVocab = 300;

class DraftModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::RandomModelSpec spec;
    spec.vocab_size = kVocab;
    spec.context_length = 256;
    absl::StatusOr<model::GgufWriter> writer = model::BuildRandomModel(spec);
    ASSERT_TRUE(writer.ok()) << writer.status();
    const std::string path = test_support::TestTempPath("draft_model.gguf");
    ASSERT_TRUE(writer->WriteFile(path).ok());
    Load(path);
  }

  void Load(const std::string& path) {
    absl::StatusOr<model::LoadedModel> loaded = model::LoadModel(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    model_ = std::make_unique<model::LoadedModel>(*std::move(loaded));
    StartEngine(int64_t{16} << 20, /*max_batch_tokens=*/64);
  }

  void StartEngine(int64_t kv_bytes, int max_batch_tokens) {
    draft_.reset();
    engine_.reset();
    model::EngineOptions options;
    options.threads = 1;
    options.kv_cache_bytes = kv_bytes;
    options.max_batch_tokens = max_batch_tokens;
    absl::StatusOr<std::unique_ptr<model::Engine>> engine = model::Engine::Create(*model_, options);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    draft_ =
        std::make_unique<DraftModel>(engine_.get(), model_->config.vocab_size, max_batch_tokens);
  }

  // The drafts a state that has seen nothing gives for `prompt` + `output`.
  std::vector<int> FreshDraft(const std::vector<int>& prompt, const std::vector<int>& output,
                              int n) {
    DraftState fresh;
    DraftRequest request{&fresh, prompt, output, n};
    draft_->Draft({&request, 1});
    return fresh.proposed;
  }

  // Three sequences moving on for 40 steps at random, drafts checked at every step.
  void Walk(int vocab);

  std::unique_ptr<model::LoadedModel> model_;
  std::unique_ptr<model::Engine> engine_;
  std::unique_ptr<DraftModel> draft_;
};

void DraftModelTest::Walk(int vocab) {
  std::mt19937 rng(7);
  const auto token = [&] { return static_cast<int>(rng() % (vocab - 3)) + 3; };
  struct Seq {
    std::vector<int> prompt;
    std::vector<int> output;
    DraftState state;
  };
  std::vector<Seq> seqs(3);
  for (size_t i = 0; i < seqs.size(); ++i) {
    for (size_t t = 0; t < 10 + 37 * i; ++t) seqs[i].prompt.push_back(token());  // 10..84
    seqs[i].output.push_back(token());
  }
  int kept = 0, refused = 0, equal_to_held = 0;
  for (int step = 0; step < 40; ++step) {
    std::vector<DraftRequest> requests;
    std::vector<Seq*> drafting;
    for (Seq& seq : seqs) {
      if (rng() % 5 == 0) {  // not drafting this step: one plain token
        seq.output.push_back(token());
        continue;
      }
      requests.push_back({&seq.state, seq.prompt, seq.output, static_cast<int>(rng() % 6) + 1});
      drafting.push_back(&seq);
    }
    draft_->Draft(requests);
    for (size_t r = 0; r < requests.size(); ++r) {
      Seq& seq = *drafting[r];
      SCOPED_TRACE(testing::Message() << "step " << step << ", sequence " << r);
      const std::vector<int>& proposed = seq.state.proposed;
      ASSERT_EQ(static_cast<int>(proposed.size()), requests[r].max_tokens);
      EXPECT_THAT(proposed,
                  ElementsAreArray(FreshDraft(seq.prompt, seq.output, requests[r].max_tokens)));
      // The draft's K/V hold the sequence and every draft but the last.
      EXPECT_EQ(static_cast<int>(seq.state.tokens.size()), seq.state.kv.length());
      std::vector<int> held = seq.prompt;
      held.insert(held.end(), seq.output.begin(), seq.output.end());
      held.insert(held.end(), proposed.begin(), proposed.end() - 1);
      EXPECT_THAT(seq.state.tokens, ElementsAreArray(held));
      // Verification: some drafts kept, then a sample; sometimes the sample is the next
      // draft anyway (the scheduler fed fewer drafts than were made).
      const int keep = static_cast<int>(rng() % (proposed.size() + 1));
      seq.output.insert(seq.output.end(), proposed.begin(), proposed.begin() + keep);
      kept += keep;
      if (keep < static_cast<int>(proposed.size()) && rng() % 3 == 0) {
        seq.output.push_back(proposed[keep]);
        ++equal_to_held;
      } else {
        int sample = token();
        while (keep < static_cast<int>(proposed.size()) && sample == proposed[keep]) {
          sample = token();
        }
        seq.output.push_back(sample);
        refused += keep < static_cast<int>(proposed.size());
      }
    }
  }
  // The walk went through every case.
  EXPECT_GT(kept, 20);
  EXPECT_GT(refused, 10);
  EXPECT_GT(equal_to_held, 5);
}

TEST_F(DraftModelTest, KeptStateDraftsWhatAFreshStateDrafts) { Walk(kVocab); }

TEST_F(DraftModelTest, KeptStateDraftsWhatAFreshStateDraftsOnATrainedModel) {
  const std::string path = ::textgen::test_support::SharedModelPath("stories260K/stories260K.gguf");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  Load(path);
  Walk(model_->config.vocab_size);
}

TEST_F(DraftModelTest, ReleasedKvServeTheNextTurnOfTheSameScopeOnly) {
  std::vector<int> prompt(80);
  for (int i = 0; i < 80; ++i) prompt[i] = 3 + (i * 11) % (kVocab - 3);
  const std::vector<int> output = {9};
  DraftState first;
  DraftRequest request{&first, prompt, output, 3, /*scope=*/7};
  draft_->Draft({&request, 1});
  EXPECT_EQ(draft_->tokens_fed(), 81 + 2);
  EXPECT_EQ(draft_->tokens_from_cache(), 0);
  draft_->Release(first);
  EXPECT_FALSE(first.kv.valid());
  EXPECT_EQ(engine_->kv_cache().bytes_in_use(), 0);  // cached, not held

  // The next turn resends the conversation: its 80-token prefix (5 whole blocks) comes back.
  std::vector<int> next = prompt;
  next.insert(next.end(), {9, 40, 41, 42});
  const std::vector<int> reply = {43};
  DraftState second;
  request = {&second, next, reply, 3, /*scope=*/7};
  draft_->Draft({&request, 1});
  EXPECT_EQ(draft_->tokens_from_cache(), 80);
  EXPECT_EQ(draft_->tokens_fed(), 83 + 5 + 2);
  EXPECT_THAT(second.proposed, ElementsAreArray(FreshDraft(next, reply, 3)));

  // Another scope finds nothing.
  DraftState other;
  request = {&other, next, reply, 3, /*scope=*/8};
  draft_->Draft({&request, 1});
  EXPECT_EQ(draft_->tokens_from_cache(), 80);
  EXPECT_THAT(other.proposed, ElementsAreArray(second.proposed));
}

TEST_F(DraftModelTest, NoDraftsWhenTheirKvDoNotFit) {
  // Room for one block (16 tokens): a 10-token prompt fits with 4 drafts, not with 8 more.
  StartEngine(engine_->kv_cache().block_bytes(), 64);
  std::vector<int> prompt(9, 5);
  std::vector<int> output = {7};
  DraftState state;
  DraftRequest request{&state, prompt, output, 4};
  draft_->Draft({&request, 1});
  EXPECT_EQ(state.proposed.size(), 4u);
  output.insert(output.end(), {8, 9});
  request = {&state, prompt, output, 8};
  draft_->Draft({&request, 1});
  EXPECT_THAT(state.proposed, IsEmpty());
}

TEST_F(DraftModelTest, NoDraftsPastTheDraftModelsContextOrVocabulary) {
  std::vector<int> prompt(250, 5);
  std::vector<int> output = {7};
  DraftState state;
  DraftRequest request{&state, prompt, output, 8};  // 251 + 7 K/V tokens: past 256
  draft_->Draft({&request, 1});
  EXPECT_THAT(state.proposed, IsEmpty());
  prompt = {1, 2, 3};
  output = {kVocab + 5};  // a token of a target padded further than the draft
  DraftState other;
  request = {&other, prompt, output, 2};
  draft_->Draft({&request, 1});
  EXPECT_THAT(other.proposed, IsEmpty());
}

TEST_F(DraftModelTest, LongPromptsCatchUpUnderTheBatchBudget) {
  // 150 tokens through passes of at most 64, next to a sequence that needs one token.
  std::vector<int> long_prompt(150), short_prompt = {1, 2};
  for (int i = 0; i < 150; ++i) long_prompt[i] = 3 + (i * 7) % (kVocab - 3);
  std::vector<int> output = {9};
  DraftState a, b;
  std::vector<DraftRequest> requests = {{&a, long_prompt, output, 3},
                                        {&b, short_prompt, output, 3}};
  draft_->Draft(requests);
  EXPECT_THAT(a.proposed, ElementsAreArray(FreshDraft(long_prompt, output, 3)));
  EXPECT_THAT(b.proposed, ElementsAreArray(FreshDraft(short_prompt, output, 3)));
  EXPECT_EQ(a.kv.length(), 153);
}

}  // namespace
}  // namespace textgen::server
