// libFuzzer target: both tokenizer families (SentencePiece and byte-level BPE, with their
// pre-tokenizer regexes and special-token splitting) on real vocabularies, the ones llama.cpp
// ships for its own tokenizer tests. Input: [vocabulary selector][mode][payload].
//   mode 0..127: payload is text. Valid UTF-8 only (callers reject the rest). Checks: ids in
//     range and never a control token; EncodeWithSpecialTokens with the whole text untrusted equals
//     Encode (user text can never become a control token); on vocabularies that round-trip,
//     Decode(Encode(text)) is the text; the incremental detokenizer emits only whole UTF-8
//     characters and, with its flush, exactly Decode's text.
//   mode 128..255: payload is little-endian uint16 ids (mod the vocabulary): Decode and the
//     incremental detokenizer on arbitrary id sequences, which must still emit valid UTF-8.
// The vocabularies: every ggml-vocab-*.gguf in $TEXTGEN_FUZZ_VOCAB_DIR that textgen loads
// (plus the llama2.c tokenizer.bin in $TEXTGEN_FUZZ_LLAMA2C_TOKENIZER if set).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/format/gguf_tokenizer.h"
#include "model/tokenizer/llama2c_tokenizer_file.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"

namespace {

using textgen::model::Tokenizer;

struct Vocabulary {
  std::string name;
  std::unique_ptr<Tokenizer> tokenizer;
  bool round_trips = false;  // Decode(Encode(text)) == text for text it can spell
  // WordPiece frames text [CLS] ... [SEP] and spells an unknown word [UNK], which BERT's
  // vocabularies type as control tokens (llama.cpp and Hugging Face give the same ids).
  bool wordpiece = false;
  int unk_id = -1;
  int sep_id = -1;
};

std::vector<Vocabulary>& Vocabularies() {
  static auto* const vocabularies = new std::vector<Vocabulary>();
  return *vocabularies;
}

// Text whose round trip decides whether a vocabulary is lossless: every byte value valid UTF-8
// can hold (ASCII controls, every lead and continuation byte; StarCoder's vocabulary has no
// token for 0xF1, Falcon's none for most controls, and llama.cpp drops such bytes) and
// characters that need byte fallback or byte-level BPE.
std::string Probe() {
  std::string probe = "Hello  wörld\t🙂 \n x<s>1234 ";
  for (int byte = 0; byte < 0x80; ++byte) probe += static_cast<char>(byte);
  for (int byte = 0x80; byte < 0xC0; ++byte) probe += {'\xC2', static_cast<char>(byte)};
  for (int lead = 0xC3; lead < 0xE0; ++lead) probe += {static_cast<char>(lead), '\x80'};
  probe += "\xE0\xA0\x80";
  for (int lead = 0xE1; lead < 0xF0; ++lead) probe += {static_cast<char>(lead), '\x80', '\x80'};
  probe += "\xF0\x90\x80\x80";
  for (int lead = 0xF1; lead < 0xF5; ++lead) {
    probe += {static_cast<char>(lead), '\x80', '\x80', '\x80'};
  }
  return probe;
}

void Add(std::string name, absl::StatusOr<textgen::model::TokenizerData> data) {
  if (!data.ok()) {
    std::fprintf(stderr, "tokenizer fuzzer: skipping %s: %s\n", name.c_str(),
                 data.status().ToString().c_str());
    return;
  }
  const bool wordpiece = data->kind == textgen::model::TokenizerData::Kind::kWordPiece;
  const int unk_id = data->unk_id, sep_id = data->sep_id;
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      textgen::model::CreateTokenizer(*std::move(data));
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "tokenizer fuzzer: skipping %s: %s\n", name.c_str(),
                 tokenizer.status().ToString().c_str());
    return;
  }
  Vocabulary v{std::move(name), *std::move(tokenizer)};
  v.wordpiece = wordpiece;
  v.unk_id = unk_id;
  v.sep_id = sep_id;
  const std::string probe = Probe();
  v.round_trips = v.tokenizer->Decode(v.tokenizer->Encode(probe, /*add_bos=*/true)) == probe;
  std::fprintf(stderr, "tokenizer fuzzer: %s (%d tokens)%s\n", v.name.c_str(),
               v.tokenizer->vocab_size(), v.round_trips ? ", round-trips" : "");
  Vocabularies().push_back(std::move(v));
}

[[noreturn]] void Fail(const Vocabulary& v, const char* what) {
  std::fprintf(stderr, "tokenizer fuzzer: %s: %s\n", v.name.c_str(), what);
  std::abort();
}

// Pushes `ids` through the incremental detokenizer: every delta must be whole UTF-8.
std::string Stream(const Vocabulary& v, const std::vector<int>& ids) {
  textgen::model::IncrementalDetokenizer detokenizer(v.tokenizer.get());
  std::string text;
  for (const int id : ids) {
    const std::string delta = detokenizer.Push(id);
    if (!textgen::model::IsValidUtf8(delta)) Fail(v, "a streamed delta is not valid UTF-8");
    text += delta;
  }
  const std::string rest = detokenizer.Flush();
  if (!textgen::model::IsValidUtf8(rest)) Fail(v, "the flushed tail is not valid UTF-8");
  return text + rest;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("TEXTGEN_FUZZ_VOCAB_DIR"); dir != nullptr) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("ggml-vocab-") && name.ends_with(".gguf")) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& path : files)
      Add(path.filename().string(), textgen::model::ReadGgufVocabularyFile(path));
  }
  if (const char* bin = std::getenv("TEXTGEN_FUZZ_LLAMA2C_TOKENIZER"); bin != nullptr) {
    // tokenizer.bin does not say its size: try the two llama2.c vocabularies.
    for (const int size : {32000, 512}) {
      auto data = textgen::model::ReadLlama2cTokenizer(bin, size);
      if (data.ok()) {
        Add(std::string("llama2c:") + bin, std::move(data));
        break;
      }
    }
  }
  if (Vocabularies().empty()) {
    std::fprintf(stderr,
                 "tokenizer fuzzer: no vocabulary; set TEXTGEN_FUZZ_VOCAB_DIR to llama.cpp's "
                 "models/ directory (see tests/fuzz/run_tokenizer_fuzz.sh)\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Vocabulary& v = Vocabularies()[data[0] % Vocabularies().size()];
  const Tokenizer& tokenizer = *v.tokenizer;
  const bool add_bos = (data[1] & 1) != 0;
  const std::string_view payload(reinterpret_cast<const char*>(data + 2), size - 2);

  if (data[1] < 128) {
    if (!textgen::model::IsValidUtf8(payload)) return 0;
    const std::vector<int> ids = tokenizer.Encode(payload, add_bos);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= tokenizer.vocab_size()) Fail(v, "an id outside the vocabulary");
      // Plain text never becomes a control token (only the BOS Encode adds in front, and
      // WordPiece's [SEP] after and [UNK]).
      const bool framing = add_bos && ((i == 0 && ids[i] == tokenizer.bos_id()) ||
                                       (v.wordpiece && i + 1 == ids.size() && ids[i] == v.sep_id));
      const bool unknown = v.wordpiece && ids[i] == v.unk_id;
      if (tokenizer.IsControl(ids[i]) && !framing && !unknown) {
        Fail(v, "plain text encoded to a control token");
      }
    }
    const textgen::model::TextRange everything{0, payload.size()};
    if (tokenizer.EncodeWithSpecialTokens(payload, add_bos, {&everything, 1}) != ids) {
      Fail(v, "untrusted text encoded differently from Encode (a control token got in)");
    }
    const std::string decoded = tokenizer.Decode(ids);
    // Without BOS, SentencePiece keeps the space it puts before the first word; and it writes
    // spaces as U+2581, so a U+2581 in the text comes back as a space (as in llama.cpp).
    const bool lossless_text = payload.find("\xE2\x96\x81") == std::string_view::npos;
    if (v.round_trips && add_bos && lossless_text && decoded != payload) {
      Fail(v, "Decode(Encode(text)) != text");
    }
    if (Stream(v, ids) != textgen::model::SanitizeUtf8(decoded)) {
      Fail(v, "streamed text differs from Decode");
    }
    return 0;
  }
  std::vector<int> ids;
  for (size_t i = 0; i + 1 < payload.size(); i += 2) {
    const int raw = static_cast<uint8_t>(payload[i]) | (static_cast<uint8_t>(payload[i + 1]) << 8);
    ids.push_back(raw % tokenizer.vocab_size());
  }
  const std::string decoded = tokenizer.Decode(ids);
  if (Stream(v, ids) != textgen::model::SanitizeUtf8(decoded)) {
    Fail(v, "streamed text differs from the repaired Decode");
  }
  return 0;
}
