#pragma once

#include <span>
#include <vector>

namespace textgen::server {

// Drafting for speculative decoding by prompt lookup: outputs that copy spans of their input
// (rewrites, extraction, code edits, quoting) continue the way an earlier occurrence of their
// last few tokens did. No model: a scan over the sequence's own tokens.
struct PromptLookupOptions {
  int max_ngram = 4;  // the longest run of last tokens looked for
  int min_ngram = 1;  // the shortest (a longer match wins)
};

// Appends to `draft` the `max_tokens` tokens that followed the most recent earlier occurrence
// of the last n tokens of `prompt` + `output` (taken as one sequence), trying n from
// options.max_ngram down to options.min_ngram; where that runs past the end, the drafted
// tokens repeat (the text from the occurrence on, as a loop). Nothing without a match.
void DraftByPromptLookup(std::span<const int> prompt, std::span<const int> output,
                         const PromptLookupOptions& options, int max_tokens,
                         std::vector<int>& draft);

}  // namespace textgen::server
