#pragma once

// Test doubles for the scheduler: an Engine whose logits are a deterministic function of
// (a sequence's last token, its position) over a real model::KvCache, a small tokenizer,
// and a recording StreamSink. Header-only; tests only. std::mutex, not absl::Mutex: the
// system absl is not TSan-instrumented.

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "model/runtime/engine.h"
#include "model/runtime/kv_cache.h"
#include "model/tokenizer/tokenizer.h"
#include "server/scheduler/stream_sink.h"

namespace textgen::server::testing {

// ---- Tokenizer: id 0 BOS, 1 EOS, 2..27 'a'..'z', then fixed multi-byte pieces ----
inline const std::vector<std::string>& FakePieces() {
  static const std::vector<std::string> pieces = [] {
    std::vector<std::string> p = {"", ""};
    for (char c = 'a'; c <= 'z'; ++c) p.push_back(std::string(1, c));
    // 28..: words for stop-string tests, then the two bytes of "é" split across tokens.
    for (const char* w : {" ", "he", "llo", " wo", "rld", "!", "\xC3", "\xA9", "lo"}) {
      p.push_back(w);
    }
    while (p.size() < 48) p.push_back(absl::StrCat("<", p.size(), ">"));
    return p;
  }();
  return pieces;
}
inline constexpr int kFakeVocab = 48;
inline constexpr int kSpace = 28, kHe = 29, kLlo = 30, kWo = 31, kRld = 32, kBang = 33,
                     kEAcuteLead = 34, kEAcuteTail = 35, kLo = 36;
inline int Letter(char c) { return 2 + (c - 'a'); }

class LetterTokenizer final : public model::Tokenizer {
 public:
  std::vector<int> Encode(std::string_view text, bool add_bos) const override {
    std::vector<int> ids;
    if (add_bos) ids.push_back(0);
    for (char c : text) ids.push_back(c >= 'a' && c <= 'z' ? Letter(c) : kSpace);
    return ids;
  }
  std::string TokenBytes(int id, int previous_id) const override {
    return id >= 0 && id < kFakeVocab ? FakePieces()[id] : "";
  }
  int vocab_size() const override { return kFakeVocab; }
  int bos_id() const override { return 0; }
  int eos_id() const override { return 1; }
  std::vector<int> EncodeWithSpecialTokens(std::string_view text, bool add_bos,
                                           std::span<const model::TextRange>) const override {
    return Encode(text, add_bos);  // the fake vocabulary has no special tokens to parse
  }
  bool IsControl(int id) const override { return id == 0 || id == 1; }
  const std::vector<int>& end_of_generation_ids() const override { return eog_ids; }
  std::string TokenText(int id) const override { return TokenBytes(id, -1); }
  // EOS plus the tests' choice of end-of-turn tokens, ascending.
  std::vector<int> eog_ids = {1};
};

// ---- Engine ----

// Greedy next token after `last` at position `pos` (the default rule; tests may script it).
inline int DefaultNext(int last, int pos) { return 2 + (last * 7 + pos * 3) % 26; }

struct ChunkRecord {
  model::SequenceId sequence;
  int start;        // position of the chunk's first token
  int first_token;  // tags a request when start == 0
  int tokens;
};
using StepRecord = std::vector<ChunkRecord>;

class FakeEngine final : public model::Engine {
 public:
  using NextFn = std::function<int(int last, int pos)>;

  // `kv_blocks`: the KV budget in blocks of 16 tokens.
  FakeEngine(int kv_blocks, int context_length, NextFn next = DefaultNext)
      : cache_(Layout(), kv_blocks * BlockBytes()), next_(std::move(next)) {
    config_.vocab_size = kFakeVocab;
    config_.context_length = context_length;
    config_.n_layers = 1;
    config_.n_kv_heads = 1;
    config_.head_dim = 4;
    config_.dim = kFakeHiddenDim;
    logits_.resize(kFakeVocab * 256);
  }

  // Width of the hidden states the fake returns for embeddings.
  static constexpr int kFakeHiddenDim = 3;
  // The fake's final hidden state of `token` at `position`: what embedding tests expect.
  static std::array<float, kFakeHiddenDim> Hidden(int token, int position) {
    return {static_cast<float>(token), static_cast<float>(position), 1.0f};
  }

  static model::KvCacheLayout Layout() { return {1, 1, 4, 4}; }
  static int64_t BlockBytes() { return model::KvCache::kBlockTokens * 1 * 2 * 4 * 4; }

  // Bidirectional attention, as an encoder's (set before the scheduler starts).
  void set_causal(bool causal) { config_.causal = causal; }

  // Called at the start of each Forward on the engine thread (set before the scheduler
  // starts). May block, to hold the engine at a known point.
  void SetBeforeForward(std::function<void(int step)> hook) { before_forward_ = std::move(hook); }

  absl::StatusOr<model::ForwardResult> Forward(
      std::span<const model::SequenceChunk> batch) override {
    if (before_forward_) before_forward_(steps_done_.load());
    if (steps_done_.load() == fail_at_step_.load()) {
      steps_done_.fetch_add(1);
      return absl::InternalError("injected failure");
    }
    StepRecord record;
    int rows = 0;
    for (const model::SequenceChunk& chunk : batch) {
      const int len = cache_.Length(chunk.sequence);
      if (len < 0) return absl::NotFoundError("unknown sequence");
      if (chunk.tokens.empty()) return absl::InvalidArgumentError("empty chunk");
      if (len + static_cast<int>(chunk.tokens.size()) > config_.context_length) {
        return absl::OutOfRangeError("past the context");
      }
      for (int t : chunk.tokens) {
        if (t < 0 || t >= kFakeVocab) return absl::InvalidArgumentError("bad token");
      }
      record.push_back(
          {chunk.sequence, len, chunk.tokens[0], static_cast<int>(chunk.tokens.size())});
    }
    for (const model::SequenceChunk& chunk : batch) {
      const int len = cache_.Length(chunk.sequence);
      const int n = static_cast<int>(chunk.tokens.size());
      // As the real engine: the scheduler must have reserved the room.
      if (len + n > cache_.Capacity(chunk.sequence)) {
        return absl::FailedPreconditionError("chunk without reserved KV room");
      }
    }
    hidden_.clear();
    for (const model::SequenceChunk& chunk : batch) {
      const int len = cache_.Length(chunk.sequence);
      const int n = static_cast<int>(chunk.tokens.size());
      (void)cache_.Append(chunk.sequence, n);
      const int first = chunk.hidden == model::HiddenRows::kAll    ? 0
                        : chunk.hidden == model::HiddenRows::kLast ? n - 1
                                                                   : n;
      for (int t = first; t < n; ++t) {
        for (float v : Hidden(chunk.tokens[t], len + t)) hidden_.push_back(v);
      }
      if (!chunk.want_logits) continue;
      for (int t = chunk.logits_per_token ? 0 : n - 1; t < n; ++t) {
        const int next = next_(chunk.tokens[t], len + t);
        const size_t need = static_cast<size_t>(rows + 1) * kFakeVocab;
        if (logits_.size() < need) logits_.resize(need);
        float* row = logits_.data() + static_cast<size_t>(rows) * kFakeVocab;
        for (int i = 0; i < kFakeVocab; ++i) {
          row[i] = -0.5f * static_cast<float>((i - next + kFakeVocab) % kFakeVocab);
        }
        ++rows;
      }
    }
    {
      std::lock_guard lock(mu_);
      steps_.push_back(std::move(record));
    }
    steps_done_.fetch_add(1);
    return model::ForwardResult{.logits = logits_.data(),
                                .rows = rows,
                                .vocab_size = kFakeVocab,
                                .hidden = hidden_.data(),
                                .hidden_rows = static_cast<int>(hidden_.size()) / kFakeHiddenDim,
                                .dim = kFakeHiddenDim};
  }

  // Makes Forward number `step` (0-based, counting failed ones) fail with INTERNAL.
  void FailAtStep(int step) { fail_at_step_ = step; }

  // Serial: the scheduler's TSan tests run without OpenMP.
  void ParallelFor(int n, absl::FunctionRef<void(int)> body) override {
    for (int i = 0; i < n; ++i) body(i);
  }

  model::KvCache& kv_cache() override { return cache_; }
  const model::ModelConfig& config() const override { return config_; }

  std::vector<StepRecord> steps() const {
    std::lock_guard lock(mu_);
    return steps_;
  }

 private:
  model::KvCache cache_;
  model::ModelConfig config_;
  NextFn next_;
  std::function<void(int)> before_forward_;
  std::vector<float> logits_;  // [rows][vocab], grown on demand
  std::vector<float> hidden_;  // [hidden rows][kFakeHiddenDim]
  std::atomic<int> steps_done_{0};
  std::atomic<int> fail_at_step_{-1};
  mutable std::mutex mu_;
  std::vector<StepRecord> steps_;  // guarded by mu_
};

// The greedy continuation FakeEngine produces for `prompt` (n tokens).
inline std::vector<int> ExpectedGreedy(const std::vector<int>& prompt, int n,
                                       const FakeEngine::NextFn& next = DefaultNext) {
  std::vector<int> out;
  int last = prompt.back();
  int pos = static_cast<int>(prompt.size()) - 1;
  for (int i = 0; i < n; ++i) {
    last = next(last, pos++);
    out.push_back(last);
  }
  return out;
}

// ---- Sink ----

// Records every event. Thread-safe. Optionally refuses pushes after `accept_limit` events
// (a slow reader) or reports closed after `close_after` events (a client cancel).
class RecordingSink final : public StreamSink {
 public:
  explicit RecordingSink(int accept_limit = -1, int close_after = -1)
      : accept_limit_(accept_limit), close_after_(close_after) {}

  bool Push(StreamEvent event) override {
    std::lock_guard lock(mu_);
    const bool last = !std::holds_alternative<TokenEvent>(event);
    const bool accepted = accept_limit_ < 0 || static_cast<int>(events_.size()) < accept_limit_;
    events_.push_back(std::move(event));
    if (last) done_ = true;
    if (close_after_ >= 0 && static_cast<int>(events_.size()) >= close_after_) closed_ = true;
    cv_.notify_all();
    return accepted && !closed_;
  }
  bool IsClosed() const override {
    std::lock_guard lock(mu_);
    return closed_;
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }

  // Waits for the last event (FinishedEvent or ErrorEvent) and returns all events.
  std::vector<StreamEvent> Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return events_;
  }
  // Waits until at least `n` events arrived.
  void WaitForEvents(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ || static_cast<int>(events_.size()) >= n; });
  }

 private:
  const int accept_limit_;
  const int close_after_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  std::vector<StreamEvent> events_;
  bool done_ = false;
  bool closed_ = false;
};

// A summary of one request's stream.
struct Outcome {
  std::string text;                 // all token/finished text concatenated (echo included)
  std::vector<int> tokens;          // all token ids
  std::vector<std::string> deltas;  // text of each event, in order
  std::vector<model::SampleResult> logprobs;
  std::optional<FinishedEvent> finished;
  absl::Status error = absl::OkStatus();
};

inline Outcome Summarize(const std::vector<StreamEvent>& events) {
  Outcome out;
  for (const StreamEvent& e : events) {
    if (const auto* t = std::get_if<TokenEvent>(&e)) {
      out.text += t->text;
      out.deltas.push_back(t->text);
      out.tokens.insert(out.tokens.end(), t->token_ids.begin(), t->token_ids.end());
      out.logprobs.insert(out.logprobs.end(), t->logprobs.begin(), t->logprobs.end());
    } else if (const auto* f = std::get_if<FinishedEvent>(&e)) {
      out.text += f->text;
      out.deltas.push_back(f->text);
      out.tokens.insert(out.tokens.end(), f->token_ids.begin(), f->token_ids.end());
      out.logprobs.insert(out.logprobs.end(), f->logprobs.begin(), f->logprobs.end());
      out.finished = *f;
    } else if (const auto* err = std::get_if<ErrorEvent>(&e)) {
      out.error = err->status;
    }
  }
  return out;
}

}  // namespace textgen::server::testing
