// libFuzzer target over the chat reply parser (what a model writes is untrusted too: a prompt
// can make it write anything). Byte 0 picks the format (bits 0-2), whether tools are declared,
// reasoning tags and a prompt that ends inside them (bits 3-5); byte 1 a split step; the rest is
// the reply. The
// reply is parsed whole and in pieces of the step's sizes: the two must agree exactly
// (content, reasoning, calls and their ids, malformed count), deltas must come in order (a
// call's first delta with its id, then its arguments), and every call must name a declared
// tool.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat/chat_output_parser.h"

namespace {

using textgen::model::ChatOutputDelta;
using textgen::model::ChatOutputOptions;
using textgen::model::ChatOutputParser;
using textgen::model::ToolCallFormat;

struct Result {
  std::string content, reasoning;
  std::vector<std::string> streamed_arguments;
  std::vector<std::string> streamed_names;
  ChatOutputParser parser;
};

void Check(bool ok) {
  if (!ok) std::abort();
}

void Take(Result& r, const ChatOutputDelta& d) {
  r.content += d.content;
  r.reasoning += d.reasoning;
  for (const auto& call : d.tool_calls) {
    if (!call.id.empty()) {
      Check(call.index == static_cast<int>(r.streamed_names.size()));
      r.streamed_names.push_back(call.name);
      r.streamed_arguments.emplace_back();
    }
    Check(call.index >= 0 && call.index < static_cast<int>(r.streamed_arguments.size()));
    r.streamed_arguments[call.index] += call.arguments;
  }
}

Result Parse(const ChatOutputOptions& options, std::string_view text, size_t step) {
  Result r{"", "", {}, {}, ChatOutputParser(options)};
  for (size_t at = 0; at < text.size(); at += step) Take(r, r.parser.Feed(text.substr(at, step)));
  Take(r, r.parser.Finish());
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  constexpr ToolCallFormat kFormats[] = {ToolCallFormat::kHermes,      ToolCallFormat::kLlama3Json,
                                         ToolCallFormat::kMistral,     ToolCallFormat::kPhi4Mini,
                                         ToolCallFormat::kGenericJson, ToolCallFormat::kHarmony,
                                         ToolCallFormat::kQwen3Coder,  ToolCallFormat::kLfm2};
  ChatOutputOptions options;
  options.format = kFormats[(data[0] & 0x07) % std::size(kFormats)];
  options.parse_tool_calls = (data[0] & 0x08) == 0;
  if (options.parse_tool_calls) options.tool_names = {"get_weather", "add", "a"};
  options.text_parameters = {{"get_weather", {"city"}}, {"a", {"a", "b"}}};
  if (data[0] & 0x10) options.reasoning = textgen::model::ReasoningTags{"<think>", "</think>"};
  options.starts_in_reasoning = (data[0] & 0x20) != 0;
  options.id_seed = data[0];
  const size_t step = 1 + data[1] % 16;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  const Result whole = Parse(options, text, text.size() + 1);
  const Result pieces = Parse(options, text, step);
  for (const Result* r : {&whole, &pieces}) {
    Check(r->content == r->parser.content());
    Check(r->reasoning == r->parser.reasoning());
    for (const auto& call : r->parser.tool_calls()) {
      bool declared = false;
      for (const std::string& name : options.tool_names) declared = declared || name == call.name;
      Check(declared);
    }
  }
  Check(whole.content == pieces.content);
  Check(whole.reasoning == pieces.reasoning);
  Check(whole.parser.malformed_calls() == pieces.parser.malformed_calls());
  Check(whole.parser.tool_calls().size() == pieces.parser.tool_calls().size());
  for (size_t i = 0; i < whole.parser.tool_calls().size(); ++i) {
    Check(whole.parser.tool_calls()[i].name == pieces.parser.tool_calls()[i].name);
    Check(whole.parser.tool_calls()[i].arguments == pieces.parser.tool_calls()[i].arguments);
    Check(whole.parser.tool_calls()[i].id == pieces.parser.tool_calls()[i].id);
  }
  // What streamed is what the calls hold.
  for (const Result* r : {&whole, &pieces}) {
    Check(r->streamed_names.size() == r->parser.tool_calls().size());
    for (size_t i = 0; i < r->streamed_names.size() && i < r->parser.tool_calls().size(); ++i) {
      Check(r->streamed_names[i] == r->parser.tool_calls()[i].name);
      Check(r->streamed_arguments[i] == r->parser.tool_calls()[i].arguments);
    }
  }
  return 0;
}
