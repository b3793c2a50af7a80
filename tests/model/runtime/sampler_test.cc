// Sampler tests: each processor against a straightforward independent computation of the
// documented formula (HF / OpenAI), plus seeded statistical and reproducibility checks.
#include "model/runtime/sampler.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <new>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/temp_files.h"

// Counts heap allocations so a test can check the steady-state Sample() path makes none.
// GCC's -Wmismatched-new-delete misreads the free() in the replacement delete after inlining.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
static std::atomic<long> g_allocations{0};

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's buffer uses it): every allocation must come from
// malloc, or sanitizers see operator new paired with the free() below.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace textgen::model {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<double> Softmax(const std::vector<double>& x) {
  double m = -kInf;
  for (double v : x) m = std::max(m, v);
  std::vector<double> p(x.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += p[i] = std::exp(x[i] - m);
  for (double& v : p) v /= s;
  return p;
}

std::vector<float> LogitsFromProbs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double v : p) l.push_back(static_cast<float>(std::log(v)));
  return l;
}

SamplingParams Params(float temperature = 1.0f, uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return p;
}

void ExpectProbsNear(const std::vector<float>& got, const std::vector<double>& want,
                     double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "token " << i;
}

TEST(SamplerTest, GreedyPicksArgmaxLowestIdOnTies) {
  Sampler s(Params(0.0f), {});
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f, 2.9f};
  EXPECT_EQ(s.Sample(logits).token, 1);
  std::vector<float> single = {-5.0f};
  EXPECT_EQ(s.Sample(single).token, 0);
  std::vector<float> all_equal(7, 0.25f);
  EXPECT_EQ(s.Sample(all_equal).token, 0);
  EXPECT_EQ(s.num_generated(), 3);
}

TEST(SamplerTest, LogprobsAreLogSoftmaxAndTopSorted) {
  SamplingParams p = Params(0.0f);
  p.top_logprobs = 5;
  Sampler s(p, {});
  std::vector<float> logits = {1.0f, 2.0f, 0.5f, 2.0f, -3.0f};
  const SampleResult r = s.Sample(logits);
  const std::vector<double> want = Softmax(std::vector<double>(logits.begin(), logits.end()));
  EXPECT_EQ(r.token, 1);
  EXPECT_NEAR(r.logprob, std::log(want[1]), 1e-6);
  ASSERT_EQ(r.top.size(), 5u);
  const int order[] = {1, 3, 0, 2, 4};  // ties (1, 3) in id order
  double sum = 0;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(r.top[i].token, order[i]);
    EXPECT_NEAR(r.top[i].logprob, std::log(want[order[i]]), 1e-6);
    if (i > 0) {
      EXPECT_GE(r.top[i - 1].logprob, r.top[i].logprob);
    }
    sum += std::exp(r.top[i].logprob);
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(SamplerTest, LogprobsSumToOneOnLargeVocab) {
  SamplingParams p = Params(0.8f, 7);
  p.top_logprobs = 50000;
  p.top_k = 10;  // filters must not affect the reported logprobs
  Sampler s(p, {});
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(50000);
  for (float& l : logits) l = normal(gen);
  const SampleResult r = s.Sample(logits);
  ASSERT_EQ(r.top.size(), 50000u);
  double sum = 0;
  for (size_t i = 0; i < r.top.size(); ++i) {
    sum += std::exp(static_cast<double>(r.top[i].logprob));
    if (i > 0) {
      ASSERT_GE(r.top[i - 1].logprob, r.top[i].logprob);
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-4);
  EXPECT_EQ(r.top[0].token, std::max_element(logits.begin(), logits.end()) - logits.begin());
  // The chosen token's logprob matches its entry in the full list.
  for (const TokenLogprob& t : r.top) {
    if (t.token == r.token) {
      EXPECT_FLOAT_EQ(t.logprob, r.logprob);
    }
  }
}

TEST(SamplerTest, TemperatureScalesLogits) {
  Sampler s(Params(2.0f), {});
  std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f};
  ExpectProbsNear(s.Distribution(logits), Softmax({0.5, 1.0, 0.25, -0.5}));
}

TEST(SamplerTest, TemperatureToZeroBecomesGreedy) {
  std::vector<float> logits = {1.0f, 2.0f, 1.99f, -1.0f};
  Sampler s(Params(1e-4f, 99), {});
  const std::vector<float> d = s.Distribution(logits);
  EXPECT_NEAR(d[1], 1.0, 1e-6);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(s.Sample(logits).token, 1);
  // At T = 0.01 the 2.0 vs 1.99 gap is one e-fold: p1 / p2 = e.
  Sampler warm(Params(0.01f), {});
  const std::vector<float> dw = warm.Distribution(logits);
  EXPECT_NEAR(dw[1] / dw[2], std::exp(1.0), 1e-3);
}

TEST(SamplerTest, TopKKeepsKLargestRenormalised) {
  SamplingParams p = Params();
  p.top_k = 2;
  Sampler s(p, {});
  std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.5f, -2.0f};
  // Independent: softmax over {3.0, 2.5} only.
  const double z = std::exp(3.0) + std::exp(2.5);
  ExpectProbsNear(s.Distribution(logits), {0, std::exp(3.0) / z, 0, std::exp(2.5) / z, 0});
}

TEST(SamplerTest, TopKTiesPreferLowerIds) {
  SamplingParams p = Params();
  p.top_k = 2;
  Sampler s(p, {});
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  ExpectProbsNear(s.Distribution(logits), {0.5, 0.5, 0, 0});
}

TEST(SamplerTest, TopPKeepsSmallestPrefixReachingP) {
  // Sorted probabilities 0.5, 0.2, 0.15, 0.1, 0.05 (cumulative 0.5, 0.7, 0.85, 0.95, 1.0),
  // placed at shuffled ids.
  const std::vector<double> probs = {0.1, 0.5, 0.05, 0.2, 0.15};
  const std::vector<float> logits = LogitsFromProbs(probs);
  struct Case {
    float top_p;
    std::set<int> kept;
  };
  for (const Case& c : {Case{0.3f, {1}}, Case{0.6f, {1, 3}}, Case{0.75f, {1, 3, 4}},
                        Case{0.9f, {1, 3, 4, 0}}, Case{0.99f, {0, 1, 2, 3, 4}}, Case{1e-6f, {1}}}) {
    SamplingParams p = Params();
    p.top_p = c.top_p;
    Sampler s(p, {});
    const std::vector<float> d = s.Distribution(logits);
    double kept_mass = 0;
    for (int t : c.kept) kept_mass += probs[t];
    for (int t = 0; t < 5; ++t) {
      const double want = c.kept.count(t) ? probs[t] / kept_mass : 0.0;
      EXPECT_NEAR(d[t], want, 1e-6) << "top_p " << c.top_p << " token " << t;
    }
  }
}

TEST(SamplerTest, MinPDropsTokensBelowFractionOfMax) {
  const std::vector<double> probs = {0.1, 0.5, 0.05, 0.2, 0.15};
  const std::vector<float> logits = LogitsFromProbs(probs);
  SamplingParams p = Params();
  p.min_p = 0.25f;  // threshold 0.125: keeps 0.5, 0.2, 0.15
  Sampler s(p, {});
  ExpectProbsNear(s.Distribution(logits), {0, 0.5 / 0.85, 0, 0.2 / 0.85, 0.15 / 0.85});
  p.min_p = 1.0f;  // only the best survives
  Sampler only_best(p, {});
  ExpectProbsNear(only_best.Distribution(logits), {0, 1, 0, 0, 0});
}

TEST(SamplerTest, MinPAppliesAfterTemperature) {
  // With T = 2, p_i / p_max = exp((l_i - l_max) / 2): l = {0, -1, -2} -> ratios 1, 0.61, 0.37.
  SamplingParams p = Params(2.0f);
  p.min_p = 0.5f;
  Sampler s(p, {});
  std::vector<float> logits = {0.0f, -1.0f, -2.0f};
  const double z = 1 + std::exp(-0.5);
  ExpectProbsNear(s.Distribution(logits), {1 / z, std::exp(-0.5) / z, 0});
}

TEST(SamplerTest, LogitBiasBansAndBoosts) {
  SamplingParams p = Params(1.0f, 5);
  p.logit_bias = {{1, -1e30f}, {3, -kInf}, {99, 5.0f}};  // 99 is out of range: ignored
  Sampler s(p, {});
  std::vector<float> logits = {0.0f, 10.0f, 0.0f, 10.0f};
  for (int i = 0; i < 500; ++i) {
    const int t = s.Sample(logits).token;
    ASSERT_TRUE(t == 0 || t == 2) << t;
  }
  SamplingParams g = Params(0.0f);
  g.logit_bias = {{2, 20.0f}};
  Sampler greedy(g, {});
  EXPECT_EQ(greedy.Sample(logits).token, 2);
}

TEST(SamplerTest, RepetitionPenaltyMatchesHfFormula) {
  SamplingParams p = Params();
  p.repetition_penalty = 1.3f;
  const std::vector<int> prompt = {0, 2, 2, 5};  // 5 is outside the 4-token vocab: ignored
  Sampler s(p, prompt);
  std::vector<float> logits = {2.0f, 1.0f, -1.5f, 0.5f};
  // HF RepetitionPenaltyLogitsProcessor: score < 0 ? score * r : score / r, each id once.
  ExpectProbsNear(s.Distribution(logits), Softmax({2.0 / 1.3, 1.0, -1.5 * 1.3, 0.5}));
  s.Accept(3);  // generated tokens are penalised too
  ExpectProbsNear(s.Distribution(logits), Softmax({2.0 / 1.3, 1.0, -1.5 * 1.3, 0.5 / 1.3}));
}

TEST(SamplerTest, PresenceAndFrequencyMatchOpenAiFormula) {
  SamplingParams p = Params();
  p.presence_penalty = 0.4f;
  p.frequency_penalty = 0.7f;
  Sampler s(p, /*prompt_tokens=*/std::vector<int>{0, 1});  // prompt is not counted
  s.Accept(2);
  s.Accept(2);
  s.Accept(3);
  s.Accept(2);
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  // mu[j] - c[j] * alpha_frequency - (c[j] > 0) * alpha_presence
  ExpectProbsNear(s.Distribution(logits),
                  Softmax({1.0, 1.0, 1.0 - 3 * 0.7 - 0.4, 1.0 - 0.7 - 0.4, 1.0}));
}

TEST(SamplerTest, ProcessorOrderBiasThenRepetitionThenPresence) {
  SamplingParams p = Params(0.0f);
  p.top_logprobs = 2;
  p.logit_bias = {{0, -2.0f}};
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 1.0f;
  Sampler s(p, std::vector<int>{0});
  s.Accept(0);
  // bias: 1 - 2 = -1; repetition (negative -> times 2): -2; presence: -3.
  // (repetition before bias would give 1/2 - 2 - 1 = -2.5.)
  std::vector<float> logits = {1.0f, -2.9f};
  const SampleResult r = s.Sample(logits);
  EXPECT_EQ(r.token, 1);
  const std::vector<double> want = Softmax({-3.0, -2.9});
  EXPECT_NEAR(r.logprob, std::log(want[1]), 1e-6);
  EXPECT_NEAR(r.top[1].logprob, std::log(want[0]), 1e-6);
}

TEST(SamplerTest, SampleRecordsTokensForPenalties) {
  // Greedy + a big frequency penalty: each pick pushes that token below the others.
  SamplingParams p = Params(0.0f);
  p.frequency_penalty = 2.0f;
  Sampler s(p, {});
  std::vector<float> logits = {1.0f, 0.9f, 0.8f};
  std::vector<int> got;
  for (int i = 0; i < 6; ++i) got.push_back(s.Sample(logits).token);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(SamplerTest, EmpiricalFrequenciesMatchDistribution) {
  const std::vector<double> probs = {0.4, 0.25, 0.2, 0.1, 0.05};
  const std::vector<float> logits = LogitsFromProbs(probs);
  Sampler s(Params(1.0f, 12345), {});
  constexpr int kDraws = 20000;
  std::vector<int> counts(5, 0);
  for (int i = 0; i < kDraws; ++i) ++counts[s.Sample(logits).token];
  for (int t = 0; t < 5; ++t) {
    const double se = std::sqrt(probs[t] * (1 - probs[t]) / kDraws);
    EXPECT_NEAR(counts[t] / static_cast<double>(kDraws), probs[t], 4 * se) << "token " << t;
  }
}

// Temperature 1 with no filter draws block by block (64 tokens): the mass spread over
// several blocks, banned tokens inside them, and a ragged last block.
TEST(SamplerTest, EmpiricalFrequenciesMatchAcrossBlocksOfLargeVocab) {
  constexpr int kVocab = 300;
  std::vector<double> probs(kVocab, 0.0);
  const std::vector<int> heavy = {3, 70, 150, 299};
  const std::vector<double> heavy_p = {0.3, 0.2, 0.15, 0.1};
  for (size_t i = 0; i < heavy.size(); ++i) probs[heavy[i]] = heavy_p[i];
  const double rest = 0.25 / (kVocab - heavy.size());
  for (double& q : probs) q = q == 0.0 ? rest : q;
  SamplingParams p = Params(1.0f, 99);
  p.logit_bias = {{71, -kInf}, {200, -kInf}};  // banned: never drawn, the rest renormalised
  const double kept = 1.0 - 2 * rest;
  Sampler s(p, {});
  const std::vector<float> logits = LogitsFromProbs(probs);
  constexpr int kDraws = 40000;
  std::vector<int> counts(kVocab, 0);
  for (int i = 0; i < kDraws; ++i) ++counts[s.Sample(logits).token];
  EXPECT_EQ(counts[71], 0);
  EXPECT_EQ(counts[200], 0);
  int light = 0;
  for (int t = 0; t < kVocab; ++t) {
    if (std::find(heavy.begin(), heavy.end(), t) == heavy.end()) light += counts[t];
  }
  for (size_t i = 0; i < heavy.size(); ++i) {
    const double want = heavy_p[i] / kept;
    const double se = std::sqrt(want * (1 - want) / kDraws);
    EXPECT_NEAR(counts[heavy[i]] / static_cast<double>(kDraws), want, 4 * se) << heavy[i];
  }
  const double want_light = (0.25 - 2 * rest) / kept;
  EXPECT_NEAR(light / static_cast<double>(kDraws), want_light,
              4 * std::sqrt(want_light * (1 - want_light) / kDraws));
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedsDiffer) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> steps(64, std::vector<float>(1000));
  for (auto& step : steps) {
    for (float& l : step) l = normal(gen);
  }
  auto run = [&](uint64_t seed) {
    SamplingParams p = Params(1.0f, seed);
    p.top_p = 0.95f;
    p.top_k = 200;
    p.repetition_penalty = 1.1f;
    Sampler s(p, std::vector<int>{1, 2, 3});
    std::vector<int> out;
    for (const auto& step : steps) out.push_back(s.Sample(step).token);
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

// Straightforward top-k -> top-p -> min-p by a full sort, to check the chunked partial sorts.
std::vector<double> ReferenceFiltered(const std::vector<float>& logits, float t, int k, float top_p,
                                      float min_p) {
  const int v = static_cast<int>(logits.size());
  std::vector<int> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  if (k > 0 && k < v) order.resize(k);
  std::vector<double> scaled;
  for (int i : order) scaled.push_back(logits[i] / static_cast<double>(t));
  std::vector<double> p = Softmax(scaled);
  size_t keep = p.size();
  double cum = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    cum += p[i];
    if (cum >= top_p) {
      keep = i + 1;
      break;
    }
  }
  order.resize(keep);
  p.resize(keep);
  std::vector<double> out(v, 0.0);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    if (p[i] >= min_p * p[0]) total += p[i];
  }
  for (size_t i = 0; i < keep; ++i) {
    if (p[i] >= min_p * p[0]) out[order[i]] = p[i] / total;
  }
  return out;
}

TEST(SamplerTest, LargeVocabFiltersMatchFullSortReference) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(32000);
  for (float& l : logits) l = normal(gen);
  struct Case {
    float t;
    int k;
    float top_p;
    float min_p;
  };
  for (const Case& c :
       {Case{1.0f, 0, 0.9f, 0.0f}, Case{1.0f, 0, 0.999f, 0.0f}, Case{0.7f, 40, 0.95f, 0.0f},
        Case{1.3f, 1000, 0.5f, 0.01f}, Case{1.0f, 0, 1.0f, 0.05f}, Case{2.0f, 5000, 1.0f, 0.0f}}) {
    SamplingParams p = Params(c.t);
    p.top_k = c.k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    Sampler s(p, {});
    const std::vector<float> got = s.Distribution(logits);
    const std::vector<double> want = ReferenceFiltered(logits, c.t, c.k, c.top_p, c.min_p);
    int nonzero_got = 0, nonzero_want = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      nonzero_got += got[i] > 0;
      nonzero_want += want[i] > 0;
      ASSERT_NEAR(got[i], want[i], 1e-6) << "token " << i << " k " << c.k << " p " << c.top_p;
    }
    EXPECT_EQ(nonzero_got, nonzero_want);
  }
}

TEST(SamplerTest, AllTokensBannedFallsBackToIdZero) {
  SamplingParams p = Params(1.0f);
  p.logit_bias = {{0, -kInf}, {1, -kInf}};
  Sampler s(p, {});
  std::vector<float> logits = {1.0f, 2.0f};
  const SampleResult r = s.Sample(logits);
  EXPECT_EQ(r.token, 0);
  EXPECT_EQ(r.logprob, -kInf);
}

TEST(SamplerTest, NanLogitsAreNeverPicked) {
  Sampler s(Params(1.0f, 8), {});
  std::vector<float> logits = {std::nanf(""), 0.0f, std::nanf(""), 0.0f};
  for (int i = 0; i < 200; ++i) {
    const int t = s.Sample(logits).token;
    ASSERT_TRUE(t == 1 || t == 3) << t;
  }
}

TEST(SamplerTest, InfiniteLogitsAndTinyTemperatures) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = {0.0f, inf, 1.0f, inf};
  Sampler s(Params(1.0f, 4), {});
  ExpectProbsNear(s.Distribution(logits), {0, 0.5, 0, 0.5});
  const SampleResult r = s.Sample(logits);
  EXPECT_TRUE(r.token == 1 || r.token == 3) << r.token;
  EXPECT_NEAR(r.logprob, std::log(0.5), 1e-6);
  // 1 / 1e-45 overflows: treated as greedy rather than producing NaN weights.
  Sampler tiny(Params(1e-45f), {});
  std::vector<float> finite = {0.0f, 2.0f, 1.0f};
  ExpectProbsNear(tiny.Distribution(finite), {0, 1, 0});
  EXPECT_EQ(tiny.Sample(finite).token, 1);
}

TEST(SamplerTest, SteadyStateSampleDoesNotAllocate) {
  SamplingParams p = Params(0.8f, 3);
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.01f;
  p.repetition_penalty = 1.1f;
  p.presence_penalty = 0.2f;
  p.frequency_penalty = 0.1f;
  std::vector<float> logits(32000);
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& l : logits) l = normal(gen);
  // Only tokens 0..4 can be chosen, so the set of generated tokens stops growing after warm-up.
  for (int t = 5; t < 32000; t += 997) p.logit_bias.push_back({t, -1e30f});
  for (int t = 5; t < 32000; ++t) logits[t] -= 1000.0f;
  std::vector<int> prompt(300);
  std::iota(prompt.begin(), prompt.end(), 0);
  Sampler s(p, prompt);
  for (int i = 0; i < 200; ++i) s.Sample(logits);
  const long before = g_allocations.load();
  for (int i = 0; i < 100; ++i) s.Sample(logits);
  EXPECT_EQ(g_allocations.load() - before, 0);
}

TEST(SamplerTest, TopPWithTiesKeepsLowerIds) {
  SamplingParams p = Params();
  p.top_p = 0.45f;  // 10 equal tokens: the prefix reaching 0.45 is 5 tokens, the lowest ids
  Sampler s(p, {});
  std::vector<float> logits(10, 0.5f);
  ExpectProbsNear(s.Distribution(logits), {0.2, 0.2, 0.2, 0.2, 0.2, 0, 0, 0, 0, 0});
}

TEST(SamplerTest, DistributionIsAccurateForTinyProbabilities) {
  // Logits over a 90-nat range: each probability within 1e-5 relative of a double softmax.
  std::vector<float> logits;
  for (int i = 0; i < 1000; ++i) logits.push_back(-80.0f + 0.09f * static_cast<float>(i));
  Sampler s(Params(1.0f), {});
  const std::vector<float> got = s.Distribution(logits);
  const std::vector<double> want = Softmax(std::vector<double>(logits.begin(), logits.end()));
  double sum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    sum += got[i];
    if (want[i] > 1e-30) {
      ASSERT_NEAR(got[i] / want[i], 1.0, 1e-5) << "token " << i << " p " << want[i];
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

// Hugging Face's warpers (tests/python/hf_sampling_reference.py, PyTorch) on random logits with
// every processor enabled; ties are avoided because HF's top-k keeps all tokens tied at the k-th.
TEST(SamplerTest, MatchesHuggingFaceStyleProcessorsInPyTorch) {
  const std::string script =
      std::string(TEXTGEN_SOURCE_DIR) + "/tests/python/hf_sampling_reference.py";
  struct Case {
    SamplingParams params;
    std::vector<int> prompt, generated;
  };
  auto make = [](float t, int k, float p, float min_p, float rep, float pres, float freq) {
    SamplingParams s = Params(t);
    s.top_k = k;
    s.top_p = p;
    s.min_p = min_p;
    s.repetition_penalty = rep;
    s.presence_penalty = pres;
    s.frequency_penalty = freq;
    return s;
  };
  std::vector<Case> cases = {
      {make(0.8f, 50, 0.9f, 0.0f, 1.2f, 0.5f, 0.3f), {1, 2, 3, 500}, {3, 3, 7, 900}},
      {make(1.0f, 0, 0.95f, 0.05f, 1.0f, 0.0f, 0.0f), {}, {}},
      {make(1.5f, 0, 1.0f, 0.1f, 0.9f, 0.0f, 0.0f), {4, 5, 6}, {6}},
      {make(0.5f, 5, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f), {}, {}},
      {make(1.0f, 200, 0.5f, 0.02f, 1.3f, -0.5f, 0.8f), {10, 20, 30}, {20, 40, 40, 40}},
  };
  cases[0].params.logit_bias = {{10, 2.0f}, {11, -100.0f}};
  constexpr int kVocab = 1000;
  std::mt19937 gen(17);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<std::vector<float>> logits(cases.size(), std::vector<float>(kVocab));
  const std::string base = test_support::TestTempPath("sampler_hf");
  {
    std::ofstream in(base + ".in");
    in.precision(9);
    for (size_t i = 0; i < cases.size(); ++i) {
      const SamplingParams& p = cases[i].params;
      in << p.temperature << " " << p.top_k << " " << p.top_p << " " << p.min_p << " "
         << p.repetition_penalty << " " << p.presence_penalty << " " << p.frequency_penalty
         << "\nbias:";
      for (const auto& [t, b] : p.logit_bias) in << " " << t << " " << b;
      in << "\nprompt:";
      for (int t : cases[i].prompt) in << " " << t;
      in << "\ngenerated:";
      for (int t : cases[i].generated) in << " " << t;
      in << "\nlogits:";
      for (float& l : logits[i]) in << " " << (l = normal(gen));
      in << "\n";
    }
  }
  const std::string cmd = "/usr/bin/python3 " + script + " " + base + ".in " + base + ".out";
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 77 || code == 127) {
    GTEST_SKIP() << "/usr/bin/python3 with torch is not available (" << cmd << " exited " << code
                 << ")";
  }
  ASSERT_EQ(code, 0) << cmd;
  std::ifstream out(base + ".out");
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string line;
    ASSERT_TRUE(std::getline(out, line)) << "case " << i;
    std::istringstream row(line);
    std::vector<double> want(kVocab);
    for (double& v : want) ASSERT_TRUE(row >> v) << "case " << i;
    Sampler s(cases[i].params, cases[i].prompt);
    for (int t : cases[i].generated) s.Accept(t);
    const std::vector<float> got = s.Distribution(logits[i]);
    int kept = 0;
    for (int t = 0; t < kVocab; ++t) {
      kept += got[t] > 0;
      ASSERT_NEAR(got[t], want[t], 1e-6) << "case " << i << " token " << t;
      ASSERT_EQ(got[t] > 0, want[t] > 0) << "case " << i << " token " << t;
    }
    EXPECT_GT(kept, 1) << "case " << i << " should leave a non-trivial set";
  }
  std::remove((base + ".in").c_str());
  std::remove((base + ".out").c_str());
}

}  // namespace
}  // namespace textgen::model
