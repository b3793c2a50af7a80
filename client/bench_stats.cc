#include "client/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace textgen::client {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  double rank = q * static_cast<double>(sorted.size() - 1);
  size_t lower = static_cast<size_t>(std::floor(rank));
  size_t upper = std::min(lower + 1, sorted.size() - 1);
  double fraction = rank - static_cast<double>(lower);
  return sorted[lower] + fraction * (sorted[upper] - sorted[lower]);
}

Distribution Summarize(std::vector<double> samples) {
  Distribution d;
  if (samples.empty()) return d;
  std::sort(samples.begin(), samples.end());
  d.count = samples.size();
  d.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(d.count);
  d.min = samples.front();
  d.max = samples.back();
  d.p50 = Percentile(samples, 0.50);
  d.p90 = Percentile(samples, 0.90);
  d.p99 = Percentile(samples, 0.99);
  return d;
}

}  // namespace textgen::client
