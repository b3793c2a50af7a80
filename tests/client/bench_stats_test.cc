// Percentiles are checked against numpy.percentile (default "linear" method), computed once
// with /usr/bin/python3 numpy 1.24 and pasted here.

#include "client/bench_stats.h"

#include <gtest/gtest.h>

namespace textgen::client {
namespace {

TEST(BenchStatsTest, PercentileMatchesNumpyLinearOnElevenSamples) {
  // np.percentile(x, q) for q = 0, 10, 25, 50, 90, 99, 100.
  std::vector<double> x = {0.012, 0.5, 0.031, 0.2, 0.0075, 0.09, 0.3, 0.044, 0.11, 0.061, 0.25};
  Distribution d = Summarize(x);
  EXPECT_EQ(d.count, 11u);
  EXPECT_DOUBLE_EQ(d.min, 0.0075);
  EXPECT_DOUBLE_EQ(d.max, 0.5);
  EXPECT_DOUBLE_EQ(d.p50, 0.09);
  EXPECT_DOUBLE_EQ(d.p90, 0.3);
  EXPECT_NEAR(d.p99, 0.4800000000000001, 1e-15);
  EXPECT_NEAR(d.mean, 0.14595454545454545, 1e-15);

  std::sort(x.begin(), x.end());
  EXPECT_DOUBLE_EQ(Percentile(x, 0.0), 0.0075);
  EXPECT_DOUBLE_EQ(Percentile(x, 0.10), 0.012);
  EXPECT_NEAR(Percentile(x, 0.25), 0.0375, 1e-15);
  EXPECT_DOUBLE_EQ(Percentile(x, 1.0), 0.5);
}

TEST(BenchStatsTest, PercentileInterpolatesBetweenRanks) {
  // np.percentile([15, 20, 35, 40, 50], [40, 50, 90, 99]) = [29, 35, 46, 49.6].
  std::vector<double> y = {15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(Percentile(y, 0.40), 29.0);
  EXPECT_DOUBLE_EQ(Percentile(y, 0.50), 35.0);
  EXPECT_DOUBLE_EQ(Percentile(y, 0.90), 46.0);
  EXPECT_NEAR(Percentile(y, 0.99), 49.6, 1e-12);
  // Even count: the median is the mean of the middle two.
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 0.5), 2.5);
}

TEST(BenchStatsTest, OutOfRangeQuantilesClamp) {
  std::vector<double> y = {1, 2, 3};
  EXPECT_DOUBLE_EQ(Percentile(y, -0.5), 1);
  EXPECT_DOUBLE_EQ(Percentile(y, 1.5), 3);
}

TEST(BenchStatsTest, EmptyAndSingleSample) {
  Distribution empty = Summarize({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.p99, 0);
  EXPECT_EQ(Percentile({}, 0.5), 0);

  Distribution one = Summarize({0.25});
  EXPECT_EQ(one.count, 1u);
  EXPECT_DOUBLE_EQ(one.mean, 0.25);
  EXPECT_DOUBLE_EQ(one.p50, 0.25);
  EXPECT_DOUBLE_EQ(one.p99, 0.25);
  EXPECT_DOUBLE_EQ(one.min, 0.25);
  EXPECT_DOUBLE_EQ(one.max, 0.25);
}

}  // namespace
}  // namespace textgen::client
