#include "model/tokenizer/bpe_pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace textgen::model {
namespace {

// The regexes come from the vocabularies' own tokenizer.json files (Hugging Face `Split`
// pre-tokenizers); GGUF names the family in tokenizer.ggml.pre, as llama.cpp's converter writes.

// GPT-2's pattern (its final `\s+` alternative is implied: gaps become chunks anyway).
constexpr char kGpt2[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Llama 3 (cl100k-style): case-insensitive contractions, a letter run with one leading
// non-letter, digits in runs of at most 3, newlines kept together.
constexpr char kLlama3[] =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen 2 / 2.5 / 3: as Llama 3 with single digits.
constexpr char kQwen2[] =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen 3.5: as Qwen 2 with combining marks counted as letters.
constexpr char kQwen35[] =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral's Tekken: words split at case changes.
constexpr char kTekken[] =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o's o200k (gpt-oss, Llama 4): words split at case changes keeping their contractions,
// digits in runs of at most 3, punctuation runs with trailing newlines or slashes.
constexpr char kGpt4o[] =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kCjk[] = R"([一-龥ࠀ-一가-퟿]+)";
constexpr char kDeepseekLlmLetters[] =
    R"(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)";

struct PreTokenizerSpec {
  std::vector<const char*> names;
  std::vector<const char*> regexes;
  BpePreTokenizer::Traits traits;
};

const std::vector<PreTokenizerSpec>& Specs() {
  static const auto* specs = new std::vector<PreTokenizerSpec>{
      // No tokenizer.ggml.pre at all also means "default" (llama.cpp warns and does the same).
      {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}, {}},
      {{"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "gpt-neox"}, {kGpt2}, {}},
      {{"llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral", "dbrx", "smaug-bpe", "chatglm-bpe",
        "glm4", "lfm2"},
       {kLlama3},
       {.ignore_merges = true, .add_bos = true}},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2"}, {kQwen2}, {}},
      {{"qwen35"}, {kQwen35}, {}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2},
       {}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, {}},
      {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}, {}},
      {{"deepseek-llm"},
       {R"([\r\n])", kDeepseekLlmLetters, R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", kCjk,
        R"(\p{N}+)"},
       {}},
      {{"tekken"}, {kTekken}, {.ignore_merges = true, .add_bos = true}},
      {{"gpt-4o", "llama4", "kanana2", "talkie"}, {kGpt4o}, {}},
  };
  return *specs;
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

struct BpePreTokenizer::Code {
  ~Code() { pcre2_code_free(code); }
  pcre2_code* code = nullptr;
};

std::vector<std::string> BpePreTokenizer::SupportedNames() {
  std::vector<std::string> names;
  for (const PreTokenizerSpec& spec : Specs())
    names.insert(names.end(), spec.names.begin(), spec.names.end());
  return names;
}

static absl::StatusOr<const PreTokenizerSpec*> FindSpec(std::string_view name) {
  for (const PreTokenizerSpec& spec : Specs()) {
    for (const char* spec_name : spec.names) {
      if (name == spec_name) return &spec;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("tokenizer.ggml.pre \"", std::string(name),
                   "\" is not a pre-tokenizer textgen knows (known: ",
                   absl::StrJoin(BpePreTokenizer::SupportedNames(), ", "), ")"));
}

absl::StatusOr<BpePreTokenizer::Traits> BpePreTokenizer::TraitsOf(std::string_view name) {
  absl::StatusOr<const PreTokenizerSpec*> spec = FindSpec(name);
  if (!spec.ok()) return spec.status();
  return (*spec)->traits;
}

absl::StatusOr<std::unique_ptr<BpePreTokenizer>> BpePreTokenizer::Create(std::string_view name) {
  absl::StatusOr<const PreTokenizerSpec*> spec = FindSpec(name);
  if (!spec.ok()) return spec.status();
  const PreTokenizerSpec* found = *spec;
  std::vector<std::unique_ptr<Code>> regexes;
  for (const char* pattern : found->regexes) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    auto code = std::make_unique<Code>();
    // DOLLAR_ENDONLY: `$` means the end of the chunk, not also "before a final newline".
    code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error_code,
                               &error_offset, nullptr);
    if (code->code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return absl::InternalError(absl::StrCat("pre-tokenizer \"", std::string(name),
                                              "\" regex does not compile at ", error_offset, ": ",
                                              reinterpret_cast<const char*>(message)));
    }
    // JIT is only a speed-up: without it (e.g. no executable memory) the interpreter is used.
    pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);
    regexes.push_back(std::move(code));
  }
  return std::unique_ptr<BpePreTokenizer>(new BpePreTokenizer(std::move(regexes), found->traits));
}

BpePreTokenizer::BpePreTokenizer(std::vector<std::unique_ptr<Code>> regexes, Traits traits)
    : regexes_(std::move(regexes)), traits_(traits) {}
BpePreTokenizer::~BpePreTokenizer() = default;

std::vector<std::string_view> BpePreTokenizer::Split(std::string_view text) const {
  std::vector<std::string_view> chunks = {text};
  std::vector<std::string_view> next;
  for (const std::unique_ptr<Code>& code : regexes_) {
    next.clear();
    for (std::string_view chunk : chunks) SplitOne(*code, chunk, &next);
    chunks.swap(next);
  }
  return chunks;
}

void BpePreTokenizer::SplitOne(const Code& code, std::string_view chunk,
                               std::vector<std::string_view>* out) const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code.code, nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(chunk.data());
  size_t pos = 0;   // where the next search starts
  size_t done = 0;  // end of what has been emitted
  while (pos < chunk.size() && match != nullptr) {
    // The caller guarantees valid UTF-8; skipping PCRE2's check keeps this linear.
    int rc = pcre2_match(code.code, subject, chunk.size(), pos, PCRE2_NO_UTF_CHECK, match.get(),
                         nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // the interpreter keeps its backtracking on the heap
      rc = pcre2_match(code.code, subject, chunk.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       match.get(), nullptr);
    }
    if (rc < 0) break;  // no further match: the rest is one gap
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {  // an empty match splits nothing; step over one character
      pos = begin + 1;
      while (pos < chunk.size() && (static_cast<unsigned char>(chunk[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (begin > done) out->push_back(chunk.substr(done, begin - done));  // the gap before it
    out->push_back(chunk.substr(begin, end - begin));
    done = pos = end;
  }
  if (done < chunk.size()) out->push_back(chunk.substr(done));
}

}  // namespace textgen::model
