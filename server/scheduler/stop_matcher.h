#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace textgen::server {

// Finds stop strings in a stream of text deltas. Text that could still be the beginning of
// a stop string is held back until the next delta decides it; once a stop string matches,
// the text before it is released and everything from the match on is dropped.
// One per sequence; engine thread only (not thread-safe).
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stop_strings);

  struct Result {
    std::string text;          // safe to emit now
    bool stopped = false;      // a stop string matched; no more text will follow
    std::string matched_stop;  // which one, when stopped
  };

  // Adds a text delta. After a match, further calls return nothing.
  Result Push(std::string_view delta);
  // Releases the held-back text at end of stream (no match can complete any more).
  std::string Flush();

  bool stopped() const { return stopped_; }
  size_t held_bytes() const { return held_.size(); }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of some stop string.
  size_t LongestPartialSuffix() const;

  std::vector<std::string> stops_;  // non-empty strings only
  std::string held_;                // not yet emitted
  bool stopped_ = false;
};

}  // namespace textgen::server
