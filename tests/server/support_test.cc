// The service's small helpers: status mapping, server options, model path
// resolution, log levels and the logger.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/logging.h"
#include "server/grpc/status_mapping.h"
#include "server/server_options.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(StatusMappingTest, KeepsCodeAndMessage) {
  const grpc::Status s = ToGrpcStatus(absl::OutOfRangeError("too long"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(), "too long");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("x")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST(ServerOptionsTest, DefaultsAreValid) { EXPECT_TRUE(ValidateServerOptions({}).ok()); }

TEST(ServerOptionsTest, RejectsBadValuesNamingTheFlag) {
  ServerOptions o;
  o.max_batch = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--max-batch must be >= 1, got 0"));
  o = {};
  o.max_new_tokens = 5000;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--max-new-tokens (5000) must not exceed --max-new-tokens-limit (4096)"));
  o = {};
  o.session_ttl = absl::ZeroDuration();
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()), HasSubstr("--session-ttl"));
  o = {};
  o.kv_cache_bytes = 0;
  EXPECT_EQ(ValidateServerOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.kv_cache_dtype = "bf16";
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--kv-cache-dtype must be f32 or f16, got \"bf16\""));
  o.kv_cache_dtype = "f16";
  EXPECT_TRUE(ValidateServerOptions(o).ok());
  o = {};
  o.max_request_bytes = 1000;  // below the 1 KiB the CLI relies on as every server's floor
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--max-request-bytes must be >= 1024, got 1000"));
}

TEST(ServerOptionsTest, ResolvesTheModelPath) {
  EXPECT_EQ(*ResolveModelPath("given.gguf", "env.gguf", "/x/build/bin/textgen-server"),
            "given.gguf");
  EXPECT_EQ(*ResolveModelPath("", "env.gguf", "/x/build/bin/textgen-server"), "env.gguf");

  // The bundled model next to the build tree: <repo>/build/bin/.. /.. /models/default.gguf.
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("textgen_model_path_" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "build" / "bin");
  std::filesystem::create_directories(root / "models");
  std::ofstream(root / "models" / "default.gguf") << "GGUF";
  absl::StatusOr<std::string> found =
      ResolveModelPath("", nullptr, (root / "build" / "bin" / "textgen-server").string());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, (root / "models" / "default.gguf").string());

  // Nothing next to the executable, nothing in the current directory.
  const std::filesystem::path old_cwd = std::filesystem::current_path();
  std::filesystem::current_path(root / "build");
  absl::StatusOr<std::string> missing =
      ResolveModelPath("", "", (root / "build" / "x" / "bin" / "textgen-server").string());
  std::filesystem::current_path(old_cwd);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("pass --model PATH"));
  std::filesystem::remove_all(root);
}

TEST(LoggingTest, ParsesLevels) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("INFO"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("warning"), LogLevel::kWarning);
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  EXPECT_THAT(std::string(ParseLogLevel("loud").status().message()),
              HasSubstr("debug, info, warning, error"));
}

TEST(LoggingTest, WritesTimestampedLinesAtOrAboveTheLevel) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    Logger logger(LogLevel::kInfo, file);
    logger.Debug("hidden");
    logger.Info("hello");
    logger.Error("bad");
  }  // the destructor flushes the queue
  std::rewind(file);
  std::string contents;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), file) != nullptr) contents += buffer;
  std::fclose(file);
  EXPECT_THAT(contents, Not(HasSubstr("hidden")));
  EXPECT_THAT(contents, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z I hello\n"
                                     "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z E bad\n"));
}

}  // namespace
}  // namespace textgen::server
