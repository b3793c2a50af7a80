#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace textgen::model {

// The vocabulary of a model as read from a file, before a Tokenizer is built from it.
struct TokenizerData {
  enum class Kind {
    kSentencePieceBpe,  // GGUF tokenizer.ggml.model == "llama", llama2.c tokenizer.bin
    kGpt2ByteBpe,       // GGUF tokenizer.ggml.model == "gpt2", encoder.json + vocab.bpe
    kWordPiece,         // GGUF tokenizer.ggml.model == "bert" (encoders: BERT, nomic-embed)
  };
  // GGUF tokenizer.ggml.token_type values.
  enum TokenType {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6
  };

  Kind kind = Kind::kSentencePieceBpe;
  std::vector<std::string> tokens;  // id -> token text as stored (SentencePiece "▁" or GPT-2 "Ġ")
  std::vector<float> scores;        // SentencePiece merge priority; empty for gpt2
  std::vector<int> token_types;     // TokenType per id; may be empty (then all normal)
  std::vector<std::string> merges;      // gpt2: "left right" in rank order
  std::string pre_tokenizer = "gpt-2";  // gpt2: GGUF tokenizer.ggml.pre (bpe_pre_tokenizer.h)
  int bos_id = -1;                      // -1 when absent
  int eos_id = -1;
  int unk_id = -1;
  int pad_id = -1;
  bool add_bos = true;           // prepend BOS when encoding a prompt
  bool add_eos = false;          // append EOS to an embedding input (tokenizer.ggml.add_eos_token)
  bool add_space_prefix = true;  // sentencepiece: the dummy "▁" before the text (not Gemma)
  // WordPiece: [SEP] after the text when encoding with add_bos (llama.cpp's add_sep), and the
  // BERT normalizer's switches (tokenizer.ggml.normalizer.*).
  int sep_id = -1;
  bool add_sep = false;
  bool lowercase = true;
  bool strip_accents = true;
  // Tokens that end a generation (EOS, end-of-turn, end-of-message...), ascending; when empty,
  // CreateTokenizer uses {eos_id}. model/format/gguf_tokenizer.cc derives it as llama.cpp does.
  std::vector<int> end_of_generation_ids;
  // Special tokens after which whitespace is dropped when they are found in text, ascending
  // (llama.cpp's RSTRIP attribute: all of Phi-3's but <unk>, <s>, <|endoftext|>).
  std::vector<int> rstrip_ids;
  // Control tokens that decoding still prints (byte-level BPE vocabularies): gpt-oss's harmony
  // structure, which the chat reply parser reads. Ascending. Being control tokens, user text
  // can never produce them.
  std::vector<int> printed_control_ids;
};

// Checks what every tokenizer needs of `data`: a non-empty vocabulary of at most 2^24
// tokens, one token type per token when types are given, and special ids in [-1, size).
// `kind` names the vocabulary in messages ("gpt2", "sentencepiece").
absl::Status ValidateVocabulary(const TokenizerData& data, const char* kind);

}  // namespace textgen::model
