#include "server/model_info.h"

#include <filesystem>
#include <string>

#include "absl/strings/ascii.h"
#include "model/chat/tool_call_format.h"
#include "model/tokenizer/utf8.h"
#include "server/core/model_rules.h"

namespace textgen::server {

uint64_t CountParameters(const model::ModelWeights& weights) {
  uint64_t total = 0;
  const auto add = [&](const model::TensorView& t) {
    if (!t.empty()) total += static_cast<uint64_t>(t.elements());
  };
  add(weights.token_embedding);
  add(weights.position_embedding);
  for (const model::LayerWeights& l : weights.layers) {
    for (const model::TensorView* t :
         {&l.attn_norm, &l.attn_norm_bias, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.q_norm,
          &l.k_norm, &l.wo, &l.bo, &l.ffn_norm, &l.ffn_norm_bias, &l.w_gate, &l.w_up, &l.b_up,
          &l.w_down, &l.b_down}) {
      add(*t);
    }
  }
  add(weights.output_norm);
  add(weights.output_norm_bias);
  add(weights.rope_freqs);
  add(weights.rope_factors_long);
  add(weights.rope_factors_short);
  // Tied: the output view points at the embedding's data.
  if (weights.output.data != weights.token_embedding.data) add(weights.output);
  return total;
}

v1::ModelInfo DescribeModel(const model::LoadedModel& model, const model::Tokenizer& tokenizer,
                            const ChatTemplates& chat_templates, const ModelInfoOptions& options) {
  const PublishedLimits& limits = options.limits;
  const model::ModelConfig& config = model.config;
  v1::ModelInfo info;
  info.set_name(model::SanitizeUtf8(
      config.name.empty() ? std::filesystem::path(model.path).stem().string() : config.name));
  info.set_architecture(model::ArchitectureName(config.architecture));
  info.set_parameters(CountParameters(model.weights));
  info.set_vocab_size(tokenizer.vocab_size());
  info.set_context_length(config.context_length);
  info.set_file_dtype(absl::AsciiStrToLower(model::DTypeName(model.file_dtype)));  // "f32", "q8_0"
  info.set_compute_dtype(options.bf16 ? "bf16" : "f32");
  v1::SpecialTokens* special = info.mutable_special_tokens();
  special->set_bos_id(tokenizer.bos_id());
  special->set_eos_id(tokenizer.eos_id());
  if (tokenizer.bos_id() >= 0)
    special->set_bos(model::SanitizeUtf8(tokenizer.TokenText(tokenizer.bos_id())));
  if (tokenizer.eos_id() >= 0)
    special->set_eos(model::SanitizeUtf8(tokenizer.TokenText(tokenizer.eos_id())));
  for (int id : tokenizer.end_of_generation_ids()) {
    special->add_end_of_generation_ids(id);
    special->add_end_of_generation(model::SanitizeUtf8(tokenizer.TokenText(id)));
  }
  info.set_n_layers(config.n_layers);
  info.set_dim(config.dim);
  info.set_n_heads(config.n_heads);
  info.set_n_kv_heads(config.n_kv_heads);
  info.set_max_new_tokens_limit(limits.max_new_tokens_limit);
  info.set_max_batch_size(limits.max_batch_size);
  info.set_max_request_bytes(limits.max_request_bytes);
  if (options.expose_model_path) info.set_model_path(model::SanitizeUtf8(model.path));
  for (const std::string& name : chat_templates.names()) info.add_chat_templates(name);
  info.set_chat_template_source(chat_templates.default_source());
  const model::ReplyFormat& reply = chat_templates.reply_format("");
  info.set_tool_call_format(model::ToolCallFormatName(reply.tool_calls));
  info.set_reasoning_tag(reply.reasoning ? reply.reasoning->open : "");
  info.set_pooling(model::PoolingName(EmbeddingPooling(config)));
  return info;
}

}  // namespace textgen::server
