#pragma once

#include <atomic>
#include <cstddef>

#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "model/tokenizer/tokenizer.h"
#include "server/auth/auth_policy.h"
#include "server/core/chat_validation.h"
#include "server/core/service_backend.h"
#include "server/core/validation.h"
#include "server/grpc/generate_reactor.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "server/scheduler/scheduler.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::server {

struct ServiceOptions {
  // Who a caller is (API keys, client certificates, or nobody: the empty principal).
  auth::AuthPolicy auth = {};
  RequestObserver* observer = nullptr;  // Generate outcomes (metrics); may be null
  Logger* logger = nullptr;             // one line per Generate request; may be null
  // Per-request outbox bound (see GenerateDeps::max_buffered_events).
  size_t max_buffered_events = kDefaultMaxBufferedEvents;
};

// The textgen.v1.TextGeneration service on gRPC's callback API. Handlers only validate,
// tokenize, enqueue and write; they never block and never run the model. Until SetBackend()
// is called (the model is loading) every RPC fails with UNAVAILABLE. Thread-safe.
class TextGenerationService final : public v1::TextGeneration::CallbackService {
 public:
  explicit TextGenerationService(const ServiceOptions& options);

  // Makes the service ready. `backend` must outlive the service; call at most once.
  void SetBackend(const ServiceBackend* backend);

  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const v1::GenerateRequest* request) override;
  grpc::ServerWriteReactor<v1::GenerateResponse>* Chat(grpc::CallbackServerContext* context,
                                                       const v1::ChatRequest* request) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* context,
                                       const v1::DetokenizeRequest* request,
                                       v1::DetokenizeResponse* response) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context,
                                         const v1::GetModelInfoRequest* request,
                                         v1::ModelInfo* response) override;
  grpc::ServerUnaryReactor* DeleteSession(grpc::CallbackServerContext* context,
                                          const v1::DeleteSessionRequest* request,
                                          v1::DeleteSessionResponse* response) override;
  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* context,
                                  const v1::EmbedRequest* request,
                                  v1::EmbedResponse* response) override;

 private:
  const ServiceBackend* backend() const { return backend_.load(std::memory_order_acquire); }
  // The preamble of Generate and Chat: authenticates, checks the session routing header and
  // makes a reactor. On refusal returns a reactor that has already finished with the status
  // (the observer told) and leaves `reactor` null.
  grpc::ServerWriteReactor<v1::GenerateResponse>* OpenStream(grpc::CallbackServerContext* context,
                                                             const std::string& session_id,
                                                             GenerateReactor** reactor,
                                                             std::string* principal);
  // The caller's principal by the auth policy, from its "authorization" metadata and client
  // certificate, or UNAUTHENTICATED.
  absl::StatusOr<std::string> Authenticate(grpc::CallbackServerContext* context) const;
  // The preamble of every method: the backend, for an authenticated caller (whose principal
  // goes to `principal` when not null), or UNAUTHENTICATED / UNAVAILABLE (loading), reported.
  absl::StatusOr<const ServiceBackend*> AuthorizedBackend(grpc::CallbackServerContext* context,
                                                          std::string* principal) const;
  // Reports a call refused before it started (metrics and the log line).
  void ReportRefusal(const absl::Status& status) const;

  const ServiceOptions options_;
  std::atomic<const ServiceBackend*> backend_{nullptr};
};

}  // namespace textgen::server
