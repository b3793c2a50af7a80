#include "model/gpt2_pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace textgen::model {
namespace {

constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

struct Gpt2PreTokenizer::Code {
  ~Code() { pcre2_code_free(code); }
  pcre2_code* code = nullptr;
};

absl::StatusOr<std::unique_ptr<Gpt2PreTokenizer>> Gpt2PreTokenizer::Create() {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  auto code = std::make_unique<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern), PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return absl::InternalError(absl::StrCat("GPT-2 pre-tokenizer regex does not compile at ",
                                            error_offset, ": ",
                                            reinterpret_cast<const char*>(message)));
  }
  // JIT is only a speed-up: without it (e.g. no executable memory) the interpreter is used.
  pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<Gpt2PreTokenizer>(new Gpt2PreTokenizer(std::move(code)));
}

Gpt2PreTokenizer::Gpt2PreTokenizer(std::unique_ptr<Code> code) : code_(std::move(code)) {}
Gpt2PreTokenizer::~Gpt2PreTokenizer() = default;

std::vector<std::string_view> Gpt2PreTokenizer::Split(std::string_view text) const {
  std::vector<std::string_view> chunks;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code_->code, nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size() && match != nullptr) {
    // The caller guarantees valid UTF-8; skipping PCRE2's check keeps this linear.
    int rc = pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match.get(),
                         nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // the interpreter keeps its backtracking on the heap
      rc = pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       match.get(), nullptr);
    }
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    // Every character matches one of the alternatives, so matches are contiguous and
    // non-empty; anything else is treated as one chunk below.
    if (ovector[0] != pos || ovector[1] <= pos) break;
    chunks.push_back(text.substr(pos, ovector[1] - pos));
    pos = ovector[1];
  }
  if (pos < text.size()) chunks.push_back(text.substr(pos));
  return chunks;
}

}  // namespace textgen::model
