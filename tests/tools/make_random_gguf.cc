// textgen-make-random-gguf: writes a random-weights GGUF in a real model's shape, for
// benchmarks against llama.cpp and for loader tests.
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "model/arch/architectures.h"
#include "model/format/gguf_reader.h"
#include "model/format/gguf_writer.h"
#include "model/format/mapped_file.h"
#include "tests/tools/random_gguf.h"

namespace {

constexpr char kUsage[] =
    "usage: textgen-make-random-gguf --arch "
    "llama|gpt2|qwen2|qwen3|qwen3moe|gpt-oss|phi3|gemma2|gemma3|bert|nomic-bert|qwen35|qwen35moe|"
    "lfm2|\n"
    "         qwen3next|nemotron_h|nemotron_h_moe|granitehybrid|lfm2moe\n"
    "         --preset stories15M|stories110M|tiny|bert-base\n"
    "         --dtype f32|f16|bf16|q8_0|q4_k_m|q5_k_m|mxfp4_moe --out FILE\n"
    "         [--tokenizer tokenizer.bin] [--seed N]\n"
    "         [--dim N] [--hidden N] [--layers N] [--heads N] [--kv-heads N] [--vocab N]\n"
    "         [--context N] [--head-dim N] [--sliding-window N] [--untied] [--name NAME]\n"
    "         [--vocab-from VOCAB.gguf [--add-control-tokens A,B,...]] [--chat-template "
    "FILE.jinja]\n"
    "         [--pooling mean|cls|last] [--experts N --experts-used N [--expert-hidden N]]\n"
    "         [--full-attention-interval N] [--ssm-key-heads N] [--ssm-value-heads N]\n"
    "         [--ssm-head-dim N] [--ssm-conv-kernel N]   (hybrids: qwen35, qwen35moe, qwen3next)\n"
    "         [--short-conv-kernel N]   (lfm2: its convolution's taps, default 3)\n"
    "         [--mamba-inner N] [--mamba-state N] [--mamba-heads N] [--mamba-groups N]\n"
    "         [--ssm-conv-kernel N]   (Mamba2 hybrids: nemotron_h, nemotron_h_moe, granitehybrid)\n"
    "         [--leading-dense N]   (lfm2moe: leading_dense_block_count, default 0)\n"
    "presets: stories15M  dim 288, hidden 768, 6 layers, 6 heads, vocab 32000, ctx 256\n"
    "         stories110M dim 768, hidden 2048, 12 layers, 12 heads, vocab 32000, ctx 1024\n"
    "         tiny        dim 64, hidden 160, 2 layers, 4 heads (2 kv), vocab 300, ctx 128\n"
    "         bert-base   dim 768, hidden 3072, 12 layers, 12 heads, vocab 30522, ctx 512\n"
    "weights ~ N(0, 0.02), norm weights 1; output tied to token_embd unless --untied.\n"
    "--tokenizer embeds a llama2.c vocabulary (its size must equal --vocab); otherwise a\n"
    "synthetic SentencePiece-style (llama), byte-level (gpt2) or WordPiece (bert, nomic-bert)\n"
    "vocabulary is written; encoders get pooling_type mean unless --pooling says otherwise.\n"
    "--vocab-from copies a GGUF's tokenizer.* metadata (a real vocabulary, e.g. llama.cpp's\n"
    "models/ggml-vocab-qwen2.gguf) and sets --vocab to its size (--add-control-tokens appends\n"
    "control tokens to it, e.g. a family's [INST] and [TOOL_CALLS]); --chat-template embeds a\n"
    "Jinja chat template as tokenizer.chat_template; --pooling writes {arch}.pooling_type (an\n"
    "embedding model's).\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "textgen-make-random-gguf: %s\n", message.c_str());
  return 2;
}

std::vector<std::string> Split(const std::string& list, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(list);
  for (std::string part; std::getline(stream, part, separator);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// Appends `texts` to a copied vocabulary as control tokens (a family's special tokens that the
// vocabulary borrowed from another lacks: Mistral's [INST], [TOOL_CALLS], ...); returns how many.
int AppendControlTokens(std::vector<textgen::model::GgufKv>& metadata,
                        const std::vector<std::string>& texts) {
  using textgen::model::GgufType;
  using textgen::model::GgufValue;
  for (textgen::model::GgufKv& kv : metadata) {
    if (kv.value.type != GgufType::kArray) continue;
    auto& elements = std::get<std::vector<GgufValue>>(kv.value.data);
    for (const std::string& text : texts) {
      if (kv.key == "tokenizer.ggml.tokens") elements.push_back(GgufValue::String(text));
      if (kv.key == "tokenizer.ggml.token_type") elements.push_back(GgufValue::Int32(3));
      if (kv.key == "tokenizer.ggml.scores") elements.push_back(GgufValue::Float32(0.0f));
    }
  }
  return static_cast<int>(texts.size());
}

bool ParseInt(const std::string& s, long long& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace textgen::model;
  std::map<std::string, std::string> args;
  bool untied = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--untied") {
      untied = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0 || i + 1 >= argc)
      return Fail("bad argument " + flag + "\n" + kUsage);
    args[flag.substr(2)] = argv[++i];
  }
  const auto get = [&](const std::string& key, const std::string& fallback) {
    auto it = args.find(key);
    return it == args.end() ? fallback : it->second;
  };
  if (!args.count("out")) return Fail(std::string("--out is required\n") + kUsage);

  const textgen::model::ArchitectureSpec* arch_spec =
      textgen::model::FindArchitecture(get("arch", "llama"));
  if (arch_spec == nullptr) {
    return Fail("--arch must be one of " + textgen::model::SupportedArchitectureNames());
  }
  const Architecture arch = arch_spec->architecture;
  auto spec = RandomModelPreset(get("preset", "tiny"), arch);
  if (!spec.ok()) return Fail(std::string(spec.status().message()));

  const std::map<std::string, DType> dtypes = {{"f32", DType::kF32},       {"f16", DType::kF16},
                                               {"bf16", DType::kBF16},     {"q8_0", DType::kQ8_0},
                                               {"q4_k_m", DType::kQ4_K},   {"q5_k_m", DType::kQ5_K},
                                               {"mxfp4_moe", DType::kQ8_0}};
  const std::string dtype_name = get("dtype", "f32");
  const auto dtype = dtypes.find(dtype_name);
  if (dtype == dtypes.end()) {
    return Fail("--dtype must be f32, f16, bf16, q8_0, q4_k_m, q5_k_m or mxfp4_moe");
  }
  spec->dtype = dtype->second;
  // llama.cpp's mixes, with the types llama-quantize gives each tensor.
  if (dtype_name == "q4_k_m" || dtype_name == "q5_k_m") spec->mix = QuantMix::kKQuantMedium;
  if (dtype_name == "mxfp4_moe") spec->mix = QuantMix::kMxfp4Moe;

  const std::map<std::string, int*> ints = {
      {"dim", &spec->dim},
      {"hidden", &spec->hidden_dim},
      {"sliding-window", &spec->sliding_window},
      {"layers", &spec->n_layers},
      {"heads", &spec->n_heads},
      {"kv-heads", &spec->n_kv_heads},
      {"vocab", &spec->vocab_size},
      {"context", &spec->context_length},
      {"head-dim", &spec->head_dim},
      {"experts", &spec->experts},
      {"experts-used", &spec->experts_used},
      {"expert-hidden", &spec->expert_hidden_dim},
      {"full-attention-interval", &spec->full_attention_interval},
      {"ssm-key-heads", &spec->delta_net.k_heads},
      {"ssm-value-heads", &spec->delta_net.v_heads},
      {"ssm-head-dim", &spec->delta_net.head_k_dim},
      {"ssm-conv-kernel", &spec->delta_net.conv_kernel},
      {"short-conv-kernel", &spec->short_conv_kernel},
      {"mamba-inner", &spec->mamba2.inner},
      {"mamba-state", &spec->mamba2.state},
      {"mamba-heads", &spec->mamba2.heads},
      {"mamba-groups", &spec->mamba2.groups},
      {"leading-dense", &spec->leading_dense_layers}};
  for (const auto& [key, value] : args) {
    if (key == "out" || key == "arch" || key == "preset" || key == "dtype" || key == "tokenizer" ||
        key == "name" || key == "seed" || key == "vocab-from" || key == "chat-template" ||
        key == "pooling" || key == "add-control-tokens") {
      continue;
    }
    auto it = ints.find(key);
    long long v = 0;
    if (it == ints.end()) return Fail("unknown flag --" + key + "\n" + kUsage);
    if (!ParseInt(value, v) || v <= 0 || v > (1 << 24)) {
      return Fail("--" + key + " must be a positive integer, got " + value);
    }
    *it->second = static_cast<int>(v);
  }
  if (arch == Architecture::kGpt2) spec->n_kv_heads = spec->n_heads;
  spec->mamba2.conv_kernel = spec->delta_net.conv_kernel;
  long long seed = 1;
  if (args.count("seed") && (!ParseInt(args["seed"], seed) || seed < 0)) {
    return Fail("--seed must be a non-negative integer");
  }
  spec->seed = static_cast<uint64_t>(seed);
  spec->tokenizer_path = get("tokenizer", "");
  spec->name = get("name", spec->name);
  spec->tied_output = !untied;
  if (args.count("vocab-from")) {
    auto file = MappedFile::Open(args["vocab-from"]);
    if (!file.ok()) return Fail(std::string(file.status().message()));
    auto gguf = ParseGguf((*file)->bytes());
    if (!gguf.ok()) return Fail(args["vocab-from"] + ": " + std::string(gguf.status().message()));
    auto tokens = gguf->GetArray("tokenizer.ggml.tokens", GgufType::kString);
    if (!tokens.ok())
      return Fail(args["vocab-from"] + ": " + std::string(tokens.status().message()));
    spec->vocab_size = static_cast<int>((*tokens)->size());
    for (const GgufKv& kv : gguf->metadata) {
      if (kv.key.rfind("tokenizer.", 0) == 0) spec->vocab_metadata.push_back(kv);
    }
    if (args.count("add-control-tokens")) {
      spec->vocab_size +=
          AppendControlTokens(spec->vocab_metadata, Split(args["add-control-tokens"], ','));
    }
  } else if (args.count("add-control-tokens")) {
    return Fail("--add-control-tokens needs --vocab-from");
  }
  if (args.count("pooling")) {
    const std::map<std::string, int> poolings = {{"mean", 1}, {"cls", 2}, {"last", 3}};
    const auto pooling = poolings.find(args["pooling"]);
    if (pooling == poolings.end()) return Fail("--pooling must be mean, cls or last");
    spec->pooling_type = pooling->second;
  }
  if (args.count("chat-template")) {
    std::ifstream in(args["chat-template"], std::ios::binary);
    if (!in) return Fail("cannot read --chat-template " + args["chat-template"]);
    std::ostringstream text;
    text << in.rdbuf();
    spec->chat_template = text.str();
  }

  auto writer = BuildRandomModel(*spec);
  if (!writer.ok()) return Fail(std::string(writer.status().message()));
  const std::string out = args["out"];
  if (absl::Status s = writer->WriteFile(out); !s.ok()) return Fail(std::string(s.message()));
  std::printf("wrote %s: %s dim %d hidden %d layers %d heads %d/%d vocab %d ctx %d %s\n",
              out.c_str(), arch_spec->name, spec->dim, spec->hidden_dim, spec->n_layers,
              spec->n_heads, spec->n_kv_heads, spec->vocab_size, spec->context_length,
              DTypeName(spec->dtype));
  return 0;
}
