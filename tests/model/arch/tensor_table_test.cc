#include "model/arch/tensor_table.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace textgen::model {
namespace {

constexpr Architecture kAll[] = {
    Architecture::kLlama,     Architecture::kGpt2,     Architecture::kQwen2,  Architecture::kQwen3,
    Architecture::kPhi3,      Architecture::kGemma2,   Architecture::kGemma3, Architecture::kBert,
    Architecture::kNomicBert, Architecture::kQwen3Moe, Architecture::kGptOss};

ModelConfig Config(Architecture arch = Architecture::kLlama) {
  ModelConfig c;
  c.dim = 64, c.hidden_dim = 160, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
  c.head_dim = 16, c.rope_dim = 16, c.vocab_size = 300, c.context_length = 128;
  c.token_type_count = 2;
  if (SpecOf(arch).experts.required) c.experts = 8, c.experts_used = 2, c.expert_hidden_dim = 48;
  return c;
}

// Elements each slot receives from a layer's table.
std::map<WeightSlot, int64_t> SlotElements(const std::vector<TensorEntry>& table) {
  std::map<WeightSlot, int64_t> elements;
  for (const TensorEntry& entry : table) {
    const int64_t per_row = entry.is_vector() ? 1 : entry.cols;
    for (const TensorPart& part : entry.parts) {
      EXPECT_TRUE(elements.emplace(part.slot, part.rows * per_row).second)
          << entry.name << " fills a slot twice";
    }
  }
  return elements;
}

TEST(TensorTableTest, FusedAndUnfusedLayoutsFillTheSameWeights) {
  for (Architecture arch : kAll) {
    const ModelConfig c = Config(arch);
    const ArchitectureSpec& spec = SpecOf(arch);
    SCOPED_TRACE(spec.name);
    const auto fused = LayerTensorTable(spec, c, 1, {.fused_qkv = true, .fused_gate_up = true});
    const auto unfused = LayerTensorTable(spec, c, 1, TensorLayout{});
    std::map<WeightSlot, int64_t> fused_slots = SlotElements(fused);
    std::map<WeightSlot, int64_t> unfused_slots = SlotElements(unfused);
    // GPT-2 has no gate: a fused gate|up tensor is not its layout.
    if (spec.feed_forward == FeedForwardKind::kGelu) fused_slots.erase(WeightSlot::kGate);
    EXPECT_EQ(fused_slots, unfused_slots);
    for (const TensorEntry& entry : fused) {
      int64_t rows = 0;
      for (const TensorPart& part : entry.parts) rows += part.rows;
      EXPECT_EQ(rows, entry.is_vector() ? entry.cols : entry.rows) << entry.name;
      EXPECT_EQ(entry.layer, 1);
      EXPECT_EQ(entry.name.rfind("blk.1.", 0), 0u) << entry.name;
    }
  }
}

TEST(TensorTableTest, NamesAreUniqueAndShapesFollowTheConfig) {
  for (Architecture arch : kAll) {
    const ModelConfig c = Config(arch);
    const ArchitectureSpec& spec = SpecOf(arch);
    SCOPED_TRACE(spec.name);
    std::set<std::string> names;
    for (const TensorEntry& entry : GlobalTensorTable(spec, c)) {
      EXPECT_TRUE(names.insert(entry.name).second) << entry.name;
      EXPECT_EQ(entry.layer, -1);
    }
    for (int l = 0; l < c.n_layers; ++l) {
      for (const TensorEntry& entry : LayerTensorTable(spec, c, l, FileLayoutOf(spec))) {
        EXPECT_TRUE(names.insert(entry.name).second) << entry.name;
      }
    }
    const auto layer = LayerTensorTable(spec, c, 0, TensorLayout{});
    for (const TensorEntry& entry : layer) {
      if (entry.parts.front().slot == WeightSlot::kAttnOutput) {
        EXPECT_EQ(entry.rows, c.dim);
        EXPECT_EQ(entry.cols, int64_t{c.n_heads} * c.head_dim);
      }
      if (entry.parts.front().slot == WeightSlot::kK) {
        EXPECT_EQ(entry.rows, c.kv_dim());
      }
      if (entry.parts.front().slot == WeightSlot::kDown) {
        EXPECT_EQ(entry.cols, c.hidden_dim);
      }
      // Stacked experts: one [rows, cols] matrix per expert, the router one row per expert.
      if (entry.parts.front().slot == WeightSlot::kDownExperts) {
        EXPECT_EQ(entry.experts, c.experts);
        EXPECT_EQ(entry.total_rows(), int64_t{c.experts} * c.dim);
        EXPECT_EQ(entry.cols, c.expert_hidden_dim);
      }
      if (entry.parts.front().slot == WeightSlot::kRouter) {
        EXPECT_EQ(entry.rows, c.experts);
        EXPECT_EQ(entry.experts, 1);
      }
    }
    // The tensors before the layers are exactly the embeddings (and an encoder's norm of them).
    const std::vector<TensorEntry> global = GlobalTensorTable(spec, c);
    for (int i = 0; i < static_cast<int>(global.size()); ++i) {
      const bool embedding =
          global[i].name.starts_with("token_") || global[i].name.starts_with("position_");
      EXPECT_EQ(i < LeadingTensorCount(spec), embedding) << global[i].name;
    }
  }
}

TEST(TensorTableTest, RequiredTensorsFollowTheArchitecture) {
  const ModelConfig c = Config();
  const auto required = [&](Architecture arch, WeightSlot slot) {
    for (const TensorEntry& entry : LayerTensorTable(SpecOf(arch), c, 0, TensorLayout{})) {
      if (entry.parts.front().slot == slot) return entry.required;
    }
    return false;
  };
  EXPECT_TRUE(required(Architecture::kQwen2, WeightSlot::kQBias));
  EXPECT_FALSE(required(Architecture::kLlama, WeightSlot::kQBias));
  EXPECT_TRUE(required(Architecture::kQwen3, WeightSlot::kQNorm));
  EXPECT_FALSE(required(Architecture::kLlama, WeightSlot::kQNorm));
  EXPECT_TRUE(required(Architecture::kGemma2, WeightSlot::kFfnPostNorm));
  EXPECT_TRUE(required(Architecture::kGpt2, WeightSlot::kAttnNormBias));
  EXPECT_FALSE(required(Architecture::kGpt2, WeightSlot::kGate));
}

// With experts the dense feed-forward's tensors are replaced, in llama (Mixtral) as in qwen3moe.
TEST(TensorTableTest, ExpertsReplaceTheDenseFeedForward) {
  for (Architecture arch : {Architecture::kLlama, Architecture::kQwen3Moe}) {
    ModelConfig c = Config(arch);
    c.experts = 4, c.experts_used = 2, c.expert_hidden_dim = 32;
    std::set<WeightSlot> slots;
    for (const TensorEntry& entry : LayerTensorTable(SpecOf(arch), c, 0, TensorLayout{})) {
      slots.insert(entry.parts.front().slot);
    }
    for (WeightSlot slot : {WeightSlot::kRouter, WeightSlot::kGateExperts, WeightSlot::kUpExperts,
                            WeightSlot::kDownExperts}) {
      EXPECT_TRUE(slots.contains(slot)) << ArchitectureName(arch);
    }
    for (WeightSlot slot : {WeightSlot::kGate, WeightSlot::kUp, WeightSlot::kDown,
                            WeightSlot::kUpBias, WeightSlot::kDownBias}) {
      EXPECT_FALSE(slots.contains(slot)) << ArchitectureName(arch);
    }
  }
}

// gpt-oss's extras: a sink per head, biases on the router and every expert matrix (a row per
// expert), and the feed-forward's norm under the name llama.cpp's converter gives it.
TEST(TensorTableTest, GptOssHasSinksExpertBiasesAndItsNormName) {
  const ModelConfig c = Config(Architecture::kGptOss);
  std::map<std::string, const TensorEntry*> by_name;
  const std::vector<TensorEntry> table =
      LayerTensorTable(SpecOf(Architecture::kGptOss), c, 1, TensorLayout{});
  for (const TensorEntry& entry : table) by_name[entry.name] = &entry;
  ASSERT_TRUE(by_name.contains("blk.1.attn_sinks.weight"));
  EXPECT_EQ(by_name["blk.1.attn_sinks.weight"]->cols, c.n_heads);
  EXPECT_TRUE(by_name["blk.1.attn_sinks.weight"]->required);
  ASSERT_TRUE(by_name.contains("blk.1.post_attention_norm.weight"));
  EXPECT_EQ(by_name["blk.1.post_attention_norm.weight"]->parts.front().slot, WeightSlot::kFfnNorm);
  EXPECT_FALSE(by_name.contains("blk.1.ffn_norm.weight"));
  EXPECT_TRUE(by_name["blk.1.attn_output.bias"]->required);
  ASSERT_TRUE(by_name.contains("blk.1.ffn_down_exps.bias"));
  const TensorEntry& down_bias = *by_name["blk.1.ffn_down_exps.bias"];
  EXPECT_EQ(down_bias.rows, c.experts);
  EXPECT_EQ(down_bias.cols, c.dim);
  EXPECT_EQ(by_name["blk.1.ffn_gate_exps.bias"]->cols, c.expert_hidden_dim);
  EXPECT_EQ(by_name["blk.1.ffn_gate_inp.bias"]->cols, c.experts);
}

}  // namespace
}  // namespace textgen::model
