// textgen-tokenize: encodes stdin with a real tokenizer and prints one id per line, for
// comparisons with reference tools, or measures encode throughput.
//
//   textgen-tokenize --llama2c tokenizer.bin [--vocab-size 32000] [--bos] < text
//   textgen-tokenize --gpt2 encoder.json vocab.bpe [--bos] < text
//   textgen-tokenize --gguf vocab.gguf [--bos] < text      (any GGUF with a vocabulary)
//   ... --parse-special  control tokens written in the text become those tokens
//   ... --eog          print the end-of-generation ids, one per line, and nothing else
//   ... --add-special  add BOS as the vocabulary says (as the server does) instead of --bos
//   ... --cases        stdin holds llama.cpp tokenizer test cases separated by
//                      "\n__ggml_vocab_test__\n"; print one line of space-separated ids per case
//   ... --decode      read ids (one per line) from stdin, print the decoded text
//   ... --bench N     encode stdin N times, print throughput instead of ids

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "model/format/gguf_tokenizer.h"
#include "model/tokenizer/gpt2_vocab_files.h"
#include "model/tokenizer/llama2c_tokenizer_file.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"

namespace {

using textgen::model::TokenizerData;

int Usage() {
  std::cerr
      << "usage: textgen-tokenize (--llama2c tokenizer.bin [--vocab-size N] | --gpt2 "
         "encoder.json vocab.bpe | --gguf FILE) [--bos | --add-special] [--decode | --bench N | "
         "--cases] "
         "< input\n";
  return 2;
}

// The vocabulary of a GGUF file, which may hold no tensors (llama.cpp's ggml-vocab-*.gguf).

}  // namespace

int main(int argc, char** argv) {
  std::string llama2c_path, encoder_path, merges_path, gguf_path;
  int vocab_size = 32000;
  int bench_runs = 0;
  bool add_bos = false;
  bool decode = false;
  bool cases = false;
  bool add_special = false;
  bool eog = false;
  bool parse_special = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--llama2c" && i + 1 < argc) {
      llama2c_path = next();
    } else if (arg == "--gpt2" && i + 2 < argc) {
      encoder_path = next();
      merges_path = next();
    } else if (arg == "--gguf" && i + 1 < argc) {
      gguf_path = next();
    } else if (arg == "--cases") {
      cases = true;
    } else if (arg == "--parse-special") {
      parse_special = true;
    } else if (arg == "--eog") {
      eog = true;
    } else if (arg == "--add-special") {
      add_special = true;
    } else if (arg == "--vocab-size" && i + 1 < argc) {
      vocab_size = std::atoi(next());
    } else if (arg == "--bench" && i + 1 < argc) {
      bench_runs = std::atoi(next());
    } else if (arg == "--bos") {
      add_bos = true;
    } else if (arg == "--decode") {
      decode = true;
    } else {
      return Usage();
    }
  }
  if (!llama2c_path.empty() + !encoder_path.empty() + !gguf_path.empty() != 1) return Usage();

  absl::StatusOr<TokenizerData> data;
  if (!gguf_path.empty()) {
    data = textgen::model::ReadGgufVocabularyFile(gguf_path);
  } else if (!encoder_path.empty()) {
    data = textgen::model::ReadGpt2VocabFiles(encoder_path, merges_path);
  } else {
    data = textgen::model::ReadLlama2cTokenizer(llama2c_path, vocab_size);
  }
  if (!data.ok()) {
    std::cerr << data.status() << "\n";
    return 1;
  }
  if (add_special) add_bos = data->add_bos;
  auto tokenizer = textgen::model::CreateTokenizer(*std::move(data));
  if (!tokenizer.ok()) {
    std::cerr << tokenizer.status() << "\n";
    return 1;
  }
  if (eog) {
    for (int id : (*tokenizer)->end_of_generation_ids()) std::printf("%d\n", id);
    return 0;
  }
  const std::string input((std::istreambuf_iterator<char>(std::cin)),
                          std::istreambuf_iterator<char>());
  if (decode) {
    std::vector<int> ids;
    for (size_t pos = 0; pos < input.size();) {
      char* end = nullptr;
      const long id = std::strtol(input.c_str() + pos, &end, 10);
      if (end == input.c_str() + pos) break;
      ids.push_back(static_cast<int>(id));
      pos = end - input.c_str();
    }
    std::cout << (*tokenizer)->Decode(ids);
    return 0;
  }
  if (cases) {
    constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
    std::string_view rest = input;
    while (!rest.empty()) {
      const size_t end = rest.find(kSeparator);
      const std::string_view text = rest.substr(0, end);
      rest = end == std::string_view::npos ? "" : rest.substr(end + kSeparator.size());
      const std::vector<int> ids = (*tokenizer)->Encode(text, add_bos);
      for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
      std::printf("\n");
    }
    return 0;
  }
  if (!textgen::model::IsValidUtf8(input)) {
    std::cerr << "input is not valid UTF-8\n";
    return 1;
  }
  if (bench_runs > 0) {
    size_t n_tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int run = 0; run < bench_runs; ++run)
      n_tokens = (*tokenizer)->Encode(input, add_bos).size();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        bench_runs;
    std::printf("%zu bytes -> %zu tokens in %.3f s per encode: %.2f MB/s, %.0f tokens/s\n",
                input.size(), n_tokens, seconds, input.size() / seconds / 1e6, n_tokens / seconds);
    return 0;
  }
  const textgen::model::Tokenizer& t = **tokenizer;
  for (int id :
       parse_special ? t.EncodeWithSpecialTokens(input, add_bos, {}) : t.Encode(input, add_bos)) {
    std::printf("%d\n", id);
  }
  return 0;
}
