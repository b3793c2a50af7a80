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

int64_t ModelConfig::layer_state_floats(int layer) const {
  switch (mixer(layer)) {
    case LayerMixer::kAttention:
    case LayerMixer::kNone:
      return 0;
    case LayerMixer::kGatedDeltaNet:
      return delta_net.state_floats();
    case LayerMixer::kShortConv:
      // The last short_conv_kernel - 1 inputs b * x of the convolution.
      return int64_t{short_conv_kernel - 1} * dim;
    case LayerMixer::kMamba2:
      return mamba2.state_floats();
  }
  return 0;
}

int64_t ModelConfig::recurrent_state_floats() const {
  int64_t floats = 0;
  for (int l = 0; l < n_layers; ++l) floats += layer_state_floats(l);
  return floats;
}

const char* ArchitectureName(Architecture architecture) { return SpecOf(architecture).name; }

}  // namespace textgen::model
