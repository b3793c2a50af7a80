#pragma once

// A scripted in-process TextGeneration server for the CLI tests (sync gRPC API).
//
// Generate (and Chat, see there) streams `max_new_tokens` (default 4) tokens with ids 100, 101, ...
// and texts "tok0 ", "tok1 ", ..., `tokens_per_message` per message with `token_delay` between
// messages, then a last message with `finished` (LENGTH). A prompt text containing "FAIL" is
// rejected with INVALID_ARGUMENT. Every request is recorded. Sessions remember their last prompt +
// output length, which is reported back as cached_tokens.
// Generate, Chat and DeleteSession record the x-session-id metadata they were sent (the load
// balancer's routing key); `refused_calls` makes that many Generate/Chat calls fail first with
// `refusal` (UNAVAILABLE, as a draining replica answers, by default).
// GetModelInfo publishes max_request_bytes = kFakeMaxRequestBytes, the receive limit the
// server really has.
// Thread contract: thread-safe (gRPC calls handlers concurrently); accessors lock.

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client::testing {

inline constexpr int kFakeMaxRequestBytes = 64 << 10;

class FakeTextGeneration final : public textgen::v1::TextGeneration::Service {
 public:
  int tokens_per_message = 1;
  std::atomic<int> model_info_calls{0};
  std::chrono::microseconds token_delay{200};
  std::atomic<int> refused_calls{0};
  grpc::StatusCode refusal = grpc::StatusCode::UNAVAILABLE;

  grpc::Status Generate(grpc::ServerContext* context, const textgen::v1::GenerateRequest* request,
                        grpc::ServerWriter<textgen::v1::GenerateResponse>* writer) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(*request);
      RecordRoutingKey(*context);
    }
    if (refused_calls.fetch_sub(1) > 0) return grpc::Status(refusal, "draining (fake)");
    return Stream(context, request, writer);
  }

  // Chat renders the messages as "ROLE: CONTENT\n" lines (a stand-in template) and then
  // streams as Generate does; a message with template_name "missing" is FAILED_PRECONDITION.
  // With tools (and tool_choice not none) and a last message that is not a tool result, the
  // reply is reasoning "plan", then a call of the first tool ({"city": "Oslo"}, id call_1).
  grpc::Status Chat(grpc::ServerContext* context, const textgen::v1::ChatRequest* request,
                    grpc::ServerWriter<textgen::v1::GenerateResponse>* writer) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      chat_requests_.push_back(*request);
      RecordRoutingKey(*context);
    }
    if (refused_calls.fetch_sub(1) > 0) return grpc::Status(refusal, "draining (fake)");
    if (request->template_name() == "missing") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "the model has no chat template");
    }
    const bool answered = !request->messages().empty() &&
                          request->messages(request->messages_size() - 1).role() == "tool";
    if (!request->tools_json().empty() &&
        request->tool_choice().mode() != textgen::v1::ToolChoice::TOOL_CHOICE_NONE && !answered) {
      const std::string tools = request->tools_json();
      const size_t at = tools.find("\"name\":\"");
      const std::string name =
          at == std::string::npos ? "tool" : tools.substr(at + 8, tools.find('"', at + 8) - at - 8);
      textgen::v1::GenerateResponse thinking;
      thinking.set_reasoning_text("plan");
      writer->Write(thinking);
      textgen::v1::GenerateResponse call;
      textgen::v1::ToolCallDelta* delta = call.add_tool_calls();
      delta->set_index(0);
      delta->set_id("call_1");
      delta->set_name(name);
      delta->set_arguments("{\"city\": \"Oslo\"}");
      textgen::v1::Finished* finished = call.mutable_finished();
      finished->set_reason(textgen::v1::FINISH_REASON_TOOL_CALLS);
      textgen::v1::ToolCall* whole = finished->add_tool_calls();
      whole->set_id("call_1");
      whole->set_name(name);
      whole->set_arguments_json("{\"city\": \"Oslo\"}");
      writer->Write(call);
      return grpc::Status::OK;
    }
    textgen::v1::GenerateRequest generate;
    for (const textgen::v1::ChatMessage& m : request->messages()) {
      absl::StrAppend(generate.mutable_text(), m.role(), ": ", m.content(), "\n");
    }
    *generate.mutable_sampling() = request->sampling();
    *generate.mutable_stopping() = request->stopping();
    *generate.mutable_output() = request->output();
    generate.set_session_id(request->session_id());
    return Stream(context, &generate, writer);
  }

  grpc::Status Stream(grpc::ServerContext* context, const textgen::v1::GenerateRequest* request,
                      grpc::ServerWriter<textgen::v1::GenerateResponse>* writer) {
    uint32_t prompt_tokens =
        request->has_tokens() ? request->tokens().ids_size() : CountWords(request->text());
    uint32_t cached = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!request->session_id().empty()) {
        auto it = sessions_.find(request->session_id());
        if (it != sessions_.end()) cached = std::min(it->second, prompt_tokens);
      }
    }
    if (request->text().find("FAIL") != std::string::npos) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "prompt asked to fail");
    }
    if (request->output().echo()) {
      textgen::v1::GenerateResponse echo;
      echo.set_text(request->text());
      writer->Write(echo);
    }
    uint32_t n = request->stopping().max_new_tokens();
    if (n == 0) n = 4;
    uint32_t sent = 0;
    while (sent < n) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      std::this_thread::sleep_for(token_delay);
      textgen::v1::GenerateResponse response;
      response.set_request_id("fake-1");
      for (int k = 0; k < tokens_per_message && sent < n; ++k, ++sent) {
        response.add_token_ids(100 + static_cast<int32_t>(sent));
        response.mutable_text()->append(absl::StrCat("tok", sent, " "));
      }
      if (!writer->Write(response)) return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
    }
    textgen::v1::GenerateResponse last;
    last.set_request_id("fake-1");
    textgen::v1::Finished* finished = last.mutable_finished();
    finished->set_reason(textgen::v1::FINISH_REASON_LENGTH);
    finished->mutable_usage()->set_prompt_tokens(prompt_tokens);
    finished->mutable_usage()->set_cached_tokens(cached);
    finished->mutable_usage()->set_completion_tokens(n);
    finished->mutable_timings()->set_total_seconds(0.5);
    finished->set_seed(request->sampling().has_seed() ? request->sampling().seed() : 7);
    writer->Write(last);
    if (!request->session_id().empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_[request->session_id()] = prompt_tokens + n;
    }
    return grpc::Status::OK;
  }

  grpc::Status Tokenize(grpc::ServerContext*, const textgen::v1::TokenizeRequest* request,
                        textgen::v1::TokenizeResponse* response) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tokenize_requests_.push_back(*request);
    }
    if (!request->has_add_bos() || request->add_bos()) {
      response->add_ids(1);
      response->add_tokens("<s>");
    }
    int id = 10;
    for (absl::string_view word : absl::StrSplit(request->text(), ' ', absl::SkipEmpty())) {
      response->add_ids(id++);
      response->add_tokens(std::string(word));
    }
    return grpc::Status::OK;
  }

  // One embedding per input: [bytes of its text, its index]; one prompt token per byte.
  grpc::Status Embed(grpc::ServerContext*, const textgen::v1::EmbedRequest* request,
                     textgen::v1::EmbedResponse* response) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      embed_requests_.push_back(*request);
    }
    uint32_t tokens = 0;
    for (int i = 0; i < request->inputs_size(); ++i) {
      const std::string& text = request->inputs(i).text();
      auto* values = response->add_embeddings()->mutable_values();
      values->Add(static_cast<float>(text.size()));
      values->Add(static_cast<float>(i) + 0.5f);
      tokens += static_cast<uint32_t>(text.size());
    }
    response->set_prompt_tokens(tokens);
    response->set_pooling("last");
    return grpc::Status::OK;
  }

  grpc::Status Detokenize(grpc::ServerContext*, const textgen::v1::DetokenizeRequest* request,
                          textgen::v1::DetokenizeResponse* response) override {
    response->set_text(absl::StrJoin(request->ids(), "|"));
    return grpc::Status::OK;
  }

  grpc::Status GetModelInfo(grpc::ServerContext*, const textgen::v1::GetModelInfoRequest*,
                            textgen::v1::ModelInfo* info) override {
    info->set_name("fake-model");
    info->set_architecture("llama");
    info->set_parameters(15000000);
    info->set_vocab_size(500);
    info->set_context_length(256);
    info->set_file_dtype("f32");
    info->set_compute_dtype("f32");
    info->mutable_special_tokens()->set_bos_id(1);
    info->mutable_special_tokens()->set_eos_id(2);
    info->mutable_special_tokens()->set_bos("<s>");
    info->mutable_special_tokens()->set_eos("</s>");
    info->set_n_layers(6);
    info->set_dim(288);
    info->set_n_heads(6);
    info->set_n_kv_heads(6);
    info->set_max_new_tokens_limit(128);
    info->set_max_batch_size(8);
    info->set_max_request_bytes(kFakeMaxRequestBytes);
    info->add_chat_templates("");
    info->add_chat_templates("tool_use");
    info->set_chat_template_source("gguf");
    ++model_info_calls;
    return grpc::Status::OK;
  }

  grpc::Status DeleteSession(grpc::ServerContext* context,
                             const textgen::v1::DeleteSessionRequest* request,
                             textgen::v1::DeleteSessionResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    deleted_.push_back(request->session_id());
    RecordRoutingKey(*context);
    auto it = sessions_.find(request->session_id());
    if (it == sessions_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no session ", request->session_id()));
    }
    response->set_freed_tokens(it->second);
    sessions_.erase(it);
    return grpc::Status::OK;
  }

  std::vector<textgen::v1::GenerateRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<textgen::v1::ChatRequest> chat_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return chat_requests_;
  }
  std::vector<textgen::v1::EmbedRequest> embed_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return embed_requests_;
  }
  std::vector<textgen::v1::TokenizeRequest> tokenize_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokenize_requests_;
  }
  std::vector<std::string> deleted() {
    std::lock_guard<std::mutex> lock(mu_);
    return deleted_;
  }
  // One entry per Generate, Chat and DeleteSession call, in order: the x-session-id values
  // joined with ",", "-" when there was none.
  std::vector<std::string> routing_keys() {
    std::lock_guard<std::mutex> lock(mu_);
    return routing_keys_;
  }
  void AddSession(const std::string& id, uint32_t tokens) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_[id] = tokens;
  }

 private:
  static uint32_t CountWords(const std::string& text) {
    return static_cast<uint32_t>(
        std::vector<absl::string_view>(absl::StrSplit(text, ' ', absl::SkipEmpty())).size());
  }

  void RecordRoutingKey(const grpc::ServerContext& context) {
    std::vector<std::string> values;
    const auto [first, last] = context.client_metadata().equal_range("x-session-id");
    for (auto it = first; it != last; ++it)
      values.emplace_back(it->second.data(), it->second.size());
    routing_keys_.push_back(values.empty() ? "-" : absl::StrJoin(values, ","));
  }

  std::mutex mu_;
  std::vector<std::string> routing_keys_;
  std::vector<textgen::v1::GenerateRequest> requests_;
  std::vector<textgen::v1::ChatRequest> chat_requests_;
  std::vector<textgen::v1::TokenizeRequest> tokenize_requests_;
  std::vector<textgen::v1::EmbedRequest> embed_requests_;
  std::map<std::string, uint32_t> sessions_;
  std::vector<std::string> deleted_;
};

// Runs FakeTextGeneration (plus gRPC's default health service) on a free loopback port.
class FakeServer {
 public:
  FakeServer() {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.SetMaxReceiveMessageSize(kFakeMaxRequestBytes);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() { server_->Shutdown(std::chrono::system_clock::now()); }

  std::string addr() const { return absl::StrCat("127.0.0.1:", port_); }
  FakeTextGeneration& service() { return service_; }
  void SetServing(bool serving) { server_->GetHealthCheckService()->SetServingStatus(serving); }

 private:
  FakeTextGeneration service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace textgen::client::testing
