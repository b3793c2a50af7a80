#include "model/arch/model_config.h"

#include "model/arch/architectures.h"

namespace textgen::model {

const char* ArchitectureName(Architecture architecture) { return SpecOf(architecture).name; }

}  // namespace textgen::model
