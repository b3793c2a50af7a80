// textgen-dump-logits --model PATH --tokens 1,2,3 [--bf16] [--dequantize] [--mode prefill|decode]
//                     --out FILE
//
// Writes little-endian f32 logits for comparison with an independent (PyTorch) forward:
//   prefill: one chunk of all tokens, the last position's logits  -> [1, vocab]
//   decode:  tokens fed one at a time, every position's logits    -> [n, vocab]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "model/format/model_loader.h"
#include "model/runtime/engine.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "textgen-dump-logits: %s\n", message.c_str());
  return 1;
}

constexpr char kUsage[] =
    "usage: textgen-dump-logits --model PATH --tokens 1,2,3 [--bf16] [--dequantize] "
    "[--mode prefill|decode] [--threads N] --out FILE";

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, tokens_arg, out_path, mode = "prefill";
  textgen::model::EngineOptions options;
  options.kv_cache_bytes = int64_t{256} << 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "--bf16") {
      options.bf16 = true;
    } else if (arg == "--dequantize") {
      options.quantized_kernels = false;
    } else if (arg == "--model" && (v = value())) {
      model_path = v;
    } else if (arg == "--tokens" && (v = value())) {
      tokens_arg = v;
    } else if (arg == "--mode" && (v = value())) {
      mode = v;
    } else if (arg == "--out" && (v = value())) {
      out_path = v;
    } else if (arg == "--threads" && (v = value())) {
      if (!absl::SimpleAtoi(v, &options.threads)) return Fail("--threads: not a number");
    } else {
      return Fail(std::string("bad argument '") + arg + "'\n" + kUsage);
    }
  }
  if (model_path.empty() || tokens_arg.empty() || out_path.empty()) return Fail(kUsage);
  if (mode != "prefill" && mode != "decode") return Fail("--mode must be prefill or decode");
  std::vector<int> tokens;
  for (absl::string_view piece : absl::StrSplit(tokens_arg, ',', absl::SkipWhitespace())) {
    int id;
    if (!absl::SimpleAtoi(piece, &id)) return Fail("--tokens: bad id '" + std::string(piece) + "'");
    tokens.push_back(id);
  }
  if (tokens.empty()) return Fail("--tokens: no ids");

  auto model = textgen::model::LoadModel(model_path);
  if (!model.ok()) return Fail(model.status().ToString());
  options.max_batch_tokens = std::max<int>(static_cast<int>(tokens.size()), 1);
  auto engine = textgen::model::Engine::Create(*model, options);
  if (!engine.ok()) return Fail(engine.status().ToString());
  const textgen::model::SequenceId seq = (*engine)->kv_cache().NewSequence();
  if (absl::Status reserved = (*engine)->kv_cache().Reserve(seq, static_cast<int>(tokens.size()));
      !reserved.ok()) {
    return Fail(reserved.ToString());
  }

  std::ofstream out(out_path, std::ios::binary);
  if (!out) return Fail("cannot open --out " + out_path);
  auto write = [&](const textgen::model::ForwardResult& r) {
    // x86 is little-endian: the floats are written as they sit in memory.
    out.write(reinterpret_cast<const char*>(r.logits),
              static_cast<std::streamsize>(sizeof(float)) * r.rows * r.vocab_size);
  };
  if (mode == "prefill") {
    textgen::model::SequenceChunk chunk{seq, tokens, true};
    auto result = (*engine)->Forward({&chunk, 1});
    if (!result.ok()) return Fail(result.status().ToString());
    write(*result);
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      textgen::model::SequenceChunk chunk{seq, {&tokens[i], 1}, true};
      auto result = (*engine)->Forward({&chunk, 1});
      if (!result.ok()) return Fail(result.status().ToString());
      write(*result);
    }
  }
  out.close();
  if (!out) return Fail("writing " + out_path + " failed");
  return 0;
}
