#pragma once

#include <pthread.h>

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer/tokenizer.h"

namespace textgen::server::testing {

// A byte-level tokenizer for service tests: id 0 <unk>, 1 <s>, 2 </s>, byte b -> id b + 3
// (vocab 259, like the byte tokens of a SentencePiece vocabulary). Thread-safe.
class ByteTokenizer final : public model::Tokenizer {
 public:
  // How often Encode ran (tests of limits that must be checked before tokenizing), and how
  // often on the preparation pool's threads (tests that the transports' threads do not).
  mutable std::atomic<int> encode_calls{0};
  mutable std::atomic<int> encodes_on_preparation_threads{0};

  static constexpr int kBos = 1;
  static constexpr int kEos = 2;

  std::vector<int> Encode(std::string_view text, bool add_bos) const override {
    ++encode_calls;
    char thread_name[16] = {};
    pthread_getname_np(pthread_self(), thread_name, sizeof(thread_name));
    if (std::string_view(thread_name) == "textgen-prep") ++encodes_on_preparation_threads;
    std::vector<int> ids;
    if (add_bos) ids.push_back(kBos);
    for (unsigned char c : text) ids.push_back(c + 3);
    return ids;
  }
  std::string TokenBytes(int id, int previous_id) const override {
    return id >= 3 && id < 259 ? std::string(1, static_cast<char>(id - 3)) : std::string();
  }
  int vocab_size() const override { return 259; }
  int bos_id() const override { return kBos; }
  int eos_id() const override { return kEos; }
  // "<s>" and "</s>" written in the text become BOS / EOS, outside untrusted ranges.
  std::vector<int> EncodeWithSpecialTokens(
      std::string_view text, bool add_bos,
      std::span<const model::TextRange> untrusted) const override {
    const auto untrusted_at = [&](size_t begin, size_t end) {
      for (const model::TextRange& range : untrusted) {
        if (range.begin < end && begin < range.end) return true;
      }
      return false;
    };
    std::vector<int> ids;
    if (add_bos) ids.push_back(kBos);
    for (size_t i = 0; i < text.size();) {
      if (text.substr(i, 3) == "<s>" && !untrusted_at(i, i + 3)) {
        ids.push_back(kBos), i += 3;
      } else if (text.substr(i, 4) == "</s>" && !untrusted_at(i, i + 4)) {
        ids.push_back(kEos), i += 4;
      } else {
        ids.push_back(static_cast<unsigned char>(text[i++]) + 3);
      }
    }
    return ids;
  }
  bool IsControl(int id) const override { return id == kBos || id == kEos; }
  const std::vector<int>& end_of_generation_ids() const override { return eog_ids_; }
  std::string TokenText(int id) const override {
    if (id == kBos) return "<s>";
    if (id == kEos) return "</s>";
    if (id == 0) return "<unk>";
    return TokenBytes(id, -1);
  }

 private:
  std::vector<int> eog_ids_ = {kEos};
};

}  // namespace textgen::server::testing
