#include "server/grpc/embed_reactor.h"

#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "server/core/admission.h"
#include "server/core/embedding.h"
#include "server/grpc/status_mapping.h"
#include "server/observability/request_report.h"

namespace textgen::server {

// The state every piece of the call's work shares. `request` and `response` belong to gRPC
// and are valid until the reactor finishes: they are touched only under `mu_` before `ended_`.
class EmbedReactor::Call : public std::enable_shared_from_this<Call> {
 public:
  Call(EmbedReactor* reactor, const ServiceBackend& backend, const v1::EmbedRequest* request,
       v1::EmbedResponse* response, std::string principal, RequestObserver* observer,
       Logger* logger)
      : reactor_(reactor),
        backend_(backend),
        request_(request),
        response_(response),
        principal_(std::move(principal)),
        report_("grpc", observer, logger) {}

  void Prepare() {
    absl::StatusOr<std::vector<ValidatedRequest>> validated;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      RequestContext context;
      context.arrival_time = report_.arrival();
      context.principal = principal_;
      validated =
          ValidateEmbedRequest(*request_, *backend_.tokenizer, backend_.validation, context);
      if (!validated.ok()) return EndLocked(validated.status(), 0, 0);
      request_id_ = validated->front().request_id;
    }
    // Outside the lock: a Submit that fails calls Done at once.
    std::shared_ptr<EmbeddingBatch> batch =
        EmbeddingBatch::Start(*backend_.scheduler, *std::move(validated),
                              [self = shared_from_this()](absl::StatusOr<EmbeddingResult> result) {
                                self->Done(std::move(result));
                              });
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) {
      batch->Cancel();
    } else {
      batch_ = std::move(batch);
    }
  }

  void Cancel() {
    std::shared_ptr<EmbeddingBatch> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      batch = std::move(batch_);
      EndLocked(absl::CancelledError("the client cancelled"), 0, 0);
    }
    if (batch != nullptr) batch->Cancel();
  }

  void Fail(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ended_) EndLocked(status, 0, 0);
  }

 private:
  void Done(absl::StatusOr<EmbeddingResult> result) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    if (!result.ok()) return EndLocked(result.status(), 0, 0);
    response_->set_request_id(request_id_);
    response_->set_prompt_tokens(static_cast<uint32_t>(result->prompt_tokens));
    response_->set_pooling(backend_.model_info.pooling());
    for (const std::vector<float>& values : result->embeddings) {
      response_->add_embeddings()->mutable_values()->Add(values.begin(), values.end());
    }
    EndLocked(absl::OkStatus(), result->prompt_tokens, result->cached_tokens);
  }

  void EndLocked(const absl::Status& status, int prompt_tokens, int cached_tokens)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ended_ = true;
    RequestRecord& record = report_.record();
    record.request_id = request_id_;
    record.prompt_tokens = prompt_tokens;
    record.cached_tokens = cached_tokens;
    report_.Finish(status);
    reactor_->Finish(ToGrpcStatus(status));  // gRPC calls OnDone later, on its own thread
  }

  EmbedReactor* const reactor_;
  const ServiceBackend& backend_;
  const v1::EmbedRequest* const request_;
  v1::EmbedResponse* const response_;
  const std::string principal_;

  std::mutex mu_;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::string request_id_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<EmbeddingBatch> batch_ ABSL_GUARDED_BY(mu_);
  RequestReport report_ ABSL_GUARDED_BY(mu_);  // from arrival
};

EmbedReactor::EmbedReactor(const ServiceBackend& backend, const v1::EmbedRequest* request,
                           v1::EmbedResponse* response, std::string principal,
                           RequestObserver* observer, Logger* logger)
    : preparation_(backend.preparation),
      call_(std::make_shared<Call>(this, backend, request, response, std::move(principal), observer,
                                   logger)) {}

void EmbedReactor::Start() {
  // Tokenizing costs ~85 ms per MiB: on the preparation pool, not on this gRPC thread.
  AdmitForPreparation(
      preparation_, [call = call_] { call->Prepare(); },
      [call = call_](const absl::Status& refused) { call->Fail(refused); });
}

void EmbedReactor::OnCancel() { call_->Cancel(); }

}  // namespace textgen::server
