// textgen-bench-chat-template: the cost of rendering a conversation with real chat templates
// (what a Chat request pays before tokenizing), by template and conversation length; and of a
// request's tools as JSON text (parsing it; writing it, which sizes HTTP's parsed tools).
// Templates come from llama.cpp's models/templates: TEXTGEN_TEMPLATE_DIR (default
// build/reference/llamacpp/llama.cpp/models/templates).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "model/chat/chat_template.h"
#include "nlohmann/json.hpp"

namespace {

std::string TemplateDir() {
  const char* dir = std::getenv("TEXTGEN_TEMPLATE_DIR");
  return dir != nullptr ? dir : "build/reference/llamacpp/llama.cpp/models/templates";
}

void RenderConversation(benchmark::State& state, const std::string& file) {
  std::ifstream in(TemplateDir() + "/" + file);
  if (!in) {
    state.SkipWithError(("cannot read " + TemplateDir() + "/" + file).c_str());
    return;
  }
  std::ostringstream source;
  source << in.rdbuf();
  absl::StatusOr<textgen::model::ChatTemplate> chat =
      textgen::model::ChatTemplate::Create(source.str(), "<s>", "</s>");
  if (!chat.ok()) {
    state.SkipWithError(std::string(chat.status().message()).c_str());
    return;
  }
  textgen::model::ChatInput input;
  input.messages.push_back({"system", "You are a helpful assistant.", "", "", "", ""});
  const int turns = static_cast<int>(state.range(0));
  for (int i = 0; i < turns; ++i) {
    input.messages.push_back({"user",
                              absl::StrCat("Question ", i, ": what do you think about the sea?"),
                              "", "", "", ""});
    input.messages.push_back({"assistant",
                              absl::StrCat("Answer ", i, ": the sea is wide, deep and blue."), "",
                              "", "", ""});
  }
  input.messages.push_back({"user", "One more thing.", "", "", "", ""});
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<textgen::model::ChatPrompt> prompt = chat->Render(input);
    if (!prompt.ok()) {
      state.SkipWithError(std::string(prompt.status().message()).c_str());
      return;
    }
    bytes = prompt->text.size();
    benchmark::DoNotOptimize(prompt->text.data());
  }
  state.counters["messages"] = static_cast<double>(input.messages.size());
  state.counters["prompt_bytes"] = static_cast<double>(bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_Qwen25(benchmark::State& state) {
  RenderConversation(state, "Qwen-Qwen2.5-7B-Instruct.jinja");
}
void BM_Llama31(benchmark::State& state) {
  RenderConversation(state, "meta-llama-Llama-3.1-8B-Instruct.jinja");
}
void BM_Qwen3(benchmark::State& state) { RenderConversation(state, "Qwen-Qwen3-0.6B.jinja"); }
void BM_GptOss(benchmark::State& state) { RenderConversation(state, "openai-gpt-oss-120b.jinja"); }

// `count` function tools with three string parameters each (20: about 7.9 KB).
nlohmann::ordered_json Tools(int count) {
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  for (int i = 0; i < count; ++i) {
    nlohmann::ordered_json properties = nlohmann::ordered_json::object();
    for (int p = 0; p < 3; ++p) {
      properties[absl::StrCat("param_", p)] = {
          {"type", "string"}, {"description", absl::StrCat("A parameter of the tool number ", p)}};
    }
    tools.push_back(
        {{"type", "function"},
         {"function",
          {{"name", absl::StrCat("tool_", i)},
           {"description", "Does a thing with its inputs."},
           {"parameters",
            {{"type", "object"}, {"properties", properties}, {"required", {"param_0"}}}}}}});
  }
  return tools;
}

void BM_ToolsParse(benchmark::State& state) {
  const std::string text = Tools(static_cast<int>(state.range(0))).dump();
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::ordered_json::parse(text));
  state.counters["bytes"] = static_cast<double>(text.size());
}

void BM_ToolsDump(benchmark::State& state) {
  const nlohmann::ordered_json tools = Tools(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(tools.dump());
}

BENCHMARK(BM_ToolsParse)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ToolsDump)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen25)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Llama31)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Qwen3)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GptOss)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
