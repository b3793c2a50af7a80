#include "server/scheduler/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace textgen::server {

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::Result StopMatcher::Push(std::string_view delta) {
  Result result;
  if (stopped_) return result;
  held_.append(delta);
  if (stops_.empty()) {
    result.text = std::move(held_);
    held_.clear();
    return result;
  }
  // Earliest match wins; among matches at the same offset, the first listed. A match can
  // only start inside held_: any emitted suffix that began a stop string was held back.
  size_t best_pos = std::string::npos;
  const std::string* best = nullptr;
  for (const std::string& stop : stops_) {
    size_t pos = held_.find(stop);
    if (pos != std::string::npos && pos < best_pos) {
      best_pos = pos;
      best = &stop;
    }
  }
  if (best != nullptr) {
    stopped_ = true;
    result.stopped = true;
    result.matched_stop = *best;
    result.text = held_.substr(0, best_pos);
    held_.clear();
    return result;
  }
  // The held suffix starts with a stop string's first byte, so it starts on a UTF-8
  // character boundary whenever the stop strings are valid UTF-8.
  size_t keep = LongestPartialSuffix();
  result.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return result;
}

std::string StopMatcher::Flush() {
  if (stopped_) return "";
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

size_t StopMatcher::LongestPartialSuffix() const {
  size_t best = 0;
  for (const std::string& stop : stops_) {
    size_t max_len = std::min(held_.size(), stop.size() - 1);
    for (size_t len = max_len; len > best; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace textgen::server
