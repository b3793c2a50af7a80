#include "server/core/harmony_framing.h"

#include "absl/strings/str_cat.h"
#include "model/chat/tool_call_format.h"
#include "model/constraint/token_trie.h"

namespace textgen::server {

using Tags = model::HarmonyTags;

std::string HarmonyTag(std::string_view tag) { return model::TokenTrie::ControlTokenBytes(tag); }

model::JsonFraming HarmonyFraming() {
  model::JsonFraming framing;
  framing.section_open =
      absl::StrCat(HarmonyTag(Tags::kChannel), "analysis", HarmonyTag(Tags::kMessage));
  framing.section_close =
      absl::StrCat(HarmonyTag(Tags::kEnd), HarmonyTag(Tags::kStart), "assistant");
  framing.max_sections = kMaxHarmonyAnalyses;
  return framing;
}

std::string HarmonyFinalHeader() {
  return absl::StrCat(HarmonyTag(Tags::kChannel), "final", HarmonyTag(Tags::kMessage));
}

}  // namespace textgen::server
