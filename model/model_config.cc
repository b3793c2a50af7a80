#include "model/model_config.h"

namespace textgen::model {

const char* ArchitectureName(Architecture architecture) {
  switch (architecture) {
    case Architecture::kLlama:
      return "llama";
    case Architecture::kGpt2:
      return "gpt2";
  }
  return "unknown";
}

}  // namespace textgen::model
