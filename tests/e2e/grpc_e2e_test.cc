// End to end: the real textgen-server binary on the real stories260K model, driven over
// gRPC. Reference text and ids: /work/shared/models/stories260K/PROVENANCE.md (llama.cpp and
// llama2.c run.c, greedy).

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/shared_files.h"
#include "tests/testing/temp_files.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr char kReferenceContinuation[] =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, she "
    "saw a big, red ball. She wanted to play with it,";
const std::vector<int> kReferenceIds = {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338,
                                        401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282,
                                        295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352,
                                        266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432};

std::string Stories260KGguf() {
  return ::textgen::test_support::SharedModelPath("stories260K/stories260K.gguf");
}

class GrpcEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Stories260KGguf();
    if (!std::filesystem::exists(model_)) return;
    server_ = new test_support::ServerProcess();
    started_ =
        server_->Start(TEXTGEN_SERVER_BIN,
                       {"--model", model_, "--listen", "127.0.0.1:0",
                        "--metrics-listen=127.0.0.1:0", "--threads", "1", "--drain-timeout", "10s"},
                       std::chrono::seconds(60));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    TEXTGEN_REQUIRE_SHARED_FILE(model_);
    ASSERT_TRUE(started_) << "textgen-server did not start; its log:\n" << server_->log();
    stub_ = v1::TextGeneration::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  }

  static inline std::string model_;
  static inline test_support::ServerProcess* server_ = nullptr;
  static inline bool started_ = false;
  std::unique_ptr<v1::TextGeneration::Stub> stub_;
};

struct Generation {
  grpc::Status status;
  std::string text;
  std::vector<int> ids;
  v1::Finished finished;
};

Generation GenerateGreedy(v1::TextGeneration::Stub& stub, int max_new_tokens) {
  v1::GenerateRequest request;
  request.set_text("Once upon a time");
  request.mutable_sampling()->set_temperature(0);
  request.mutable_stopping()->set_max_new_tokens(max_new_tokens);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto reader = stub.Generate(&context, request);
  Generation out;
  v1::GenerateResponse message;
  while (reader->Read(&message)) {
    out.text += message.text();
    out.ids.insert(out.ids.end(), message.token_ids().begin(), message.token_ids().end());
    if (message.has_finished()) out.finished = message.finished();
  }
  out.status = reader->Finish();
  return out;
}

TEST_F(GrpcEndToEndTest, GreedyGenerationMatchesTheReference) {
  const Generation g = GenerateGreedy(*stub_, 48);
  ASSERT_TRUE(g.status.ok()) << g.status.error_code() << ": " << g.status.error_message();
  EXPECT_THAT(g.ids, ElementsAreArray(kReferenceIds));
  EXPECT_EQ(g.text, kReferenceContinuation);
  EXPECT_EQ(g.finished.reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(g.finished.usage().prompt_tokens(), 5u);  // BOS + 4 pieces
  EXPECT_EQ(g.finished.usage().completion_tokens(), 48u);
}

TEST_F(GrpcEndToEndTest, ConcurrentStreamsAreBatchedAndStillMatch) {
  std::vector<Generation> results(4);
  std::vector<std::thread> clients;
  for (Generation& result : results) {
    clients.emplace_back([&] { result = GenerateGreedy(*stub_, 48); });
  }
  for (std::thread& t : clients) t.join();
  for (const Generation& g : results) {
    ASSERT_TRUE(g.status.ok()) << g.status.error_message();
    EXPECT_EQ(g.text, kReferenceContinuation);
  }
}

TEST_F(GrpcEndToEndTest, CancelMidStreamLeavesTheServerWorking) {
  v1::GenerateRequest request;
  request.set_text("Once upon a time");
  request.mutable_sampling()->set_temperature(0);
  request.mutable_stopping()->set_max_new_tokens(400);
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, request);
  v1::GenerateResponse message;
  ASSERT_TRUE(reader->Read(&message));
  context.TryCancel();
  while (reader->Read(&message)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  const Generation g = GenerateGreedy(*stub_, 48);
  ASSERT_TRUE(g.status.ok()) << g.status.error_message();
  EXPECT_EQ(g.text, kReferenceContinuation);
}

TEST_F(GrpcEndToEndTest, TokenizeMatchesTheReference) {
  v1::TokenizeRequest request;
  request.set_text("Once upon a time");
  v1::TokenizeResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->Tokenize(&context, request, &response).ok());
  EXPECT_THAT(response.ids(), ElementsAreArray({1, 403, 407, 261, 378}));
}

// Embed: one normalized vector per input, the same alone as together (batch invariance), the
// raw vector's direction; bad inputs are INVALID_ARGUMENT naming the input.
TEST_F(GrpcEndToEndTest, EmbedIsBatchInvariantAndNormalized) {
  const auto embed = [&](const std::vector<std::string>& texts, bool normalize,
                         v1::EmbedResponse& response) {
    v1::EmbedRequest request;
    for (const std::string& text : texts) request.add_inputs()->set_text(text);
    if (!normalize) request.set_normalize(false);
    grpc::ClientContext context;
    return stub_->Embed(&context, request, &response);
  };
  v1::EmbedResponse together, alone, raw;
  ASSERT_TRUE(embed({"Once upon a time", "The end."}, true, together).ok());
  ASSERT_EQ(together.embeddings_size(), 2);
  EXPECT_EQ(together.pooling(), "last");  // a generative model's file has no pooling_type
  ASSERT_TRUE(embed({"The end."}, true, alone).ok());
  EXPECT_EQ(together.prompt_tokens(), 5u + alone.prompt_tokens());  // "Once upon a time": 5
  EXPECT_THAT(alone.embeddings(0).values(), ElementsAreArray(together.embeddings(1).values()));
  ASSERT_TRUE(embed({"Once upon a time"}, false, raw).ok());
  const auto& unit = together.embeddings(0).values();
  const auto& values = raw.embeddings(0).values();
  ASSERT_EQ(values.size(), 64);  // the model's width
  double norm = 0, unit_norm = 0;
  for (int i = 0; i < values.size(); ++i) {
    norm += double{values[i]} * values[i];
    unit_norm += double{unit[i]} * unit[i];
  }
  EXPECT_NEAR(unit_norm, 1.0, 1e-5);
  for (int i = 0; i < values.size(); ++i) EXPECT_NEAR(unit[i], values[i] / std::sqrt(norm), 1e-6);

  v1::EmbedResponse refused;
  const grpc::Status empty = embed({"fine", ""}, true, refused);
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(empty.error_message(), HasSubstr("inputs[1].text is empty"));
}

TEST_F(GrpcEndToEndTest, ModelInfo) {
  v1::ModelInfo info;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->GetModelInfo(&context, v1::GetModelInfoRequest(), &info).ok());
  EXPECT_EQ(info.architecture(), "llama");
  EXPECT_EQ(info.vocab_size(), 512u);
  EXPECT_EQ(info.n_layers(), 5u);
  EXPECT_EQ(info.dim(), 64u);
  EXPECT_EQ(info.n_kv_heads(), 4u);
  EXPECT_EQ(info.file_dtype(), "f32");
  EXPECT_EQ(info.special_tokens().bos_id(), 1);
  EXPECT_EQ(info.special_tokens().eos_id(), 2);
  EXPECT_THAT(info.special_tokens().end_of_generation_ids(), ElementsAreArray({2}));
  EXPECT_THAT(info.special_tokens().end_of_generation(), ElementsAreArray({"</s>"}));
  EXPECT_EQ(info.max_request_bytes(), 4u << 20);  // --max-request-bytes default
}

// The published limit is the one gRPC enforces: one byte over is refused before any handler.
TEST_F(GrpcEndToEndTest, RequestOverThePublishedLimitIsResourceExhausted) {
  v1::GenerateRequest request;
  request.set_text(std::string(4u << 20, 'a'));
  ASSERT_GT(request.ByteSizeLong(), 4u << 20);
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, request);
  v1::GenerateResponse message;
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(GrpcEndToEndTest, NegativeTemperatureIsInvalidArgument) {
  v1::GenerateRequest request;
  request.set_text("Once upon a time");
  request.mutable_sampling()->set_temperature(-1);
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, request);
  v1::GenerateResponse message;
  EXPECT_FALSE(reader->Read(&message));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("sampling.temperature"));
}

// Thread names of a running process, from /proc/PID/task/*/comm.
std::map<std::string, int> ThreadNames(pid_t pid) {
  std::map<std::string, int> names;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    ++names[name];
  }
  return names;
}

// The process keeps one OpenMP pool, the engine thread's. A second one (e.g. from loading the
// model on the main thread) makes libgomp stop spinning at barriers once the pools' threads
// outnumber the cores, which cost 15-20% of the cores (docs/performance.md). Workers inherit
// the name of the thread that started them, so the pools show in the thread names.
TEST(ServerThreadsTest, OnlyTheEngineThreadHasAnOpenMpPool) {
  const std::string model = Stories260KGguf();
  TEXTGEN_REQUIRE_SHARED_FILE(model);
  test_support::ServerProcess server;
  ASSERT_TRUE(server.Start(
      TEXTGEN_SERVER_BIN,
      {"--model", model, "--listen", "127.0.0.1:0", "--metrics-listen=", "--threads", "2"},
      std::chrono::seconds(60)))
      << server.log();
  auto stub = v1::TextGeneration::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(GenerateGreedy(*stub, 8).status.ok());  // the engine has run parallel regions

  std::map<std::string, int> names = ThreadNames(server.pid());
  EXPECT_EQ(names["textgen-engine"], 2) << "the engine thread and its one OpenMP worker";
  EXPECT_EQ(names["textgen-load"], 0) << "the loading thread ended and took its pool along";
  EXPECT_EQ(names["textgen-server"], 1) << "the main thread alone: no OpenMP pool of its own";
  stub.reset();  // closes the connection, which the drain would otherwise wait for
  EXPECT_EQ(server.Stop(), 0);
}

// --speculative draft through the real binary: the model drafting for itself (every greedy
// draft right) gives the reference continuation, and the draft model's engine adds no OpenMP
// pool (it runs on the engine thread's).
TEST(DraftModelServerTest, GivesTheReferenceContinuationOnTheEngineThreadsPool) {
  const std::string model = Stories260KGguf();
  TEXTGEN_REQUIRE_SHARED_FILE(model);
  test_support::ServerProcess server;
  ASSERT_TRUE(server.Start(TEXTGEN_SERVER_BIN,
                           {"--model", model, "--listen", "127.0.0.1:0", "--metrics-listen=",
                            "--threads", "2", "--speculative", "draft", "--draft-model", model},
                           std::chrono::seconds(60)))
      << server.log();
  EXPECT_THAT(server.log(), HasSubstr("draft model " + model));
  auto stub = v1::TextGeneration::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
  const Generation out = GenerateGreedy(*stub, static_cast<int>(kReferenceIds.size()));
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_THAT(out.ids, ElementsAreArray(kReferenceIds));
  EXPECT_EQ(out.text, kReferenceContinuation);
  std::map<std::string, int> names = ThreadNames(server.pid());
  EXPECT_EQ(names["textgen-engine"], 2) << "the engine thread and its one OpenMP worker";
  stub.reset();
  EXPECT_EQ(server.Stop(), 0);
}

// A draft model with another vocabulary stops the server before it serves, saying why.
TEST(DraftModelServerTest, RefusesADraftModelWithAnotherVocabulary) {
  const std::string model = Stories260KGguf();
  TEXTGEN_REQUIRE_SHARED_FILE(model);
  const std::string other = std::string(TEXTGEN_SOURCE_DIR) + "/models/default.gguf";
  test_support::ServerProcess server;
  EXPECT_FALSE(server.Start(TEXTGEN_SERVER_BIN,
                            {"--model", model, "--listen", "127.0.0.1:0",
                             "--metrics-listen=", "--speculative", "draft", "--draft-model", other},
                            std::chrono::seconds(60)));
  EXPECT_THAT(server.log(), HasSubstr("the draft model's vocabulary is not the target's: 512 "
                                      "tokens in the target, 4096 in the draft"));
}

// An encoder (here a random BERT) cannot draft: refused before its vocabulary is compared,
// and the server does not start. Needs only the bundled model.
TEST(DraftModelServerTest, RefusesAnEncoderAsTheDraftModel) {
  const std::string target = std::string(TEXTGEN_SOURCE_DIR) + "/models/default.gguf";
  const std::string encoder = test_support::TestTempPath("draft-encoder.gguf");
  const std::string command = std::string(TEXTGEN_MAKE_GGUF_BIN) +
                              " --arch bert --preset tiny --dtype f32 --out " + encoder +
                              " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  test_support::ServerProcess server;
  EXPECT_FALSE(server.Start(TEXTGEN_SERVER_BIN,
                            {"--model", target, "--listen", "127.0.0.1:0", "--metrics-listen=",
                             "--speculative", "draft", "--draft-model", encoder},
                            std::chrono::seconds(60)));
  EXPECT_THAT(server.log(),
              HasSubstr("--draft-model " + encoder + ": an encoder cannot draft tokens"));
  std::filesystem::remove(encoder);
}

// A hybrid (a random qwen35) cannot draft: its recurrent state cannot be rolled back past a
// rejected draft. Refused at start, before its vocabulary is compared.
TEST(DraftModelServerTest, RefusesAHybridAsTheDraftModel) {
  const std::string target = std::string(TEXTGEN_SOURCE_DIR) + "/models/default.gguf";
  const std::string hybrid = test_support::TestTempPath("draft-hybrid.gguf");
  const std::string command = std::string(TEXTGEN_MAKE_GGUF_BIN) +
                              " --arch qwen35 --preset tiny --dtype f32 --out " + hybrid +
                              " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  test_support::ServerProcess server;
  EXPECT_FALSE(server.Start(TEXTGEN_SERVER_BIN,
                            {"--model", target, "--listen", "127.0.0.1:0", "--metrics-listen=",
                             "--speculative", "draft", "--draft-model", hybrid},
                            std::chrono::seconds(60)));
  EXPECT_THAT(server.log(), HasSubstr("--draft-model " + hybrid +
                                      ": a model with recurrent layers cannot draft tokens yet"));
  std::filesystem::remove(hybrid);
}

// Runs last (gtest keeps declaration order): SIGTERM drains and exits 0.
TEST_F(GrpcEndToEndTest, SigtermDrainsAndExitsZero) {
  EXPECT_EQ(server_->Stop(), 0);
  EXPECT_THAT(server_->log(), HasSubstr("draining"));
}

}  // namespace
}  // namespace textgen
