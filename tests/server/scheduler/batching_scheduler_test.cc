// Scheduler behaviour with a FakeEngine (deterministic logits over a real KvCache) and no
// gRPC: budgets, admission, queueing, deadlines, cancellation, stop conditions, sessions.
// Nothing here asserts on timing; sleeps only make sure a deadline has passed.

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/scheduler/scheduler.h"
#include "tests/testing/fake_engine.h"

namespace textgen::server {
namespace {

using testing::ChunkRecord;
using ::testing::ElementsAreArray;
using testing::ExpectedGreedy;
using testing::FakeEngine;
using ::testing::HasSubstr;
using testing::LetterTokenizer;
using testing::Outcome;
using testing::RecordingSink;
using testing::StepRecord;
using testing::Summarize;

ValidatedRequest MakeRequest(std::vector<int> prompt, int max_new, std::string id = "r") {
  ValidatedRequest r;
  r.request_id = std::move(id);
  r.prompt_tokens = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.stopping.max_new_tokens = max_new;
  r.arrival_time = absl::Now();
  return r;
}

// A prompt of `n` letters whose first token `tag` identifies the request in step records.
std::vector<int> Prompt(int tag, int n) {
  std::vector<int> p;
  for (int i = 0; i < n; ++i) p.push_back(i == 0 ? tag : 2 + (tag * 5 + i) % 26);
  return p;
}

// Blocks the engine thread in Forward at step `at` until Release().
class Gate {
 public:
  explicit Gate(int at) : at_(at) {}
  void AtStep(int step) {
    if (step != at_) return;
    std::unique_lock lock(mu_);
    entered_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
  }
  void WaitEntered() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return entered_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  const int at_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;   // guarded by mu_
  bool released_ = false;  // guarded by mu_
};

// First step index in which a chunk tagged `tag` at position 0 appears (-1 if none).
int FirstStepOf(const std::vector<StepRecord>& steps, int tag) {
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const ChunkRecord& c : steps[i]) {
      if (c.start == 0 && c.first_token == tag) return static_cast<int>(i);
    }
  }
  return -1;
}
model::SequenceId SequenceOf(const std::vector<StepRecord>& steps, int tag) {
  for (const StepRecord& s : steps) {
    for (const ChunkRecord& c : s) {
      if (c.start == 0 && c.first_token == tag) return c.sequence;
    }
  }
  return -1;
}
int LastStepOf(const std::vector<StepRecord>& steps, model::SequenceId seq) {
  int last = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const ChunkRecord& c : steps[i]) {
      if (c.sequence == seq) last = static_cast<int>(i);
    }
  }
  return last;
}

class CountingObserver : public SchedulerObserver {
 public:
  void OnQueued(int) override { ++queued; }
  void OnRejected(const absl::Status&) override { ++rejected; }
  void OnAdmitted(double) override { ++admitted; }
  void OnStep(int, int tokens, int, double) override {
    ++steps;
    max_step_tokens = std::max(max_step_tokens.load(), tokens);
  }
  void OnFirstToken(double) override { ++first_tokens; }
  void OnToken(double) override { ++tokens; }
  void OnFinished(const FinishedEvent&) override { ++finished; }
  void OnFailed(const absl::Status&) override { ++failed; }
  void OnStateGauges(const SchedulerGauges&) override { ++gauges; }
  void OnSessionLookup(bool hit) override { ++(hit ? session_hits : session_misses); }
  void OnSessionEvicted(int count) override { evicted += count; }
  void OnDraftVerified(int drafted, int accepted) override {
    drafted_tokens += drafted;
    accepted_tokens += accepted;
  }

  std::atomic<int> queued{0}, rejected{0}, admitted{0}, steps{0}, max_step_tokens{0},
      first_tokens{0}, tokens{0}, finished{0}, failed{0}, gauges{0}, session_hits{0},
      session_misses{0}, evicted{0}, drafted_tokens{0}, accepted_tokens{0};
};

class SchedulerTest : public ::testing::Test {
 protected:
  // Builds the engine (kv_blocks of 16 tokens, context) and the scheduler.
  // With `draft_next`: a draft model (for Speculation::kDraft) that writes by that rule.
  void Start(SchedulerOptions options = {}, int kv_blocks = 64, int context = 1024,
             FakeEngine::NextFn next = testing::DefaultNext,
             FakeEngine::NextFn draft_next = nullptr) {
    scheduler_.reset();
    next_ = next;
    engine_ = std::make_unique<FakeEngine>(kv_blocks, context, next);
    draft_engine_ =
        draft_next ? std::make_unique<FakeEngine>(kv_blocks, context, draft_next) : nullptr;
    engine_->set_causal(!bidirectional_);
    engine_->SetBeforeForward([this](int step) {
      if (gate_) gate_->AtStep(step);
      if (slow_steps_.load()) absl::SleepFor(absl::Milliseconds(1));
    });
    scheduler_ = CreateBatchingScheduler(engine_.get(), &tokenizer_, options, &observer_,
                                         draft_engine_.get());
  }
  void TearDown() override {
    if (gate_) gate_->Release();
    scheduler_.reset();
  }

  // Submits and waits for the whole stream.
  Outcome RunOne(ValidatedRequest request) {
    auto sink = std::make_shared<RecordingSink>();
    absl::Status s = scheduler_->Submit(std::move(request), sink);
    EXPECT_TRUE(s.ok()) << s;
    return Summarize(sink->Wait());
  }
  // Deletes a session and waits for the engine thread's answer (the scheduler never blocks).
  absl::StatusOr<int> DeleteSession(const std::string& session_id) {
    // Shared: on a timeout the callback may still run after this returns.
    auto answer = std::make_shared<std::promise<absl::StatusOr<int>>>();
    std::future<absl::StatusOr<int>> answered = answer->get_future();
    scheduler_->DeleteSession(session_id,
                              [answer](absl::StatusOr<int> freed) { answer->set_value(freed); });
    EXPECT_EQ(answered.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    return answered.get();
  }
  int64_t KvBytesWhenIdle() {
    EXPECT_TRUE(scheduler_->WaitUntilIdle(absl::Seconds(30)));
    return engine_->kv_cache().bytes_in_use();
  }

  LetterTokenizer tokenizer_;
  CountingObserver observer_;
  std::unique_ptr<Gate> gate_;
  bool bidirectional_ =
      false;  // the engine attends like an encoder           // set before Start()
  std::atomic<bool> slow_steps_{false};  // 1 ms per Forward, to keep a request running
  FakeEngine::NextFn next_;
  std::unique_ptr<FakeEngine> engine_;
  std::unique_ptr<FakeEngine> draft_engine_;
  std::unique_ptr<Scheduler> scheduler_;
};

// ---- Basic generation ----

TEST_F(SchedulerTest, GreedyMatchesTheEngineRule) {
  Start();
  std::vector<int> prompt = Prompt(5, 7);
  Outcome out = RunOne(MakeRequest(prompt, 12));
  ASSERT_TRUE(out.error.ok()) << out.error;
  ASSERT_TRUE(out.finished);
  EXPECT_THAT(out.tokens, ElementsAreArray(ExpectedGreedy(prompt, 12)));
  EXPECT_EQ(out.text, tokenizer_.Decode(ExpectedGreedy(prompt, 12)));
  EXPECT_EQ(out.finished->reason, FinishReason::kLength);
  EXPECT_EQ(out.finished->usage.prompt_tokens, 7);
  EXPECT_EQ(out.finished->usage.completion_tokens, 12);
  EXPECT_EQ(out.finished->usage.cached_tokens, 0);
  EXPECT_GE(out.finished->timings.total_seconds, out.finished->timings.queue_seconds);
  EXPECT_EQ(KvBytesWhenIdle(), 0);
  EXPECT_EQ(observer_.finished.load(), 1);
  EXPECT_EQ(observer_.first_tokens.load(), 1);
  EXPECT_EQ(observer_.tokens.load(), 11);
  EXPECT_GT(observer_.gauges.load(), 0);
}

TEST_F(SchedulerTest, EchoLogprobsAndSeed) {
  Start();
  ValidatedRequest r = MakeRequest(Prompt(3, 4), 3);
  r.prompt_text = "the prompt";
  r.output.echo = true;
  r.output.logprobs = true;
  r.output.top_logprobs = 2;
  r.sampling.seed = 1234;
  Outcome out = RunOne(std::move(r));
  ASSERT_TRUE(out.finished);
  ASSERT_FALSE(out.deltas.empty());
  EXPECT_EQ(out.deltas[0], "the prompt");
  std::vector<int> expected = ExpectedGreedy(Prompt(3, 4), 3);
  ASSERT_EQ(out.logprobs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out.logprobs[i].token, expected[i]);
    ASSERT_EQ(out.logprobs[i].top.size(), 2u);
    EXPECT_EQ(out.logprobs[i].top[0].token, expected[i]);
    EXPECT_LT(out.logprobs[i].logprob, 0.0f);
  }
  EXPECT_EQ(out.finished->seed, 1234u);
}

TEST_F(SchedulerTest, SeededSamplingIsTheSameAloneAndInABatch) {
  Start();
  auto make = [](int i) {
    ValidatedRequest r = MakeRequest(Prompt(2 + i, 3 + i % 5), 20, absl::StrCat("r", i));
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 100 + i;
    return r;
  };
  std::vector<std::vector<int>> alone;
  for (int i = 0; i < 16; ++i) alone.push_back(RunOne(make(i)).tokens);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 16; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ASSERT_TRUE(scheduler_->Submit(make(i), sinks.back()).ok());
  }
  for (int i = 0; i < 16; ++i) {
    EXPECT_THAT(Summarize(sinks[i]->Wait()).tokens, ElementsAreArray(alone[i])) << i;
  }
}

// ---- Token budget, chunking, admission while decoding ----

TEST_F(SchedulerTest, LongPromptIsPrefilledInChunksUnderTheTokenBudget) {
  SchedulerOptions options;
  options.max_batch_tokens = 8;
  Start(options);
  std::vector<int> prompt = Prompt(4, 20);
  Outcome out = RunOne(MakeRequest(prompt, 3));
  EXPECT_THAT(out.tokens, ElementsAreArray(ExpectedGreedy(prompt, 3)));
  std::vector<StepRecord> steps = engine_->steps();
  ASSERT_EQ(steps.size(), 5u);  // 8 + 8 + 4 (prefill), then 2 decodes
  EXPECT_EQ(steps[0][0].tokens, 8);
  EXPECT_EQ(steps[1][0].start, 8);
  EXPECT_EQ(steps[1][0].tokens, 8);
  EXPECT_EQ(steps[2][0].tokens, 4);
  EXPECT_EQ(steps[3][0].tokens, 1);
}

TEST_F(SchedulerTest, NewRequestJoinsWhileOthersDecodeAndTheirTokensGoFirst) {
  SchedulerOptions options;
  options.max_batch_tokens = 6;
  gate_ = std::make_unique<Gate>(/*at=*/3);
  Start(options);
  std::vector<int> pa = Prompt(6, 3), pb = Prompt(7, 20);
  auto sa = std::make_shared<RecordingSink>(), sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(pa, 30, "a"), sa).ok());
  gate_->WaitEntered();  // "a" is decoding
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(pb, 4, "b"), sb).ok());
  gate_->Release();
  Outcome a = Summarize(sa->Wait()), b = Summarize(sb->Wait());
  EXPECT_THAT(a.tokens, ElementsAreArray(ExpectedGreedy(pa, 30)));
  EXPECT_THAT(b.tokens, ElementsAreArray(ExpectedGreedy(pb, 4)));

  std::vector<StepRecord> steps = engine_->steps();
  model::SequenceId seq_a = SequenceOf(steps, 6), seq_b = SequenceOf(steps, 7);
  int first_b = FirstStepOf(steps, 7);
  ASSERT_GT(first_b, 0);
  EXPECT_LT(first_b, LastStepOf(steps, seq_a));  // b was admitted while a decoded
  int b_prefill_steps = 0;
  for (int i = first_b; i <= LastStepOf(steps, seq_a); ++i) {
    int total = 0;
    bool has_a = false;
    for (const ChunkRecord& c : steps[i]) {
      total += c.tokens;
      if (c.sequence == seq_a) has_a = c.tokens == 1;
      if (c.sequence == seq_b && c.tokens > 1) ++b_prefill_steps;
    }
    EXPECT_LE(total, 6) << "step " << i;
    EXPECT_TRUE(has_a) << "a's decode token missing from step " << i;
  }
  EXPECT_EQ(b_prefill_steps, 4);  // 20 prompt tokens in chunks of 5 next to a's decode
  EXPECT_LE(observer_.max_step_tokens.load(), 6);
}

TEST_F(SchedulerTest, PrefillWhileOthersDecodeIsCappedButAnIdleServerUsesTheFullBudget) {
  SchedulerOptions options;
  options.max_batch_tokens = 64;
  options.max_prefill_tokens_while_decoding = 4;
  gate_ = std::make_unique<Gate>(/*at=*/2);
  Start(options);
  // "a" alone: its 40-token prompt goes in one step (nothing decodes, full budget).
  std::vector<int> pa = Prompt(8, 40), pb = Prompt(9, 18);
  auto sa = std::make_shared<RecordingSink>(), sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(pa, 30, "a"), sa).ok());
  gate_->WaitEntered();  // "a" is decoding
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(pb, 3, "b"), sb).ok());
  gate_->Release();
  Outcome a = Summarize(sa->Wait()), b = Summarize(sb->Wait());
  EXPECT_THAT(a.tokens, ElementsAreArray(ExpectedGreedy(pa, 30)));
  EXPECT_THAT(b.tokens, ElementsAreArray(ExpectedGreedy(pb, 3)));

  std::vector<StepRecord> steps = engine_->steps();
  ASSERT_FALSE(steps.empty());
  ASSERT_EQ(steps[0].size(), 1u);
  EXPECT_EQ(steps[0][0].tokens, 40);
  model::SequenceId seq_a = SequenceOf(steps, 8), seq_b = SequenceOf(steps, 9);
  std::vector<int> b_chunks;
  for (const StepRecord& step : steps) {
    bool has_a_decode = false, has_b_prefill = false;
    for (const ChunkRecord& c : step) {
      if (c.sequence == seq_a && c.tokens == 1) has_a_decode = true;
      if (c.sequence == seq_b && c.tokens > 1) {
        has_b_prefill = true;
        b_chunks.push_back(c.tokens);
      }
    }
    EXPECT_TRUE(has_a_decode || !has_b_prefill) << "b's prefill ran without a's decode";
  }
  // 18 prompt tokens next to a's decodes: 4 + 4 + 4 + 4 + 2, never more than the cap.
  EXPECT_THAT(b_chunks, ElementsAreArray({4, 4, 4, 4, 2}));
  EXPECT_EQ(KvBytesWhenIdle(), 0);
}

TEST_F(SchedulerTest, PrefillCapWhileDecodingGrowsWithTheNumberOfDecodes) {
  SchedulerOptions options;
  options.max_batch_tokens = 64;
  options.max_prefill_tokens_while_decoding = 2;
  gate_ = std::make_unique<Gate>(/*at=*/10);
  slow_steps_ = true;  // the six submissions land long before step 10
  Start(options);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 6; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ASSERT_TRUE(
        scheduler_->Submit(MakeRequest(Prompt(20 + i, 2), 40, absl::StrCat("a", i)), sinks.back())
            .ok());
  }
  gate_->WaitEntered();  // all six are decoding by now
  std::vector<int> pb = Prompt(30, 30);
  auto sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(pb, 2, "b"), sb).ok());
  gate_->Release();
  EXPECT_THAT(Summarize(sb->Wait()).tokens, ElementsAreArray(ExpectedGreedy(pb, 2)));
  for (int i = 0; i < 6; ++i) {
    EXPECT_THAT(Summarize(sinks[i]->Wait()).tokens,
                ElementsAreArray(ExpectedGreedy(Prompt(20 + i, 2), 40)))
        << i;
  }

  std::vector<StepRecord> steps = engine_->steps();
  model::SequenceId seq_b = SequenceOf(steps, 30);
  std::vector<int> b_chunks;
  for (const StepRecord& step : steps) {
    int decodes = 0;
    for (const ChunkRecord& c : step) {
      if (c.sequence != seq_b && c.tokens == 1) ++decodes;
    }
    for (const ChunkRecord& c : step) {
      if (c.sequence != seq_b || c.tokens < 2) continue;
      b_chunks.push_back(c.tokens);
      EXPECT_EQ(decodes, 6);
      EXPECT_LE(c.tokens, 6);  // max(2, six decodes), not the 58 tokens left in the step
    }
  }
  EXPECT_THAT(b_chunks, ElementsAreArray({6, 6, 6, 6, 6}));
  EXPECT_EQ(KvBytesWhenIdle(), 0);
}

// ---- Queueing and admission ----

TEST_F(SchedulerTest, FcfsHeadThatDoesNotFitIsNotOvertaken) {
  gate_ = std::make_unique<Gate>(/*at=*/1);
  Start({}, /*kv_blocks=*/8);  // 128 tokens
  auto sa = std::make_shared<RecordingSink>(), sc = std::make_shared<RecordingSink>(),
       sd = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(10, 4), 96, "a"), sa).ok());  // 7 blocks
  gate_->WaitEntered();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(11, 4), 96, "c"), sc).ok());  // waits
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(12, 4), 6, "d"), sd).ok());   // would fit
  gate_->Release();
  for (auto* s : {sa.get(), sc.get(), sd.get()}) EXPECT_TRUE(Summarize(s->Wait()).finished);
  std::vector<StepRecord> steps = engine_->steps();
  int last_a = LastStepOf(steps, SequenceOf(steps, 10));
  int first_c = FirstStepOf(steps, 11), first_d = FirstStepOf(steps, 12);
  EXPECT_GT(first_c, last_a);   // c waited for memory
  EXPECT_GE(first_d, first_c);  // d did not overtake c
  EXPECT_EQ(KvBytesWhenIdle(), 0);
}

TEST_F(SchedulerTest, QueueFullIsRejectedAtOnceNamingTheLimit) {
  SchedulerOptions options;
  options.max_batch_sequences = 1;
  options.max_queue = 2;
  gate_ = std::make_unique<Gate>(/*at=*/0);
  Start(options);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 4; ++i) sinks.push_back(std::make_shared<RecordingSink>());
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 2, "run"), sinks[0]).ok());
  gate_->WaitEntered();  // admitted and running
  EXPECT_TRUE(scheduler_->Submit(MakeRequest(Prompt(3, 3), 2, "q1"), sinks[1]).ok());
  EXPECT_TRUE(scheduler_->Submit(MakeRequest(Prompt(4, 3), 2, "q2"), sinks[2]).ok());
  absl::Status full = scheduler_->Submit(MakeRequest(Prompt(5, 3), 2, "q3"), sinks[3]);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("max_queue 2"));
  EXPECT_EQ(observer_.rejected.load(), 1);
  gate_->Release();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Summarize(sinks[i]->Wait()).finished) << i;
}

// One principal (API key) cannot take every slot and the whole queue; the count is released
// as its requests end, and requests without a principal are not counted.
TEST_F(SchedulerTest, OnePrincipalCannotTakeEveryPlace) {
  SchedulerOptions options;
  options.max_batch_sequences = 1;
  options.max_queue = 8;
  options.max_requests_per_principal = 2;
  gate_ = std::make_unique<Gate>(/*at=*/0);
  Start(options);
  const auto from = [](std::string principal, ValidatedRequest request) {
    request.principal = std::move(principal);
    return request;
  };
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 6; ++i) sinks.push_back(std::make_shared<RecordingSink>());
  ASSERT_TRUE(scheduler_->Submit(from("alice", MakeRequest(Prompt(2, 3), 2, "a1")), sinks[0]).ok());
  gate_->WaitEntered();  // running
  EXPECT_TRUE(scheduler_->Submit(from("alice", MakeRequest(Prompt(3, 3), 2, "a2")), sinks[1]).ok());
  absl::Status limited =
      scheduler_->Submit(from("alice", MakeRequest(Prompt(4, 3), 2, "a3")), sinks[2]);
  EXPECT_EQ(limited.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(limited.message(),
            "principal alice has 2 requests queued or running (max_requests_per_principal 2)");
  EXPECT_TRUE(scheduler_->Submit(from("bob", MakeRequest(Prompt(5, 3), 2, "b1")), sinks[3]).ok());
  EXPECT_TRUE(scheduler_->Submit(from("", MakeRequest(Prompt(6, 3), 2, "n1")), sinks[4]).ok());
  gate_->Release();
  for (int i : {0, 1, 3, 4}) EXPECT_TRUE(Summarize(sinks[i]->Wait()).finished) << i;
  EXPECT_TRUE(scheduler_->Submit(from("alice", MakeRequest(Prompt(7, 3), 2, "a4")), sinks[5]).ok());
  EXPECT_TRUE(Summarize(sinks[5]->Wait()).finished);
}

TEST_F(SchedulerTest, RequestThatCanNeverFitIsRejected) {
  Start({}, /*kv_blocks=*/4);  // 64 tokens
  auto sink = std::make_shared<RecordingSink>();
  absl::Status s = scheduler_->Submit(MakeRequest(Prompt(2, 10), 60), sink);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("70 KV tokens"));
  EXPECT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 10), 54), sink).ok());
  EXPECT_TRUE(Summarize(sink->Wait()).finished);
}

// ---- Deadlines, cancellation, slow readers ----

TEST_F(SchedulerTest, DeadlinePassingInTheQueue) {
  SchedulerOptions options;
  options.max_batch_sequences = 1;
  gate_ = std::make_unique<Gate>(/*at=*/0);
  Start(options);
  auto sa = std::make_shared<RecordingSink>(), sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 5, "a"), sa).ok());
  gate_->WaitEntered();
  ValidatedRequest b = MakeRequest(Prompt(3, 3), 5, "b");
  b.deadline = absl::Now() + absl::Milliseconds(20);
  ASSERT_TRUE(scheduler_->Submit(std::move(b), sb).ok());
  absl::SleepFor(absl::Milliseconds(40));
  gate_->Release();
  EXPECT_TRUE(Summarize(sa->Wait()).finished);
  Outcome ob = Summarize(sb->Wait());
  EXPECT_EQ(ob.error.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(ob.error.message(), HasSubstr("queue"));
  EXPECT_TRUE(ob.tokens.empty());
}

TEST_F(SchedulerTest, DeadlinePassingWhileRunningStopsAndFreesKv) {
  gate_ = std::make_unique<Gate>(/*at=*/5);
  Start();
  auto sink = std::make_shared<RecordingSink>();
  ValidatedRequest r = MakeRequest(Prompt(2, 3), 500);
  r.deadline = absl::Now() + absl::Seconds(1);
  ASSERT_TRUE(scheduler_->Submit(std::move(r), sink).ok());
  gate_->WaitEntered();
  absl::SleepFor(absl::Seconds(1) + absl::Milliseconds(20));
  gate_->Release();
  Outcome out = Summarize(sink->Wait());
  EXPECT_EQ(out.error.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(out.error.message(), HasSubstr("while generating"));
  EXPECT_GE(out.tokens.size(), 4u);
  EXPECT_EQ(KvBytesWhenIdle(), 0);
}

TEST_F(SchedulerTest, CancelMidStreamFreesKv) {
  Start();
  auto sink = std::make_shared<RecordingSink>(/*accept_limit=*/-1, /*close_after=*/3);
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 200), sink).ok());
  Outcome out = Summarize(sink->Wait());
  EXPECT_EQ(out.error.code(), absl::StatusCode::kCancelled);
  EXPECT_LT(out.tokens.size(), 200u);
  EXPECT_EQ(KvBytesWhenIdle(), 0);
  EXPECT_EQ(observer_.failed.load(), 1);
}

TEST_F(SchedulerTest, SlowReaderIsDropped) {
  Start();
  auto sink = std::make_shared<RecordingSink>(/*accept_limit=*/4);
  auto other = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 100, "slow"), sink).ok());
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(3, 3), 20, "ok"), other).ok());
  EXPECT_TRUE(Summarize(other->Wait()).finished);
  EXPECT_TRUE(scheduler_->WaitUntilIdle(absl::Seconds(30)));
  std::vector<StepRecord> steps = engine_->steps();
  model::SequenceId slow = SequenceOf(steps, 2);
  int decodes = 0;
  for (const StepRecord& s : steps) {
    for (const ChunkRecord& c : s) decodes += c.sequence == slow && c.start > 0;
  }
  EXPECT_LE(decodes, 4);  // stopped right after the refused push
  EXPECT_EQ(engine_->kv_cache().bytes_in_use(), 0);
}

TEST_F(SchedulerTest, ClientGoneWhileQueuedIsDroppedBeforeAdmission) {
  SchedulerOptions options;
  options.max_batch_sequences = 1;
  gate_ = std::make_unique<Gate>(/*at=*/0);
  Start(options);
  auto sa = std::make_shared<RecordingSink>(), sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 5, "a"), sa).ok());
  gate_->WaitEntered();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(3, 3), 5, "b"), sb).ok());
  sb->Close();
  gate_->Release();
  EXPECT_TRUE(Summarize(sa->Wait()).finished);
  Outcome b = Summarize(sb->Wait());
  EXPECT_EQ(b.error.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(b.error.message(), HasSubstr("queued"));
  EXPECT_EQ(FirstStepOf(engine_->steps(), 3), -1);  // never reached the engine
}

TEST_F(SchedulerTest, EngineFailureFailsTheBatchNotTheScheduler) {
  Start();
  engine_->FailAtStep(2);
  auto sa = std::make_shared<RecordingSink>(), sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 50, "a"), sa).ok());
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(3, 3), 50, "b"), sb).ok());
  for (auto* sink : {sa.get(), sb.get()}) {
    Outcome out = Summarize(sink->Wait());
    // Whichever requests were in the failed step get its error; the others finish.
    if (!out.error.ok()) {
      EXPECT_EQ(out.error.code(), absl::StatusCode::kInternal);
      EXPECT_THAT(out.error.message(), HasSubstr("forward pass failed: injected failure"));
    }
  }
  EXPECT_GE(observer_.failed.load(), 1);
  EXPECT_EQ(KvBytesWhenIdle(), 0);
  std::vector<int> prompt = Prompt(4, 5);
  EXPECT_THAT(RunOne(MakeRequest(prompt, 6)).tokens, ElementsAreArray(ExpectedGreedy(prompt, 6)));
}

// ---- Stop conditions ----

// Scripted generation: the token produced at position p is script[p - prompt_len + 1].
FakeEngine::NextFn Script(int prompt_len, std::vector<int> script) {
  return [prompt_len, script](int, int pos) {
    size_t i = static_cast<size_t>(pos - prompt_len + 1);
    return i < script.size() ? script[i] : testing::Letter('z');
  };
}

TEST_F(SchedulerTest, StopStringAcrossTokensHoldsBackAndCuts) {
  // "he" "llo" " wo" "rld": the stop string "lo w" spans "llo" + " wo".
  Start({}, 64, 1024, Script(3, {testing::kHe, testing::kLlo, testing::kWo, testing::kRld}));
  ValidatedRequest r = MakeRequest(Prompt(2, 3), 10);
  r.stopping.stop_strings = {"lo w"};
  Outcome out = Summarize([&] {
    auto sink = std::make_shared<RecordingSink>();
    EXPECT_TRUE(scheduler_->Submit(std::move(r), sink).ok());
    return sink->Wait();
  }());
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->reason, FinishReason::kStopSequence);
  EXPECT_EQ(out.finished->matched_stop, "lo w");
  EXPECT_EQ(out.text, "hel");
  EXPECT_THAT(out.deltas, ElementsAreArray({"he", "l", ""}));  // "lo" was held back
  EXPECT_THAT(out.tokens, ElementsAreArray({testing::kHe, testing::kLlo, testing::kWo}));
  EXPECT_EQ(out.finished->usage.completion_tokens, 3);
}

TEST_F(SchedulerTest, PartialStopMatchIsReleasedWhenItFails) {
  Start({}, 64, 1024,
        Script(3, {testing::kHe, testing::kLlo, testing::kWo, testing::kRld, testing::kBang}));
  ValidatedRequest r = MakeRequest(Prompt(2, 3), 5);
  r.stopping.stop_strings = {"lox", "d?"};
  Outcome out = RunOne(std::move(r));
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->reason, FinishReason::kLength);
  EXPECT_EQ(out.text, "hello world!");
  EXPECT_THAT(out.deltas, ElementsAreArray({"he", "l", "lo wo", "rl", "d!"}));
}

TEST_F(SchedulerTest, HeldBackTextIsFlushedAtLength) {
  Start({}, 64, 1024, Script(3, {testing::kHe, testing::kLlo}));
  ValidatedRequest r = MakeRequest(Prompt(2, 3), 2);
  r.stopping.stop_strings = {"lo!"};
  Outcome out = RunOne(std::move(r));
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->reason, FinishReason::kLength);
  EXPECT_EQ(out.finished->text, "llo");  // "l" (+ held "lo") with the final token
  EXPECT_EQ(out.text, "hello");
}

TEST_F(SchedulerTest, SplitUtf8CharacterIsNeverEmittedHalf) {
  Start({}, 64, 1024,
        Script(3,
               {testing::Letter('c'), testing::kEAcuteLead, testing::kEAcuteTail, testing::kBang}));
  Outcome out = RunOne(MakeRequest(Prompt(2, 3), 4));
  EXPECT_THAT(out.deltas, ElementsAreArray({"c", "\xC3\xA9", "!"}));
}

TEST_F(SchedulerTest, StopTokenIsIncluded) {
  Start({}, 64, 1024, Script(3, {testing::Letter('a'), testing::kBang, testing::Letter('b')}));
  ValidatedRequest r = MakeRequest(Prompt(2, 3), 10);
  r.stopping.stop_token_ids = {testing::kBang};
  Outcome out = RunOne(std::move(r));
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->reason, FinishReason::kStopToken);
  EXPECT_EQ(out.text, "a!");
  EXPECT_THAT(out.tokens, ElementsAreArray({testing::Letter('a'), testing::kBang}));
}

TEST_F(SchedulerTest, EosStopsUnlessIgnoredAndNotBeforeMinNewTokens) {
  const int a = testing::Letter('a'), eos = 1;
  Start({}, 64, 1024, Script(3, {a, eos, a, eos, a, a, a, a}));
  Outcome plain = RunOne(MakeRequest(Prompt(2, 3), 10));
  ASSERT_TRUE(plain.finished);
  EXPECT_EQ(plain.finished->reason, FinishReason::kEos);
  EXPECT_THAT(plain.tokens, ElementsAreArray({a, eos}));
  EXPECT_EQ(plain.text, "a");

  // Below min_new_tokens EOS is masked: the next-best logit (id 2 = 'a') is chosen instead.
  ValidatedRequest min_new = MakeRequest(Prompt(2, 3), 10);
  min_new.stopping.min_new_tokens = 3;
  Outcome masked = RunOne(std::move(min_new));
  ASSERT_TRUE(masked.finished);
  EXPECT_EQ(masked.finished->reason, FinishReason::kEos);
  EXPECT_THAT(masked.tokens, ElementsAreArray({a, a, a, eos}));

  ValidatedRequest ignore = MakeRequest(Prompt(2, 3), 6);
  ignore.stopping.ignore_eos = true;
  Outcome ignored = RunOne(std::move(ignore));
  ASSERT_TRUE(ignored.finished);
  EXPECT_EQ(ignored.finished->reason, FinishReason::kLength);
  EXPECT_THAT(ignored.tokens, ElementsAreArray({a, eos, a, eos, a, a}));
  EXPECT_EQ(ignored.text, "aaaa");
}

// Every end-of-generation token of the model (EOS, end of turn: Llama 3's <|eot_id|>, ChatML's
// <|im_end|>) ends the stream as EOS does, adds no text, and is masked below min_new_tokens.
TEST_F(SchedulerTest, AnyEndOfGenerationTokenStops) {
  const int a = testing::Letter('a'), end_of_turn = testing::kBang;
  tokenizer_.eog_ids = {1, end_of_turn};
  Start({}, 64, 1024, Script(3, {a, end_of_turn, a, a, a, a, a, a}));
  Outcome out = RunOne(MakeRequest(Prompt(2, 3), 10));
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->reason, FinishReason::kEos);
  EXPECT_THAT(out.tokens, ElementsAreArray({a, end_of_turn}));
  EXPECT_EQ(out.text, "a");
  ValidatedRequest min_new = MakeRequest(Prompt(2, 3), 4);
  min_new.stopping.min_new_tokens = 4;
  Outcome masked = RunOne(std::move(min_new));
  ASSERT_TRUE(masked.finished);
  EXPECT_EQ(masked.finished->reason, FinishReason::kLength);
  ASSERT_EQ(masked.tokens.size(), 4u);
  EXPECT_NE(masked.tokens[1], end_of_turn);  // the scripted end of turn was masked
}

// Validation owns the context rule; the scheduler only refuses a request that breaks it.
TEST_F(SchedulerTest, ARequestPastTheContextIsRefusedAtSubmit) {
  Start({}, 64, /*context=*/32);
  Outcome out = RunOne(MakeRequest(Prompt(2, 20), 12));  // exactly fills the context
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->reason, FinishReason::kLength);
  EXPECT_EQ(out.finished->usage.completion_tokens, 12);
  const absl::Status past =
      scheduler_->Submit(MakeRequest(Prompt(2, 20), 13), std::make_shared<RecordingSink>());
  EXPECT_EQ(past.code(), absl::StatusCode::kInternal) << "validation's promise broken";
  EXPECT_THAT(std::string(past.message()), HasSubstr("exceed the model context of 32 tokens"));
  EXPECT_EQ(
      scheduler_->Submit(MakeRequest(Prompt(2, 33), 1), std::make_shared<RecordingSink>()).code(),
      absl::StatusCode::kInternal);
}

// ---- Sessions ----

ValidatedRequest InSession(ValidatedRequest r, std::string session) {
  r.session_id = std::move(session);
  return r;
}

TEST_F(SchedulerTest, SessionReusesTheLongestCommonPrefix) {
  Start();
  std::vector<int> p1 = Prompt(9, 10);
  Outcome t1 = RunOne(InSession(MakeRequest(p1, 5), "s"));
  ASSERT_TRUE(t1.finished);
  EXPECT_EQ(t1.finished->usage.cached_tokens, 0);
  EXPECT_EQ(observer_.session_misses.load(), 1);

  // Turn 2: the full conversation. The KV holds p1 + the first 4 generated tokens.
  std::vector<int> p2 = p1;
  p2.insert(p2.end(), t1.tokens.begin(), t1.tokens.end());
  p2.insert(p2.end(), {2, 3, 4});
  Outcome t2 = RunOne(InSession(MakeRequest(p2, 6), "s"));
  ASSERT_TRUE(t2.finished);
  EXPECT_EQ(t2.finished->usage.cached_tokens, 14);
  EXPECT_EQ(observer_.session_hits.load(), 1);
  EXPECT_THAT(t2.tokens, ElementsAreArray(ExpectedGreedy(p2, 6)));
  std::vector<StepRecord> steps = engine_->steps();
  EXPECT_EQ(steps[t1.tokens.size()][0].start, 14);  // turn 2 prefilled only the rest
  EXPECT_EQ(steps[t1.tokens.size()][0].tokens, static_cast<int>(p2.size()) - 14);

  // Turn 3 diverges after 5 tokens: only those are reused.
  std::vector<int> p3(p1.begin(), p1.begin() + 5);
  p3.push_back(p1[5] == 2 ? 3 : 2);
  Outcome t3 = RunOne(InSession(MakeRequest(p3, 4), "s"));
  EXPECT_EQ(t3.finished->usage.cached_tokens, 5);
  EXPECT_THAT(t3.tokens, ElementsAreArray(ExpectedGreedy(p3, 4)));

  // The same prompt again: everything but the last prompt token is reused.
  Outcome t4 = RunOne(InSession(MakeRequest(p3, 4), "s"));
  EXPECT_EQ(t4.finished->usage.cached_tokens, 5);
  EXPECT_THAT(t4.tokens, ElementsAreArray(t3.tokens));

  absl::StatusOr<int> freed = DeleteSession("s");
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(*freed, 6 + 3);  // p3 + 3 of the 4 generated tokens
  EXPECT_EQ(DeleteSession("s").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(KvBytesWhenIdle(), 0);
}

TEST_F(SchedulerTest, SeededSamplingIsTheSameAfterASessionHit) {
  Start();
  auto make = [](std::vector<int> prompt) {
    ValidatedRequest r = MakeRequest(std::move(prompt), 15);
    r.sampling.temperature = 0.8f;
    r.sampling.seed = 77;
    return r;
  };
  std::vector<int> prompt = Prompt(8, 12);
  std::vector<int> cold = RunOne(make(prompt)).tokens;
  std::vector<int> head(prompt.begin(), prompt.begin() + 9);
  ASSERT_TRUE(RunOne(InSession(make(head), "warm")).finished);
  Outcome hit = RunOne(InSession(make(prompt), "warm"));
  EXPECT_GE(hit.finished->usage.cached_tokens, 9);  // more if a generated token matches
  EXPECT_THAT(hit.tokens, ElementsAreArray(cold));
}

TEST_F(SchedulerTest, BusySessionIsRefused) {
  gate_ = std::make_unique<Gate>(/*at=*/1);
  Start();
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(InSession(MakeRequest(Prompt(2, 3), 4), "s"), sink).ok());
  gate_->WaitEntered();
  absl::Status second = scheduler_->Submit(InSession(MakeRequest(Prompt(2, 3), 4), "s"),
                                           std::make_shared<RecordingSink>());
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DeleteSession("s").status().code(), absl::StatusCode::kFailedPrecondition);
  gate_->Release();
  EXPECT_TRUE(Summarize(sink->Wait()).finished);
  // Free again once the last event is out.
  EXPECT_TRUE(RunOne(InSession(MakeRequest(Prompt(2, 3), 4), "s")).finished);
}

TEST_F(SchedulerTest, IdleSessionsExpireAfterTheTtl) {
  SchedulerOptions options;
  options.session_ttl = absl::ZeroDuration();
  Start(options);
  RunOne(InSession(MakeRequest(Prompt(2, 8), 3), "s"));
  Outcome again = RunOne(InSession(MakeRequest(Prompt(2, 8), 3), "s"));
  EXPECT_EQ(again.finished->usage.cached_tokens, 0);
  EXPECT_EQ(observer_.session_hits.load(), 0);
  EXPECT_GE(observer_.evicted.load(), 1);
}

TEST_F(SchedulerTest, KvPressureEvictsLeastRecentlyUsedIdleSessions) {
  Start({}, /*kv_blocks=*/8);  // 128 tokens
  // Two idle sessions of 3 blocks each (prompt 40 + 1 generated = 40 cached tokens).
  RunOne(InSession(MakeRequest(Prompt(2, 40), 1), "old"));
  RunOne(InSession(MakeRequest(Prompt(3, 40), 1), "new"));
  EXPECT_EQ(engine_->kv_cache().bytes_in_use(), 6 * FakeEngine::BlockBytes());
  // Needs 4 blocks: 2 are free, so exactly one session (the older) must go.
  EXPECT_TRUE(RunOne(MakeRequest(Prompt(4, 4), 60)).finished);
  EXPECT_EQ(observer_.evicted.load(), 1);
  EXPECT_EQ(DeleteSession("old").status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<int> kept = DeleteSession("new");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 40);
}

// ---- Prefix cache ----

TEST_F(SchedulerTest, StatelessRequestsReuseTheLongestCachedPrefix) {
  Start();
  std::vector<int> p1 = Prompt(9, 40);
  Outcome t1 = RunOne(MakeRequest(p1, 5));
  ASSERT_TRUE(t1.finished);
  EXPECT_EQ(t1.finished->usage.cached_tokens, 0);
  // The next turn resends everything: the two full blocks of turn 1's 44 stored tokens are
  // reused; the rest is computed.
  std::vector<int> p2 = p1;
  p2.insert(p2.end(), t1.tokens.begin(), t1.tokens.end());
  p2.insert(p2.end(), {2, 3, 4});
  Outcome t2 = RunOne(MakeRequest(p2, 6));
  ASSERT_TRUE(t2.finished);
  EXPECT_EQ(t2.finished->usage.cached_tokens, 32);
  EXPECT_THAT(t2.tokens, ElementsAreArray(ExpectedGreedy(p2, 6)));
  std::vector<StepRecord> steps = engine_->steps();
  EXPECT_EQ(steps[t1.tokens.size()][0].start, 32);
  EXPECT_EQ(observer_.session_hits.load() + observer_.session_misses.load(), 0);
}

TEST_F(SchedulerTest, PrefixesAreScopedPerPrincipalUnlessGlobal) {
  for (PrefixCacheScope scope :
       {PrefixCacheScope::kPerPrincipal, PrefixCacheScope::kGlobal, PrefixCacheScope::kOff}) {
    SchedulerOptions options;
    options.prefix_cache = scope;
    Start(options);
    ValidatedRequest a = MakeRequest(Prompt(3, 40), 2);
    a.principal = "alice";
    ValidatedRequest b = a;
    b.principal = "bob";
    const int same_principal = scope == PrefixCacheScope::kOff ? 0 : 32;
    const int other_principal = scope == PrefixCacheScope::kGlobal ? 32 : 0;
    ASSERT_TRUE(RunOne(a).finished);
    EXPECT_EQ(RunOne(b).finished->usage.cached_tokens, other_principal);
    EXPECT_EQ(RunOne(a).finished->usage.cached_tokens, same_principal);
    scheduler_.reset();
  }
}

TEST_F(SchedulerTest, ARequestWaitsForThePrefixAnotherIsComputing) {
  gate_ = std::make_unique<Gate>(/*at=*/0);
  SchedulerOptions options;
  options.max_batch_tokens = 16;  // the 40-token prompt takes three steps
  Start(options);
  int64_t peak_kv = 0;  // engine thread only, read after both requests ended
  engine_->SetBeforeForward([this, &peak_kv](int step) {
    gate_->AtStep(step);
    peak_kv = std::max(peak_kv, engine_->kv_cache().bytes_in_use());
  });
  auto sa = std::make_shared<RecordingSink>(), sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(6, 40), 2), sa).ok());
  gate_->WaitEntered();  // A computes its first block
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(6, 40), 2), sb).ok());
  gate_->Release();
  Outcome a = Summarize(sa->Wait()), b = Summarize(sb->Wait());
  ASSERT_TRUE(a.finished && b.finished);
  // B neither computed nor reserved A's blocks: it waited while A computed block 1 and then
  // took both from the cache.
  EXPECT_EQ(b.finished->usage.cached_tokens, 32);
  EXPECT_THAT(b.tokens, ElementsAreArray(a.tokens));
  const model::SequenceId seq_a = SequenceOf(engine_->steps(), 6);
  int b_chunks = 0;
  for (const StepRecord& step : engine_->steps()) {
    for (const ChunkRecord& c : step) {
      if (c.sequence == seq_a) continue;
      EXPECT_GE(c.start, 32) << "B computed a block A was computing";
      ++b_chunks;
    }
  }
  EXPECT_GT(b_chunks, 0);
  // A's 3 blocks, then B's 2 shared + 1 of its own: never B's whole reservation beside A's.
  EXPECT_EQ(peak_kv, 4 * FakeEngine::BlockBytes());
}

TEST_F(SchedulerTest, CachedPrefixesNeverFailARequestThatFits) {
  Start({}, /*kv_blocks=*/8);  // 128 tokens
  for (int tag = 2; tag < 5; ++tag) ASSERT_TRUE(RunOne(MakeRequest(Prompt(tag, 40), 1)).finished);
  EXPECT_EQ(engine_->kv_cache().bytes_in_use(), 0);
  EXPECT_EQ(engine_->kv_cache().bytes_cached(), 6 * FakeEngine::BlockBytes());
  // The whole budget: every cached block is reclaimed, least recently used first.
  Outcome all = RunOne(MakeRequest(Prompt(5, 4), 124));
  ASSERT_TRUE(all.finished) << all.error;
  EXPECT_EQ(engine_->kv_cache().evicted_blocks(), 6);
}

TEST_F(SchedulerTest, CachedPrefixesGoBeforeIdleSessions) {
  Start({}, /*kv_blocks=*/8);
  // The session holds 3 blocks (40 cached tokens); a stateless request leaves 2 cached.
  ASSERT_TRUE(RunOne(InSession(MakeRequest(Prompt(2, 40), 1), "s")).finished);
  ASSERT_TRUE(RunOne(MakeRequest(Prompt(3, 40), 1)).finished);
  EXPECT_EQ(engine_->kv_cache().bytes_cached(), 2 * FakeEngine::BlockBytes());
  // 5 blocks needed, 3 free: the two cached blocks go, the session stays.
  ASSERT_TRUE(RunOne(MakeRequest(Prompt(4, 4), 76)).finished);
  EXPECT_EQ(observer_.evicted.load(), 0);
  absl::StatusOr<int> kept = DeleteSession("s");
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, 40);
  // Deleting a session unpins its blocks: its full blocks stay cached for its principal.
  EXPECT_EQ(engine_->kv_cache().bytes_in_use(), 0);
  EXPECT_EQ(RunOne(MakeRequest(Prompt(2, 40), 1)).finished->usage.cached_tokens, 32);
}

TEST_F(SchedulerTest, RunningSessionIsNeverEvicted) {
  gate_ = std::make_unique<Gate>(/*at=*/2);
  Start({}, /*kv_blocks=*/8);
  auto ss = std::make_shared<RecordingSink>(), sx = std::make_shared<RecordingSink>();
  // The session's request reserves 6 blocks (40 + 56 tokens) and runs.
  ASSERT_TRUE(scheduler_->Submit(InSession(MakeRequest(Prompt(2, 40), 56), "s"), ss).ok());
  gate_->WaitEntered();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(5, 4), 60), sx).ok());  // needs 4
  gate_->Release();
  Outcome s = Summarize(ss->Wait());
  ASSERT_TRUE(s.finished) << s.error;
  EXPECT_EQ(s.finished->reason, FinishReason::kLength);
  EXPECT_TRUE(Summarize(sx->Wait()).finished);
  std::vector<StepRecord> steps = engine_->steps();
  EXPECT_GT(FirstStepOf(steps, 5), LastStepOf(steps, SequenceOf(steps, 2)));
}

TEST_F(SchedulerTest, MaxSessionsEvictsIdleOrRefusesWhenAllBusy) {
  SchedulerOptions options;
  options.max_sessions = 1;
  gate_ = std::make_unique<Gate>(/*at=*/3);
  Start(options);
  RunOne(InSession(MakeRequest(Prompt(2, 4), 2), "a"));
  auto sb = std::make_shared<RecordingSink>(), sc = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(InSession(MakeRequest(Prompt(2, 4), 5), "b"), sb).ok());
  gate_->WaitEntered();  // "a" was evicted for "b", which is running
  ASSERT_TRUE(scheduler_->Submit(InSession(MakeRequest(Prompt(2, 4), 5), "c"), sc).ok());
  gate_->Release();
  EXPECT_TRUE(Summarize(sb->Wait()).finished);
  Outcome c = Summarize(sc->Wait());
  EXPECT_EQ(c.error.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.error.message(), HasSubstr("max_sessions"));
  EXPECT_EQ(DeleteSession("a").status().code(), absl::StatusCode::kNotFound);
}

// ---- Speculative decoding ----

// A model that cycles through five letters whatever came before: prompt lookup finds the
// cycle, so drafts are right once it has gone round once.
int CycleNext(int last, int) { return 2 + (last - 2 + 1) % 5; }

SchedulerOptions Speculating(int max_batch = 64) {
  SchedulerOptions options;
  options.speculation.mode = Speculation::kNgram;
  options.speculation.max_batch = max_batch;
  return options;
}

// Decode chunks in the steps: [step] the token counts of chunks starting at or past `prompt`.
std::vector<std::vector<int>> DecodeChunks(const std::vector<StepRecord>& steps, int prompt) {
  std::vector<std::vector<int>> out;
  for (const StepRecord& step : steps) {
    out.emplace_back();
    for (const ChunkRecord& c : step) {
      if (c.start >= prompt) out.back().push_back(c.tokens);
    }
  }
  return out;
}

TEST_F(SchedulerTest, SpeculationKeepsDraftsTheModelWouldWriteAndTakesFewerSteps) {
  Start(Speculating(), 64, 1024, CycleNext);
  const std::vector<int> prompt = {2, 3, 4, 5, 6, 2, 3};
  Outcome out = RunOne(MakeRequest(prompt, 40));
  ASSERT_TRUE(out.error.ok()) << out.error;
  EXPECT_THAT(out.tokens, ElementsAreArray(ExpectedGreedy(prompt, 40, CycleNext)));
  EXPECT_EQ(out.finished->usage.completion_tokens, 40);
  // Up to 8 drafted tokens a step (the default), all of them right, each step giving 9 tokens
  // (the drafts and the model's own next one): prefill, then 5 verified steps.
  const std::vector<StepRecord> steps = engine_->steps();
  EXPECT_EQ(steps.size(), 6u);
  int drafted = 0;
  for (const std::vector<int>& step : DecodeChunks(steps, 7)) {
    for (int tokens : step) drafted += tokens - 1;
  }
  EXPECT_EQ(drafted, observer_.drafted_tokens.load());
  EXPECT_GE(drafted, 33);
  EXPECT_EQ(observer_.accepted_tokens.load(), drafted);
  EXPECT_EQ(KvBytesWhenIdle(), 0);
}

TEST_F(SchedulerTest, SpeculationGivesTheSameTokensWhenDraftsAreWrong) {
  // DefaultNext depends on the position: drafts from earlier text are mostly rejected.
  for (const bool speculate : {false, true}) {
    Start(speculate ? Speculating() : SchedulerOptions{});
    std::vector<int> prompt = Prompt(4, 30);
    ValidatedRequest seeded = MakeRequest(prompt, 30);
    seeded.sampling.temperature = 0.9f;
    seeded.sampling.seed = 5;
    Outcome greedy = RunOne(MakeRequest(prompt, 30));
    Outcome sampled = RunOne(seeded);
    ASSERT_TRUE(greedy.error.ok() && sampled.error.ok());
    EXPECT_THAT(greedy.tokens, ElementsAreArray(ExpectedGreedy(prompt, 30)));
    static std::vector<int> plain_sampled;
    if (!speculate) plain_sampled = sampled.tokens;
    EXPECT_THAT(sampled.tokens, ElementsAreArray(plain_sampled));
    scheduler_.reset();
  }
}

TEST_F(SchedulerTest, DraftModelDraftsAreKeptWhenRightAndChangeNothingWhenWrong) {
  SchedulerOptions options = Speculating();
  options.speculation.mode = Speculation::kDraft;
  const std::vector<int> prompt = {2, 3, 4};
  // A draft model that writes what the model writes: every draft kept, 40 tokens in 6 steps.
  Start(options, 64, 1024, CycleNext, /*draft_next=*/CycleNext);
  Outcome out = RunOne(MakeRequest(prompt, 40));
  ASSERT_TRUE(out.error.ok()) << out.error;
  EXPECT_THAT(out.tokens, ElementsAreArray(ExpectedGreedy(prompt, 40, CycleNext)));
  EXPECT_EQ(engine_->steps().size(), 6u);
  EXPECT_GE(observer_.drafted_tokens.load(), 33);
  EXPECT_EQ(observer_.accepted_tokens.load(), observer_.drafted_tokens.load());
  EXPECT_EQ(KvBytesWhenIdle(), 0);
  EXPECT_EQ(draft_engine_->kv_cache().bytes_in_use(), 0);  // freed with the request

  // One that writes something else: the same tokens as without speculation, greedy and seeded.
  ValidatedRequest seeded = MakeRequest(Prompt(4, 30), 30);
  seeded.sampling.temperature = 0.9f;
  seeded.sampling.seed = 5;
  Start({}, 64, 1024, CycleNext);
  const Outcome plain_sampled = RunOne(seeded);
  observer_.drafted_tokens = 0;
  observer_.accepted_tokens = 0;
  Start(options, 64, 1024, CycleNext, /*draft_next=*/testing::DefaultNext);
  EXPECT_THAT(RunOne(MakeRequest(prompt, 30)).tokens,
              ElementsAreArray(ExpectedGreedy(prompt, 30, CycleNext)));
  EXPECT_THAT(RunOne(seeded).tokens, ElementsAreArray(plain_sampled.tokens));
  EXPECT_GT(observer_.drafted_tokens.load(), 0);
  EXPECT_LT(observer_.accepted_tokens.load(), observer_.drafted_tokens.load());
  // Steps that keep nothing pause drafting for 2, 4, 8, ... tokens: of 2 x 30 tokens, each
  // request drafts 8 (the first step), then 1 per step for two steps, then about once per pause.
  EXPECT_LT(observer_.drafted_tokens.load(), 2 * (8 + 6));
}

TEST_F(SchedulerTest, SpeculationStopsWhereAStopStringEndsAndKeepsTheSessionExact) {
  Start(Speculating(), 64, 1024, CycleNext);
  const std::vector<int> prompt = {2, 3, 4, 5, 6, 2, 3, 4, 5, 6};
  ValidatedRequest r = InSession(MakeRequest(prompt, 40), "spec");
  r.stopping.stop_strings = {"bcdea"};  // inside the first drafted run
  Outcome out = RunOne(r);
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->reason, FinishReason::kStopSequence);
  const std::vector<int> expected = ExpectedGreedy(prompt, 40, CycleNext);
  ASSERT_LE(out.tokens.size(), expected.size());
  EXPECT_THAT(out.tokens, ElementsAreArray(expected.begin(), expected.begin() + out.tokens.size()));
  EXPECT_EQ(out.finished->usage.completion_tokens, static_cast<int>(out.tokens.size()));
  // The session holds exactly prompt + output but the last token: the next turn reuses that.
  std::vector<int> next = prompt;
  next.insert(next.end(), out.tokens.begin(), out.tokens.end());
  Outcome turn2 = RunOne(InSession(MakeRequest(next, 6), "spec"));
  ASSERT_TRUE(turn2.finished);
  EXPECT_EQ(turn2.finished->usage.cached_tokens, static_cast<int>(next.size()) - 1);
  EXPECT_THAT(turn2.tokens, ElementsAreArray(ExpectedGreedy(next, 6, CycleNext)));
}

// Thousands of seeded requests with every sampling knob, 16 at a time, speculation on and off:
// the same tokens and logprobs. A model whose next token follows the last one most of the
// time (drafts are often right) but not always (and sampling strays from it).
TEST_F(SchedulerTest, ThousandsOfSeededRequestsGiveTheSameTokensWithSpeculation) {
  constexpr int kRequests = 2000;
  std::mt19937 rng(2026);
  std::vector<ValidatedRequest> requests;
  for (int i = 0; i < kRequests; ++i) {
    std::vector<int> prompt;
    const int length = 3 + static_cast<int>(rng() % 20);
    for (int t = 0; t < length; ++t) prompt.push_back(2 + static_cast<int>(rng() % 8));
    ValidatedRequest r =
        MakeRequest(prompt, 8 + static_cast<int>(rng() % 24), absl::StrCat("r", i));
    r.sampling.temperature = (rng() % 4 == 0) ? 0.0f : 0.3f + 0.2f * static_cast<float>(rng() % 6);
    r.sampling.seed = rng();
    r.sampling.top_k = static_cast<int>(rng() % 3) * 4;
    r.sampling.top_p = rng() % 2 ? 1.0f : 0.8f;
    r.sampling.min_p = rng() % 3 == 0 ? 0.05f : 0.0f;
    r.sampling.repetition_penalty = rng() % 3 == 0 ? 1.2f : 1.0f;
    r.sampling.frequency_penalty = rng() % 4 == 0 ? 0.5f : 0.0f;
    if (rng() % 5 == 0) r.sampling.logit_bias = {{2 + static_cast<int>(rng() % 8), 1.5f}};
    r.stopping.min_new_tokens = static_cast<int>(rng() % 6);
    if (rng() % 6 == 0) r.stopping.stop_strings = {"ab"};
    r.output.logprobs = rng() % 2 == 0;
    r.sampling.top_logprobs = r.output.logprobs ? 2 : 0;
    requests.push_back(std::move(r));
  }
  // Mostly "the letter after the last one, in a cycle of eight": drafts are often right.
  const FakeEngine::NextFn next = [](int last, int pos) {
    return pos % 7 == 0 ? 2 + (last * 3 + pos) % 8 : 2 + (last - 2 + 1) % 8;
  };
  std::vector<Outcome> results[2];
  SchedulerOptions speculating = Speculating();
  speculating.speculation.max_draft_tokens = 64;  // 4 each for 16 decoding sequences
  for (const bool speculate : {false, true}) {
    Start(speculate ? speculating : SchedulerOptions{}, 256, 1024, next);
    for (int start = 0; start < kRequests; start += 16) {
      std::vector<std::shared_ptr<RecordingSink>> sinks;
      for (int i = start; i < start + 16; ++i) {
        sinks.push_back(std::make_shared<RecordingSink>());
        ASSERT_TRUE(scheduler_->Submit(requests[i], sinks.back()).ok());
      }
      for (auto& sink : sinks) results[speculate].push_back(Summarize(sink->Wait()));
    }
    scheduler_.reset();
  }
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(results[0][i].error.ok() && results[1][i].error.ok()) << i;
    ASSERT_THAT(results[1][i].tokens, ElementsAreArray(results[0][i].tokens)) << "request " << i;
    ASSERT_EQ(results[1][i].text, results[0][i].text) << "request " << i;
    ASSERT_EQ(results[1][i].logprobs.size(), results[0][i].logprobs.size());
    for (size_t t = 0; t < results[0][i].logprobs.size(); ++t) {
      EXPECT_EQ(results[1][i].logprobs[t].logprob, results[0][i].logprobs[t].logprob);
    }
  }
  EXPECT_GT(observer_.accepted_tokens.load(), kRequests);  // drafts were kept, often
  EXPECT_LT(observer_.accepted_tokens.load(), observer_.drafted_tokens.load());  // and refused
}

TEST_F(SchedulerTest, ARequestMayOptOutOfSpeculation) {
  Start(Speculating(), 64, 1024, CycleNext);
  ValidatedRequest r = MakeRequest({2, 3, 4, 5, 6, 2, 3}, 20);
  r.speculate = false;
  Outcome out = RunOne(r);
  EXPECT_THAT(out.tokens, ElementsAreArray(ExpectedGreedy({2, 3, 4, 5, 6, 2, 3}, 20, CycleNext)));
  for (const std::vector<int>& step : DecodeChunks(engine_->steps(), 7)) {
    for (int tokens : step) EXPECT_EQ(tokens, 1);
  }
  EXPECT_EQ(observer_.drafted_tokens.load(), 0);
}

TEST_F(SchedulerTest, SpeculationStepsAsideWhenTheBatchIsBusy) {
  slow_steps_ = true;
  Start(Speculating(/*max_batch=*/1), 64, 1024, CycleNext);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ASSERT_TRUE(scheduler_->Submit(MakeRequest({2, 3, 4, 5, 6, 2, 3}, 30), sinks.back()).ok());
  }
  for (auto& sink : sinks) {
    Outcome out = Summarize(sink->Wait());
    EXPECT_THAT(out.tokens, ElementsAreArray(ExpectedGreedy({2, 3, 4, 5, 6, 2, 3}, 30, CycleNext)));
  }
  // A step with several decoding sequences drafted nothing.
  for (const std::vector<int>& step : DecodeChunks(engine_->steps(), 7)) {
    if (step.size() > 1) {
      for (int tokens : step) EXPECT_EQ(tokens, 1);
    }
  }
}

// ---- Drain and shutdown ----

TEST_F(SchedulerTest, DrainFinishesRunningAndRefusesNew) {
  gate_ = std::make_unique<Gate>(/*at=*/1);
  Start();
  EXPECT_TRUE(scheduler_->WaitUntilIdle(absl::ZeroDuration()));
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 8), sink).ok());
  gate_->WaitEntered();
  scheduler_->StartDrain();
  EXPECT_EQ(
      scheduler_->Submit(MakeRequest(Prompt(2, 3), 8), std::make_shared<RecordingSink>()).code(),
      absl::StatusCode::kUnavailable);
  EXPECT_FALSE(scheduler_->WaitUntilIdle(absl::Milliseconds(1)));
  gate_->Release();
  EXPECT_TRUE(scheduler_->WaitUntilIdle(absl::Seconds(30)));
  Outcome out = Summarize(sink->Wait());
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.finished->usage.completion_tokens, 8);
}

TEST_F(SchedulerTest, DestructionFailsQueuedAndRunningWithUnavailable) {
  SchedulerOptions options;
  options.max_batch_sequences = 1;
  gate_ = std::make_unique<Gate>(/*at=*/1);
  Start(options);
  auto sa = std::make_shared<RecordingSink>(), sb = std::make_shared<RecordingSink>();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(2, 3), 900), sa).ok());
  gate_->WaitEntered();
  ASSERT_TRUE(scheduler_->Submit(MakeRequest(Prompt(3, 3), 100), sb).ok());
  // Destroy while the engine thread sits in Forward; it stops at the next step boundary.
  // (900 steps of >= 1 ms each leave the destroyer thread ample time to call Stop().)
  slow_steps_ = true;
  std::thread destroyer([&] { scheduler_.reset(); });
  gate_->Release();
  destroyer.join();
  EXPECT_EQ(Summarize(sa->Wait()).error.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Summarize(sb->Wait()).error.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine_->kv_cache().bytes_in_use(), 0);
}

// ---- Embeddings: prefill only, pooled, nothing generated ----

ValidatedRequest EmbedRequest(std::vector<int> prompt, model::Pooling pooling, bool normalize,
                              int dimensions = 0) {
  ValidatedRequest r = MakeRequest(std::move(prompt), 0, "e");
  r.embedding =
      EmbeddingParams{.pooling = pooling, .dimensions = dimensions, .normalize = normalize};
  return r;
}

// The fake's hidden state of token t at position p is (t, p, 1).
std::vector<float> ExpectedMean(const std::vector<int>& prompt) {
  double tokens = 0, positions = 0;
  for (size_t p = 0; p < prompt.size(); ++p) {
    tokens += prompt[p];
    positions += static_cast<double>(p);
  }
  const double n = static_cast<double>(prompt.size());
  return {static_cast<float>(tokens / n), static_cast<float>(positions / n), 1.0f};
}

TEST_F(SchedulerTest, AnEmbeddingPoolsEveryChunkOfItsPromptAndGeneratesNothing) {
  SchedulerOptions options;
  options.max_batch_tokens = 8;  // a 21-token prompt takes three steps
  Start(options);
  const std::vector<int> prompt = Prompt(3, 21);
  const Outcome mean = RunOne(EmbedRequest(prompt, model::Pooling::kMean, false));
  ASSERT_TRUE(mean.error.ok()) << mean.error;
  ASSERT_TRUE(mean.finished.has_value());
  EXPECT_TRUE(mean.tokens.empty());
  EXPECT_EQ(mean.finished->usage.prompt_tokens, 21);
  EXPECT_EQ(mean.finished->usage.completion_tokens, 0);
  EXPECT_THAT(mean.finished->embedding, ElementsAreArray(ExpectedMean(prompt)));

  const Outcome last = RunOne(EmbedRequest(prompt, model::Pooling::kLast, false));
  const auto tail = FakeEngine::Hidden(prompt.back(), 20);
  EXPECT_THAT(last.finished->embedding, ElementsAreArray(tail));
  const Outcome cls = RunOne(EmbedRequest(prompt, model::Pooling::kCls, false));
  const auto head = FakeEngine::Hidden(prompt.front(), 0);
  EXPECT_THAT(cls.finished->embedding, ElementsAreArray(head));

  // Normalized, and cut to the first dimensions before normalizing.
  const Outcome unit = RunOne(EmbedRequest(prompt, model::Pooling::kLast, true, 2));
  const float norm = std::sqrt(tail[0] * tail[0] + tail[1] * tail[1]);
  EXPECT_THAT(unit.finished->embedding, ElementsAreArray({::testing::FloatEq(tail[0] / norm),
                                                          ::testing::FloatEq(tail[1] / norm)}));
  EXPECT_EQ(KvBytesWhenIdle(), 0) << "an embedding keeps no K/V";
}

// A mean or cls embedding needs every token's hidden state, so it never starts from a cached
// prefix; a last-token embedding does, like a generation request.
TEST_F(SchedulerTest, OnlyLastTokenEmbeddingsTakeCachedPrefixes) {
  Start();
  const std::vector<int> prompt = Prompt(4, 40);
  ASSERT_TRUE(RunOne(MakeRequest(prompt, 2)).error.ok());  // publishes 2 full blocks
  const Outcome mean = RunOne(EmbedRequest(prompt, model::Pooling::kMean, false));
  EXPECT_EQ(mean.finished->usage.cached_tokens, 0);
  EXPECT_THAT(mean.finished->embedding, ElementsAreArray(ExpectedMean(prompt)));
  const Outcome last = RunOne(EmbedRequest(prompt, model::Pooling::kLast, false));
  EXPECT_EQ(last.finished->usage.cached_tokens, 32);
  EXPECT_THAT(last.finished->embedding, ElementsAreArray(FakeEngine::Hidden(prompt.back(), 39)));
}

// Embeddings and generations in one batch: each gets what it would alone.
TEST_F(SchedulerTest, EmbeddingsBatchWithGenerations) {
  Start();
  const Outcome alone = RunOne(MakeRequest(Prompt(5, 9), 6));
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 4; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ValidatedRequest r = i % 2 == 0 ? MakeRequest(Prompt(5, 9), 6)
                                    : EmbedRequest(Prompt(6 + i, 12), model::Pooling::kMean, false);
    ASSERT_TRUE(scheduler_->Submit(std::move(r), sinks.back()).ok());
  }
  for (int i = 0; i < 4; ++i) {
    const Outcome got = Summarize(sinks[i]->Wait());
    ASSERT_TRUE(got.error.ok()) << got.error;
    if (i % 2 == 0) {
      EXPECT_EQ(got.tokens, alone.tokens);
    } else {
      EXPECT_THAT(got.finished->embedding, ElementsAreArray(ExpectedMean(Prompt(6 + i, 12))));
    }
  }
}

// An encoder attends over its whole input: each input is one chunk from position 0 (one that
// does not fit the rest of a step waits for the next, in order), and no input starts from a
// cached prefix, whatever its pooling.
TEST_F(SchedulerTest, AnEncoderComputesEachInputInOneChunkAndSharesNothing) {
  SchedulerOptions options;
  options.max_batch_tokens = 16;
  bidirectional_ = true;
  Start(options);
  const std::vector<int> shared = Prompt(4, 16);
  ASSERT_TRUE(RunOne(EmbedRequest(shared, model::Pooling::kLast, false)).error.ok());
  const Outcome again = RunOne(EmbedRequest(shared, model::Pooling::kLast, false));
  ASSERT_TRUE(again.error.ok()) << again.error;
  EXPECT_EQ(again.finished->usage.cached_tokens, 0);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 4; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ASSERT_TRUE(scheduler_
                    ->Submit(EmbedRequest(Prompt(10 + i, 6 + 2 * i), model::Pooling::kMean, false),
                             sinks.back())
                    .ok());
  }
  for (int i = 0; i < 4; ++i) {
    const Outcome got = Summarize(sinks[i]->Wait());
    ASSERT_TRUE(got.error.ok()) << got.error;
    EXPECT_THAT(got.finished->embedding, ElementsAreArray(ExpectedMean(Prompt(10 + i, 6 + 2 * i))));
  }
  for (const StepRecord& step : engine_->steps()) {
    int tokens = 0;
    for (const ChunkRecord& chunk : step) {
      EXPECT_EQ(chunk.start, 0) << "an encoder's input was split";
      tokens += chunk.tokens;
    }
    EXPECT_LE(tokens, 16);
  }
}

}  // namespace
}  // namespace textgen::server
