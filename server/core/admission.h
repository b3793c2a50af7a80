#pragma once

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "server/core/preparation_pool.h"

namespace textgen::server {

// The one way a request from any front end reaches the preparation pool: `prepare` (parse,
// render, tokenize, submit) runs on a pool thread, or at once on this thread when there is no
// pool. When the pool refuses it (its queue is full: RESOURCE_EXHAUSTED naming --max-queue),
// `refused` runs on this thread with that status instead, so the request still gets an answer.
void AdmitForPreparation(PreparationPool* pool, absl::AnyInvocable<void() &&> prepare,
                         absl::AnyInvocable<void(const absl::Status&) &&> refused);

}  // namespace textgen::server
