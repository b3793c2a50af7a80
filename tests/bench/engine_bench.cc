// textgen-bench-engine --model PATH [--bf16] [--dequantize] [--threads N] [--prompt 128] [--gen
// 128]
//                      [--batches 1,4,16,64] [--skinny-max-rows N] [--kv-f16] [--read-probe]
//                      [--json]
//
// Measures the engine alone (no server): prefill tokens/s (one chunk of --prompt tokens),
// single-sequence decode tokens/s (--gen steps after the prompt), and batched decode
// tokens/s summed over B sequences that sit at different positions. Random token ids;
// every measurement is preceded by a warm-up so primitive creation is not timed.
// --read-probe also measures the DRAM read rate on the engine's own threads just before and
// just after the single-sequence decode (tests/bench/read_probe.h, best of 3 reads of 1 GiB
// each): this host's read rate moves by 2x within minutes, so a decode's share of the read
// limit is fair only against the rate of the same minute.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model/format/model_loader.h"
#include "model/runtime/engine.h"
#include "tests/bench/read_probe.h"

namespace {

using textgen::model::Engine;
using textgen::model::SequenceChunk;
using textgen::model::SequenceId;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string model;
  bool bf16 = false;
  bool dequantize = false;
  bool json = false;
  int threads = 0;
  int prompt = 128;
  int gen = 128;
  int skinny_max_rows = -1;  // -1: the engine's default
  bool kv_f16 = false;
  bool read_probe = false;
  std::vector<int> batches = {1, 4, 16, 64};
};

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "textgen-bench-engine: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// The process's anonymous memory and how much of it the kernel backs with 2 MiB pages
// (/proc/self/smaps_rollup), in MiB: with the model file in the page cache the kernel finds
// fewer free 2 MiB blocks for the packed weights, so a run says where its weights landed
// (docs/performance.md, "where the packed weights land"). Zero when the file is unreadable.
struct AnonMemory {
  double anonymous_mib = 0;
  double huge_mib = 0;
};
AnonMemory ReadAnonMemory() {
  AnonMemory out;
  std::ifstream rollup("/proc/self/smaps_rollup");
  std::string line;  // "Anonymous:   123456 kB"; the first line names the range
  while (std::getline(rollup, line)) {
    double kib = 0;
    if (std::sscanf(line.c_str(), "Anonymous: %lf", &kib) == 1) out.anonymous_mib = kib / 1024;
    if (std::sscanf(line.c_str(), "AnonHugePages: %lf", &kib) == 1) out.huge_mib = kib / 1024;
  }
  return out;
}

class Bench {
 public:
  Bench(Engine& engine, int vocab) : engine_(engine), rng_(1), vocab_(vocab) {}

  std::vector<int> Tokens(int n) {
    std::vector<int> t(n);
    for (int& x : t) x = static_cast<int>(rng_() % vocab_);
    return t;
  }

  // Fills `seq` with n tokens in chunks of at most max_chunk.
  void Prefill(SequenceId seq, int n, int max_chunk) {
    const std::vector<int> tokens = Tokens(n);
    Check(engine_.kv_cache().Reserve(seq, engine_.kv_cache().Length(seq) + n), "reserve");
    for (int begin = 0; begin < n; begin += max_chunk) {
      const int len = std::min(max_chunk, n - begin);
      SequenceChunk chunk{seq, std::span<const int>(tokens).subspan(begin, len), false};
      Check(engine_.Forward({&chunk, 1}).status(), "prefill");
    }
  }

  // Tokens/s of prefilling `prompt` tokens as one chunk (best of `reps`).
  double PrefillRate(int prompt, int reps) {
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {  // r == 0 warms up
      const SequenceId seq = engine_.kv_cache().NewSequence();
      Check(engine_.kv_cache().Reserve(seq, prompt), "reserve");
      const std::vector<int> tokens = Tokens(prompt);
      SequenceChunk chunk{seq, tokens, true};
      const auto start = Clock::now();
      Check(engine_.Forward({&chunk, 1}).status(), "prefill");
      if (r > 0) best = std::min(best, Seconds(start));
      Check(engine_.kv_cache().Free(seq), "free");
    }
    return prompt / best;
  }

  // Decode tokens/s summed over `batch` sequences whose lengths are spread over
  // [prompt/2, 3*prompt/2), for `gen` steps (after 2 warm-up steps).
  double DecodeRate(int batch, int prompt, int gen, int max_chunk) {
    std::vector<SequenceId> seqs;
    for (int i = 0; i < batch; ++i) {
      seqs.push_back(engine_.kv_cache().NewSequence());
      const int len = batch == 1 ? prompt : prompt / 2 + (prompt * i) / batch;
      Prefill(seqs.back(), std::max(len, 1), max_chunk);
      Check(engine_.kv_cache().Reserve(seqs.back(), std::max(len, 1) + gen + 2), "reserve");
    }
    std::vector<int> next(batch);
    std::vector<SequenceChunk> chunks(batch);
    double elapsed = 0;
    for (int step = 0; step < gen + 2; ++step) {
      for (int i = 0; i < batch; ++i) {
        chunks[i] = SequenceChunk{seqs[i], {&next[i], 1}, true};
      }
      const auto start = Clock::now();
      auto result = engine_.Forward(chunks);
      Check(result.status(), "decode");
      // Greedy, as a server would sample: part of the per-step cost.
      for (int i = 0; i < batch; ++i) {
        auto row = result->Row(i);
        next[i] = static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
      }
      if (step >= 2) elapsed += Seconds(start);
    }
    for (SequenceId s : seqs) Check(engine_.kv_cache().Free(s), "free");
    return static_cast<double>(batch) * gen / elapsed;
  }

 private:
  Engine& engine_;
  std::mt19937 rng_;
  int vocab_;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr,
                 "textgen-bench-engine: %s\nusage: textgen-bench-engine --model PATH [--bf16] "
                 "[--dequantize] [--threads N] [--prompt 128] [--gen 128] [--batches 1,4,16,64] "
                 "[--skinny-max-rows N] [--kv-f16] [--read-probe] [--json]\n",
                 msg.c_str());
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(arg + " needs a value");
      return argv[++i];
    };
    auto number = [&]() {
      int v;
      if (!absl::SimpleAtoi(value(), &v) || v < 0) fail(arg + ": not a number >= 0");
      return v;
    };
    if (arg == "--model") {
      f.model = value();
    } else if (arg == "--bf16") {
      f.bf16 = true;
    } else if (arg == "--dequantize") {
      f.dequantize = true;
    } else if (arg == "--json") {
      f.json = true;
    } else if (arg == "--threads") {
      f.threads = number();
    } else if (arg == "--prompt") {
      f.prompt = std::max(number(), 1);
    } else if (arg == "--gen") {
      f.gen = std::max(number(), 1);
    } else if (arg == "--kv-f16") {
      f.kv_f16 = true;
    } else if (arg == "--read-probe") {
      f.read_probe = true;
    } else if (arg == "--skinny-max-rows") {
      f.skinny_max_rows = std::max(number(), 0);
    } else if (arg == "--batches") {
      f.batches.clear();
      for (absl::string_view p : absl::StrSplit(value(), ',', absl::SkipWhitespace())) {
        int b;
        if (!absl::SimpleAtoi(p, &b) || b < 1) fail("--batches: bad size");
        f.batches.push_back(b);
      }
    } else {
      fail("unknown argument " + arg);
    }
  }
  if (f.model.empty()) fail("--model is required");
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  auto model = textgen::model::LoadModel(flags.model);
  Check(model.status(), "loading the model");
  textgen::model::EngineOptions options;
  options.threads = flags.threads;
  options.bf16 = flags.bf16;
  options.quantized_kernels = !flags.dequantize;
  options.skinny_max_rows = flags.skinny_max_rows;
  options.kv_cache_f16 = flags.kv_f16;
  int max_batch = 1;
  for (int b : flags.batches) max_batch = std::max(max_batch, b);
  options.max_batch_tokens = std::max({flags.prompt, max_batch, 64});
  options.kv_cache_bytes = int64_t{4} << 30;
  const auto load_start = Clock::now();
  auto engine = Engine::Create(*model, options);
  Check(engine.status(), "creating the engine");
  const double load_s = Seconds(load_start);
  const AnonMemory loaded = ReadAnonMemory();

  Bench bench(**engine, model->config.vocab_size);
  const double prefill = bench.PrefillRate(flags.prompt, 3);
  std::optional<textgen::bench::ReadProbe> probe;
  const auto on_engine_pool = [&](int n, absl::FunctionRef<void(int)> part) {
    (*engine)->ParallelFor(n, part);
  };
  double read_before = 0, read_after = 0;
  if (flags.read_probe) {
    absl::StatusOr<textgen::bench::ReadProbe> created = textgen::bench::ReadProbe::Create();
    Check(created.status(), "mapping the read probe");
    probe.emplace(*std::move(created));
    read_before = probe->Best(3, on_engine_pool);
  }
  const double decode = bench.DecodeRate(1, flags.prompt, flags.gen, options.max_batch_tokens);
  if (probe.has_value()) {
    read_after = probe->Best(3, on_engine_pool);
    probe.reset();  // its 1 GiB is not the batched runs' memory
  }
  std::vector<double> batched;
  for (int b : flags.batches) {
    batched.push_back(bench.DecodeRate(b, flags.prompt, flags.gen, options.max_batch_tokens));
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_rss_mib = usage.ru_maxrss / 1024.0;

  if (flags.json) {
    std::vector<std::string> rows;
    for (size_t i = 0; i < flags.batches.size(); ++i) {
      rows.push_back(
          absl::StrCat("{\"batch\": ", flags.batches[i], ", \"decode_tok_s\": ", batched[i], "}"));
    }
    std::printf(
        "{\"model\": \"%s\", \"dtype\": \"%s\", \"threads\": %d, \"prompt\": %d, \"gen\": %d, "
        "\"engine_create_s\": %.3f, \"prefill_tok_s\": %.1f, \"decode_tok_s\": %.1f, "
        "\"batched\": [%s], \"peak_rss_mib\": %.1f, \"anon_after_load_mib\": %.1f, "
        "\"anon_huge_after_load_mib\": %.1f, \"read_gb_s_before_decode\": %.1f, "
        "\"read_gb_s_after_decode\": %.1f}\n",
        flags.model.c_str(), flags.bf16 ? "bf16" : "f32", flags.threads, flags.prompt, flags.gen,
        load_s, prefill, decode, absl::StrJoin(rows, ", ").c_str(), peak_rss_mib,
        loaded.anonymous_mib, loaded.huge_mib, read_before, read_after);
  } else {
    std::printf("model %s (%s, kv %s, threads %d, engine create %.2f s)\n", flags.model.c_str(),
                flags.bf16 ? "bf16" : "f32", flags.kv_f16 ? "f16" : "f32", flags.threads, load_s);
    std::printf("prefill %d tokens:      %9.1f tok/s\n", flags.prompt, prefill);
    std::printf("decode 1 sequence:      %9.1f tok/s\n", decode);
    if (flags.read_probe) {
      std::printf("read rate around it:    %9.1f GB/s before, %.1f after\n", read_before,
                  read_after);
    }
    for (size_t i = 0; i < flags.batches.size(); ++i) {
      std::printf("decode batch %3d:       %9.1f tok/s (summed)\n", flags.batches[i], batched[i]);
    }
    std::printf("peak RSS:               %9.1f MiB\n", peak_rss_mib);
    std::printf("2 MiB pages after load: %9.1f of %.1f MiB anonymous\n", loaded.huge_mib,
                loaded.anonymous_mib);
  }
  return 0;
}
