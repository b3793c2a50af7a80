#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "model/arch/model_config.h"
#include "model/format/gguf_writer.h"
#include "model/format/weights.h"
#include "model/tokenizer/tokenizer_data.h"
#include "tests/tools/quant_mix.h"

namespace textgen::model {

// Shape and contents of a random-weights model (benchmarks and loader tests).
struct RandomModelSpec {
  Architecture architecture = Architecture::kLlama;
  int dim = 64;
  int hidden_dim = 160;
  int n_layers = 2;
  int n_heads = 4;
  int n_kv_heads = 2;  // not gpt2 (it uses n_heads)
  int head_dim = 0;    // 0 = dim / n_heads; else written as attention.key_length (not gpt2)
  int vocab_size = 300;
  int context_length = 128;
  // Of 2-D tensors; norms and biases stay F32 like llama.cpp's. F32, F16, BF16 and Q8_0 encode
  // N(0, 0.02) weights; the other block types are random blocks of about that magnitude.
  DType dtype = DType::kF32;
  // A llama.cpp mix (Q4_K_M: `dtype` Q4_K, with Q6_K for the output and for attn_v and
  // ffn_down in some layers) instead of `dtype` everywhere.
  QuantMix mix = QuantMix::kNone;
  uint64_t seed = 1;
  bool tied_output = true;  // false: write an explicit output.weight
  int sliding_window = 0;   // gemma2/gemma3: attention.sliding_window (0: key not written)
  // Mixture of experts (qwen3moe; llama as Mixtral): experts > 0 writes expert_count,
  // expert_used_count, expert_feed_forward_length when expert_hidden_dim > 0 (else the loader
  // derives the width), and the router and stacked experts instead of the dense feed-forward.
  int experts = 0;
  int experts_used = 0;
  int expert_hidden_dim = 0;
  int leading_dense_layers = 0;  // lfm2moe: leading_dense_block_count
  std::string tokenizer_path;    // llama2.c tokenizer.bin to embed; empty: synthetic vocab
  // A real vocabulary: the tokenizer.* metadata of a GGUF (e.g. llama.cpp's
  // ggml-vocab-qwen2.gguf), written as is; vocab_size must be its token count.
  std::vector<GgufKv> vocab_metadata;
  std::string chat_template;  // written as tokenizer.chat_template when not empty
  int pooling_type = -1;      // written as {arch}.pooling_type when >= 0 (embedding models)
  // Hybrids (qwen35, lfm2): every full_attention_interval-th layer attends, the rest are
  // recurrent, of this shape (zeros: key heads = n_kv_heads of the head size, twice as many value
  // heads, kernel 4). Qwen's hybrids rotate a quarter of each head.
  int full_attention_interval = 4;
  DeltaNetShape delta_net;
  int short_conv_kernel = 3;  // lfm2: shortconv.l_cache, as LFM2's checkpoints
  // Mamba2 hybrids (nemotron_h, granitehybrid), zeros: inner 2 dim in heads of 16, state 16,
  // 2 groups, kernel 4. nemotron_h's blocks alternate a mixer and a feed-forward (every
  // full_attention_interval-th mixer attends).
  Mamba2Shape mamba2;
  std::string name = "random";
};

// A small llama model whose matrices are whole K-quant super-blocks wide (dim 256, FFN 512,
// 4 heads of 64, 2 KV heads, vocab 512, untied) in `dtype`; with `k_quant_mix`, llama.cpp's
// *_K_M mix on that base (the output and layer 1's attn_v and ffn_down in Q6_K).
RandomModelSpec QuantizedModelSpec(DType dtype, bool k_quant_mix);

// "stories15M", "stories110M", "tiny" or "bert-base" (see the tool's --help); qwen3moe gets
// 8 experts, 2 per token, each half the preset's hidden width.
absl::StatusOr<RandomModelSpec> RandomModelPreset(const std::string& preset, Architecture arch);

// A synthetic SentencePiece-style vocabulary: <unk>, <s>, </s>, 256 <0xXX> byte tokens, then
// distinct filler pieces ("▁", letters, "▁e", ...) with decreasing scores. vocab_size >= 260.
absl::StatusOr<TokenizerData> SyntheticSentencePieceVocab(int vocab_size);
// A synthetic GPT-2 byte-level vocabulary: 256 byte tokens, tokens built by merges, and
// <|endoftext|> last (bos = eos). vocab_size >= 258.
absl::StatusOr<TokenizerData> SyntheticGpt2Vocab(int vocab_size);

// A synthetic WordPiece vocabulary: [PAD] [UNK] [CLS] [SEP] [MASK], word-start pieces
// ("▁a", "▁ab", ...) and continuation letters. vocab_size >= 128.
absl::StatusOr<TokenizerData> SyntheticWordPieceVocab(int vocab_size);

// A complete GGUF (metadata llama.cpp needs, tokenizer, weights ~ N(0, 0.02), norms 1).
absl::StatusOr<GgufWriter> BuildRandomModel(const RandomModelSpec& spec);

}  // namespace textgen::model
