#include "server/core/admission.h"

#include <memory>
#include <utility>

namespace textgen::server {

void AdmitForPreparation(PreparationPool* pool, absl::AnyInvocable<void() &&> prepare,
                         absl::AnyInvocable<void(const absl::Status&) &&> refused) {
  if (pool == nullptr) return std::move(prepare)();
  if (absl::Status posted = pool->Post(std::move(prepare)); !posted.ok()) {
    std::move(refused)(posted);
  }
}

}  // namespace textgen::server
