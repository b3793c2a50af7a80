#include "server/grpc/service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"
#include "server/core/tokenize.h"
#include "server/core/validation.h"
#include "server/grpc/embed_reactor.h"
#include "server/grpc/status_mapping.h"
#include "server/observability/request_report.h"

namespace textgen::server {
namespace {

grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context,
                                      const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// A write reactor that only finishes with an error (Generate before the model is loaded).
class FailedGenerate final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  explicit FailedGenerate(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

// Every value of the session routing metadata the client sent.
std::vector<absl::string_view> SessionRoutingMetadata(const grpc::CallbackServerContext& context) {
  std::vector<absl::string_view> values;
  const auto [first, last] = context.client_metadata().equal_range(
      grpc::string_ref(kSessionRoutingHeader.data(), kSessionRoutingHeader.size()));
  for (auto it = first; it != last; ++it) values.emplace_back(it->second.data(), it->second.size());
  return values;
}

}  // namespace

TextGenerationService::TextGenerationService(const ServiceOptions& options) : options_(options) {}

void TextGenerationService::SetBackend(const ServiceBackend* backend) {
  backend_.store(backend, std::memory_order_release);
}

absl::StatusOr<std::string> TextGenerationService::Authenticate(
    grpc::CallbackServerContext* context) const {
  auth::Credentials credentials;
  const auto& metadata = context->client_metadata();
  if (const auto it = metadata.find("authorization"); it != metadata.end()) {
    credentials.authorization = absl::string_view(it->second.data(), it->second.size());
  }
  // The certificate's subject only where the policy reads it: the auth context costs a lookup.
  std::shared_ptr<const grpc::AuthContext> auth;
  std::vector<grpc::string_ref> subject;
  if (options_.auth.reads_client_certificate()) {
    auth = context->auth_context();
    if (auth != nullptr) subject = auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME);
    if (!subject.empty()) {
      credentials.client_certificate_subject =
          absl::string_view(subject.front().data(), subject.front().size());
    }
  }
  return options_.auth.Principal(credentials);
}

void TextGenerationService::ReportRefusal(const absl::Status& status) const {
  RequestReport("grpc", options_.observer, options_.logger).Finish(status);
}

absl::StatusOr<const ServiceBackend*> TextGenerationService::AuthorizedBackend(
    grpc::CallbackServerContext* context, std::string* principal) const {
  absl::StatusOr<std::string> caller = Authenticate(context);
  const ServiceBackend* ready = backend();
  const absl::Status refused = !caller.ok()       ? caller.status()
                               : ready == nullptr ? ModelLoadingError()
                                                  : absl::OkStatus();
  if (!refused.ok()) {
    ReportRefusal(refused);
    return refused;
  }
  if (principal != nullptr) *principal = *std::move(caller);
  return ready;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* TextGenerationService::OpenStream(
    grpc::CallbackServerContext* context, const std::string& session_id, GenerateReactor** reactor,
    std::string* principal) {
  *reactor = nullptr;
  absl::StatusOr<const ServiceBackend*> backend = AuthorizedBackend(context, principal);
  if (!backend.ok()) return new FailedGenerate(backend.status());  // reported
  if (absl::Status status = CheckSessionRoutingHeader(SessionRoutingMetadata(*context), session_id);
      !status.ok()) {
    ReportRefusal(status);
    return new FailedGenerate(status);
  }
  const ServiceBackend* ready = *backend;
  GenerateDeps deps;
  deps.scheduler = ready->scheduler;
  deps.tokenizer = ready->tokenizer;
  deps.validation = &ready->validation;
  deps.chat_templates = &ready->chat_templates;
  deps.preparation = ready->preparation;
  deps.observer = options_.observer;
  deps.logger = options_.logger;
  deps.max_buffered_events = options_.max_buffered_events;
  *reactor = new GenerateReactor(deps, context);
  return *reactor;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* TextGenerationService::Generate(
    grpc::CallbackServerContext* context, const v1::GenerateRequest* request) {
  GenerateReactor* reactor;
  std::string principal;
  auto* stream = OpenStream(context, request->session_id(), &reactor, &principal);
  if (reactor != nullptr) reactor->Start(*request, principal);
  return stream;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* TextGenerationService::Chat(
    grpc::CallbackServerContext* context, const v1::ChatRequest* request) {
  GenerateReactor* reactor;
  std::string principal;
  auto* stream = OpenStream(context, request->session_id(), &reactor, &principal);
  if (reactor != nullptr) reactor->StartChat(*request, principal);
  return stream;
}

grpc::ServerUnaryReactor* TextGenerationService::Tokenize(grpc::CallbackServerContext* context,
                                                          const v1::TokenizeRequest* request,
                                                          v1::TokenizeResponse* response) {
  absl::StatusOr<const ServiceBackend*> backend = AuthorizedBackend(context, nullptr);
  if (!backend.ok()) return FinishUnary(context, backend.status());
  const ServiceBackend& ready = **backend;
  return FinishUnary(
      context, server::Tokenize(*ready.tokenizer, ready.validation.add_bos, *request, *response));
}

grpc::ServerUnaryReactor* TextGenerationService::Detokenize(grpc::CallbackServerContext* context,
                                                            const v1::DetokenizeRequest* request,
                                                            v1::DetokenizeResponse* response) {
  absl::StatusOr<const ServiceBackend*> backend = AuthorizedBackend(context, nullptr);
  if (!backend.ok()) return FinishUnary(context, backend.status());
  return FinishUnary(context, server::Detokenize(*(*backend)->tokenizer, *request, *response));
}

grpc::ServerUnaryReactor* TextGenerationService::GetModelInfo(
    grpc::CallbackServerContext* context, const v1::GetModelInfoRequest* request,
    v1::ModelInfo* response) {
  absl::StatusOr<const ServiceBackend*> backend = AuthorizedBackend(context, nullptr);
  if (!backend.ok()) return FinishUnary(context, backend.status());
  const ServiceBackend* ready = *backend;
  *response = ready->model_info;
  return FinishUnary(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TextGenerationService::DeleteSession(
    grpc::CallbackServerContext* context, const v1::DeleteSessionRequest* request,
    v1::DeleteSessionResponse* response) {
  std::string principal;
  absl::StatusOr<const ServiceBackend*> backend = AuthorizedBackend(context, &principal);
  if (!backend.ok()) return FinishUnary(context, backend.status());
  const ServiceBackend* ready = *backend;
  if (absl::Status status = ValidateSessionId(request->session_id(), "session_id",
                                              ready->validation.max_session_id_bytes);
      !status.ok()) {
    return FinishUnary(context, status);
  }
  if (absl::Status status =
          CheckSessionRoutingHeader(SessionRoutingMetadata(*context), request->session_id());
      !status.ok()) {
    return FinishUnary(context, status);
  }
  // Only the caller's own session: another principal's with the same id is NOT_FOUND.
  // Answered from the engine thread when it gets there: this callback thread never waits.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  ready->scheduler->DeleteSession(SessionKey(principal, request->session_id()),
                                  [reactor, response](absl::StatusOr<int> freed) {
                                    if (freed.ok())
                                      response->set_freed_tokens(static_cast<uint32_t>(*freed));
                                    reactor->Finish(ToGrpcStatus(freed.status()));
                                  });
  return reactor;
}

grpc::ServerUnaryReactor* TextGenerationService::Embed(grpc::CallbackServerContext* context,
                                                       const v1::EmbedRequest* request,
                                                       v1::EmbedResponse* response) {
  std::string principal;
  absl::StatusOr<const ServiceBackend*> backend = AuthorizedBackend(context, &principal);
  if (!backend.ok()) return FinishUnary(context, backend.status());
  auto* reactor = new EmbedReactor(**backend, request, response, std::move(principal),
                                   options_.observer, options_.logger);
  reactor->Start();
  return reactor;
}

}  // namespace textgen::server
