#pragma once

#include <memory>
#include <string>

#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/core/service_backend.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

// One Embed RPC: validation and tokenizing on the preparation pool (never on a gRPC thread),
// the inputs in the scheduler as one EmbeddingBatch, the response written when the last input
// is pooled. A client that cancels drops the inputs still queued or running. Reports the
// outcome (metrics, log line) once. Deletes itself when gRPC is done with it; the work still
// pending then (a queued preparation, the batch's callback) holds the call's state, not the
// reactor, and finds it ended.
class EmbedReactor final : public grpc::ServerUnaryReactor {
 public:
  EmbedReactor(const ServiceBackend& backend, const v1::EmbedRequest* request,
               v1::EmbedResponse* response, std::string principal, RequestObserver* observer,
               Logger* logger);
  // Starts the work; call once, right after construction.
  void Start();

  void OnCancel() override;
  void OnDone() override { delete this; }

 private:
  class Call;
  PreparationPool* const preparation_;  // may be null: prepare on the calling thread
  std::shared_ptr<Call> call_;
};

}  // namespace textgen::server
