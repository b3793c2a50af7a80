#pragma once

// Summary statistics for `textgen bench` samples (latencies in seconds).
//
// Percentiles use linear interpolation between closest ranks (Hyndman & Fan type 7, the
// default of numpy.percentile and Excel PERCENTILE.INC): for sorted samples x[0..n-1] and
// q in [0, 1], rank r = q * (n - 1) and the result is x[floor r] + (r - floor r) *
// (x[floor r + 1] - x[floor r]). So p50 of {1, 2, 3, 4} is 2.5 and p0/p100 are min/max.

#include <cstddef>
#include <vector>

namespace textgen::client {

// count == 0 means no samples; every other field is then 0.
struct Distribution {
  size_t count = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

// Type-7 percentile of `sorted` (ascending, non-empty) at q in [0, 1] (clamped).
double Percentile(const std::vector<double>& sorted, double q);

// Count, mean, min, max, p50, p90 and p99 of `samples` (any order; may be empty).
Distribution Summarize(std::vector<double> samples);

}  // namespace textgen::client
