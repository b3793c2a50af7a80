#include "model/kernels/expert_routing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace textgen::model::ops {
namespace {

struct Routes {
  std::vector<int> selected;
  std::vector<float> weights;
};

Routes Route(const std::vector<float>& logits, int rows, int experts, int used,
             ExpertWeighting weighting = ExpertWeighting::kRenormalizedSoftmax) {
  Routes r{std::vector<int>(static_cast<size_t>(rows) * used),
           std::vector<float>(static_cast<size_t>(rows) * used)};
  RouteToExperts(logits.data(), rows, experts, used, r.selected.data(), r.weights.data(),
                 weighting);
  return r;
}

TEST(ExpertRoutingTest, PicksTheMostProbableExpertsBestFirstWithRenormalizedWeights) {
  // Row 0: experts 3 > 0 > 2 > 1. Row 1: the last expert best, then 1.
  const std::vector<float> logits = {1.0f, -2.0f, 0.5f,  3.0f,  //
                                     0.0f, 2.0f,  -1.0f, 4.0f};
  const Routes r = Route(logits, 2, 4, 2);
  EXPECT_EQ(r.selected, (std::vector<int>{3, 0, 3, 1}));
  // softmax then renormalized over the two picked = softmax over just those two logits
  const double w30 = 1 / (1 + std::exp(1.0 - 3.0));
  EXPECT_NEAR(r.weights[0], w30, 1e-6);
  EXPECT_NEAR(r.weights[1], 1 - w30, 1e-6);
  const double w31 = 1 / (1 + std::exp(2.0 - 4.0));
  EXPECT_NEAR(r.weights[2], w31, 1e-6);
  EXPECT_NEAR(r.weights[3], 1 - w31, 1e-6);
}

TEST(ExpertRoutingTest, TiesGoToTheLowerIndexAsInLlamaCpp) {
  // Experts 1, 2 and 5 tie for the best score; 0 and 4 tie below them.
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f, 0.5f, 2.0f};
  EXPECT_EQ(Route(logits, 1, 6, 2).selected, (std::vector<int>{1, 2}));
  EXPECT_EQ(Route(logits, 1, 6, 4).selected, (std::vector<int>{1, 2, 5, 0}));
  const Routes all = Route(logits, 1, 6, 6);
  EXPECT_EQ(all.selected, (std::vector<int>{1, 2, 5, 0, 4, 3}));
  EXPECT_EQ(all.weights[0], all.weights[1]);
  float total = 0;
  for (float w : all.weights) total += w;
  EXPECT_NEAR(total, 1.0f, 1e-6);
}

// gpt-oss: the same experts by logit, weighted by a softmax over the chosen logits only (the
// values computed independently here); ties still go to the lower index.
TEST(ExpertRoutingTest, SoftmaxOfChosenPicksByLogitAndWeighsByTheirSoftmax) {
  const std::vector<float> logits = {1.0f, -2.0f, 0.5f, 3.0f, 2.5f,  //
                                     0.0f, 4.0f,  4.0f, 1.0f, 4.0f};
  const Routes r = Route(logits, 2, 5, 3, ExpertWeighting::kSoftmaxOfChosen);
  EXPECT_EQ(r.selected, (std::vector<int>{3, 4, 0, 1, 2, 4}));
  const double e3 = std::exp(3.0), e25 = std::exp(2.5), e1 = std::exp(1.0);
  EXPECT_NEAR(r.weights[0], e3 / (e3 + e25 + e1), 1e-6);
  EXPECT_NEAR(r.weights[1], e25 / (e3 + e25 + e1), 1e-6);
  EXPECT_NEAR(r.weights[2], e1 / (e3 + e25 + e1), 1e-6);
  for (int k = 3; k < 6; ++k) EXPECT_EQ(r.weights[k], r.weights[3]);  // three equal logits
  EXPECT_NEAR(r.weights[3], 1.0 / 3, 1e-6);
  // The choice agrees with the renormalized weighting's; large logits do not overflow.
  EXPECT_EQ(Route(logits, 2, 5, 3).selected, r.selected);
  const Routes big = Route({1000.0f, 999.0f, -1000.0f}, 1, 3, 2, ExpertWeighting::kSoftmaxOfChosen);
  EXPECT_NEAR(big.weights[0], 1 / (1 + std::exp(-1.0)), 1e-6);
}

TEST(ExpertRoutingTest, OneExpertPerTokenWeighsOne) {
  const Routes one = Route({0.0f, 50.0f, -50.0f}, 1, 3, 1);
  EXPECT_EQ(one.selected[0], 1);
  EXPECT_EQ(one.weights[0], 1.0f);
}

TEST(ExpertRoutingTest, EachRowIsRoutedAloneAsInABatch) {
  constexpr int kExperts = 128, kUsed = 8, kRows = 37;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(kRows) * kExperts);
  for (float& x : logits) x = normal(rng);
  const Routes batch = Route(logits, kRows, kExperts, kUsed);
  for (int r = 0; r < kRows; ++r) {
    const std::vector<float> row(logits.begin() + r * kExperts,
                                 logits.begin() + (r + 1) * kExperts);
    const Routes alone = Route(row, 1, kExperts, kUsed);
    for (int k = 0; k < kUsed; ++k) {
      EXPECT_EQ(alone.selected[k], batch.selected[r * kUsed + k]);
      EXPECT_EQ(alone.weights[k], batch.weights[r * kUsed + k]);
      // best first, and nothing left out scores higher than the last pick
      if (k > 0) {
        EXPECT_GE(row[alone.selected[k - 1]], row[alone.selected[k]]);
      }
    }
    int better = 0;
    for (float x : row) better += x > row[alone.selected[kUsed - 1]] ? 1 : 0;
    EXPECT_EQ(better, kUsed - 1);
  }
}

// Nemotron-H / LFM2: sigmoid probabilities; the bias moves the choice but not the weights, which
// are renormalized and scaled when the rule says so (values computed independently here).
TEST(ExpertRoutingTest, SigmoidPicksByBiasedProbabilityAndWeighsByProbability) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f};
  const std::vector<float> bias = {0.0f, 0.0f, 0.9f, 0.0f};
  const auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  std::vector<int> selected(2);
  std::vector<float> weights(2);
  // Unbiased: 0 and 1, weighted by their sigmoids as they are.
  RouteToExperts(logits.data(), 1, 4, 2, selected.data(), weights.data(),
                 RoutingRule{.weighting = ExpertWeighting::kSigmoid, .renormalize = false});
  EXPECT_EQ(selected, (std::vector<int>{0, 1}));
  EXPECT_NEAR(weights[0], sigmoid(2.0), 1e-6);
  EXPECT_NEAR(weights[1], sigmoid(1.0), 1e-6);
  // Biased: sigmoid(0) + 0.9 = 1.4 beats expert 0's 0.88, but weighs sigmoid(0) = 0.5;
  // renormalized over the two, then scaled by 2.5.
  RouteToExperts(logits.data(), 1, 4, 2, selected.data(), weights.data(),
                 RoutingRule{.weighting = ExpertWeighting::kSigmoid,
                             .selection_bias = bias.data(),
                             .renormalize = true,
                             .scale = 2.5f});
  EXPECT_EQ(selected, (std::vector<int>{2, 0}));
  const double total = sigmoid(0.0) + sigmoid(2.0);
  EXPECT_NEAR(weights[0], 2.5 * sigmoid(0.0) / total, 1e-6);
  EXPECT_NEAR(weights[1], 2.5 * sigmoid(2.0) / total, 1e-6);
}

// A selection bias moves a softmax router's choice too, never its weights.
TEST(ExpertRoutingTest, SelectionBiasMovesTheSoftmaxChoiceButNotItsWeights) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  const std::vector<float> bias = {0.0f, 0.0f, 1.0f};
  std::vector<int> selected(2);
  std::vector<float> weights(2);
  RouteToExperts(logits.data(), 1, 3, 2, selected.data(), weights.data(),
                 RoutingRule{.selection_bias = bias.data()});
  EXPECT_EQ(selected, (std::vector<int>{2, 0}));
  // Renormalized softmax over experts 2 and 0 = softmax over their logits.
  const double w2 = 1 / (1 + std::exp(2.0 - 0.0));
  EXPECT_NEAR(weights[0], w2, 1e-6);
  EXPECT_NEAR(weights[1], 1 - w2, 1e-6);
}

}  // namespace
}  // namespace textgen::model::ops
