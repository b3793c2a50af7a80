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

const char* ArchitectureName(Architecture architecture) { return SpecOf(architecture).name; }

}  // namespace textgen::model
