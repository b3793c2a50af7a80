#include "model/arch/model_config.h"

#include "model/arch/architectures.h"

namespace textgen::model {

const char* PoolingName(Pooling pooling) {
  switch (pooling) {
    case Pooling::kNone:
      return "none";
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
  }
  return "none";
}

int ModelConfig::attention_layers() const {
  if (layer_mixers.empty()) return n_layers;
  int n = 0;
  for (LayerMixer m : layer_mixers) n += m == LayerMixer::kAttention ? 1 : 0;
  return n;
}

int64_t ModelConfig::recurrent_state_floats() const {
  int64_t floats = 0;
  for (LayerMixer m : layer_mixers) {
    if (m == LayerMixer::kGatedDeltaNet) floats += delta_net.state_floats();
  }
  return floats;
}

const char* ArchitectureName(Architecture architecture) { return SpecOf(architecture).name; }

}  // namespace textgen::model
