#include "server/scheduler/prompt_lookup.h"

#include <algorithm>

namespace textgen::server {
namespace {

// prompt + output as one sequence, without copying either.
class Joined {
 public:
  Joined(std::span<const int> a, std::span<const int> b) : a_(a), b_(b) {}
  int size() const { return static_cast<int>(a_.size() + b_.size()); }
  int operator[](int i) const {
    const int n = static_cast<int>(a_.size());
    return i < n ? a_[i] : b_[i - n];
  }

 private:
  std::span<const int> a_;
  std::span<const int> b_;
};

}  // namespace

void DraftByPromptLookup(std::span<const int> prompt, std::span<const int> output,
                         const PromptLookupOptions& options, int max_tokens,
                         std::vector<int>& draft) {
  const Joined tokens(prompt, output);
  const int length = tokens.size();
  if (max_tokens <= 0) return;
  for (int n = std::min(options.max_ngram, length - 1); n >= std::max(options.min_ngram, 1); --n) {
    const int tail = length - n;  // where the last n tokens start
    // The most recent earlier occurrence: it starts before `tail` and has a token after it.
    for (int start = tail - 1; start >= 0; --start) {
      bool match = true;
      for (int i = 0; i < n && match; ++i) match = tokens[start + i] == tokens[tail + i];
      if (!match) continue;
      // What followed it; past the end, the draft itself (a loop in the output is drafted
      // as going on, not cut where the text ends).
      const int from = start + n;
      const size_t first = draft.size();
      for (int i = 0; i < max_tokens; ++i) {
        const int at = from + i;
        draft.push_back(at < length ? tokens[at] : draft[first + (at - length)]);
      }
      return;
    }
  }
}

}  // namespace textgen::server
