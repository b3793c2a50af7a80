#include "server/core/harmony_framing.h"

#include "absl/strings/str_cat.h"
#include "model/chat/tool_call_format.h"
#include "model/constraint/token_trie.h"

namespace textgen::server {

namespace {

using Tags = model::HarmonyTags;

std::string HarmonyTag(std::string_view tag) { return model::TokenTrie::ControlTokenBytes(tag); }

// The analysis messages that may come first; the caller sets what follows them.
model::JsonFraming AnalysesFirst() {
  model::JsonFraming framing;
  framing.section_open =
      absl::StrCat(HarmonyTag(Tags::kChannel), "analysis", HarmonyTag(Tags::kMessage));
  framing.section_close =
      absl::StrCat(HarmonyTag(Tags::kEnd), HarmonyTag(Tags::kStart), "assistant");
  framing.max_sections = kMaxHarmonyAnalyses;
  return framing;
}

}  // namespace

model::JsonFraming HarmonyFinalFraming() {
  model::JsonFraming framing = AnalysesFirst();
  framing.before = absl::StrCat(HarmonyTag(Tags::kChannel), "final", HarmonyTag(Tags::kMessage));
  return framing;
}

model::JsonFraming HarmonyCallFraming(const std::vector<std::string>& tools) {
  model::JsonFraming framing = AnalysesFirst();
  framing.before = absl::StrCat(HarmonyTag(Tags::kChannel), "commentary to=functions.");
  for (const std::string& name : tools) {
    framing.before_branch.push_back(
        absl::StrCat(name, " ", HarmonyTag(Tags::kConstrain), "json", HarmonyTag(Tags::kMessage)));
  }
  return framing;
}

}  // namespace textgen::server
