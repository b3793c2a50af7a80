// The server's options: ranges named by flag, and where the model comes from.
#include "server/server_options.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;

TEST(ServerOptionsTest, DefaultsAreValid) { EXPECT_TRUE(ValidateServerOptions({}).ok()); }

TEST(ServerOptionsTest, RejectsBadValuesNamingTheFlag) {
  ServerOptions o;
  o.max_batch = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--max-batch must be >= 1, got 0"));
  o = {};
  o.prep_threads = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--prep-threads must be >= 1, got 0"));
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
  o.tool_call_format = "xml";
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--tool-call-format must be one of hermes, llama3-json, mistral, "
                        "phi4-mini, harmony, qwen3-coder, lfm2, generic-json; got \"xml\""));
  o.tool_call_format = "mistral";
  EXPECT_TRUE(ValidateServerOptions(o).ok());
  o = {};
  o.prefix_cache_scope = "tenant";
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--prefix-cache-scope must be principal, global or off, got \"tenant\""));
  for (const char* scope : {"principal", "global", "off"}) {
    o.prefix_cache_scope = scope;
    EXPECT_TRUE(ValidateServerOptions(o).ok()) << scope;
  }
  o = {};
  o.speculative = "eagle";
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--speculative must be off, ngram or draft, got \"eagle\""));
  o.speculative = "draft";
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--speculative draft needs --draft-model FILE"));
  o.draft_model = "small.gguf";
  EXPECT_TRUE(ValidateServerOptions(o).ok());
  o.speculative = "ngram";
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--draft-model is used by --speculative draft only, not ngram"));
  o.draft_model.clear();
  EXPECT_TRUE(ValidateServerOptions(o).ok());
  o.speculative_draft_tokens = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("speculative-draft-tokens"));
  o = {};
  o.speculative_max_batch = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()), HasSubstr("speculative-max-batch"));
  o = {};
  o.kv_cache_dir = "/var/cache/textgen";
  o.prefix_cache_scope = "off";
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--kv-cache-dir keeps the prefix cache on disk: it needs "
                        "--prefix-cache-scope principal or global, not off"));
  o.prefix_cache_scope = "global";
  EXPECT_TRUE(ValidateServerOptions(o).ok());
  o.kv_cache_dir_mb = 0;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--kv-cache-dir-mb must be > 0, got 0"));
  o = {};
  o.max_request_bytes = 1000;  // below the 1 KiB the CLI relies on as every server's floor
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--max-request-bytes must be >= 1024, got 1000"));
}

TEST(ServerOptionsTest, MaxPrefillChunkIsCheckedAndReachesTheScheduler) {
  ServerOptions o;
  o.max_prefill_chunk = -1;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--max-prefill-chunk must be >= 0, got -1"));
  o.max_batch_tokens = 512;
  o.max_prefill_chunk = 513;
  EXPECT_THAT(std::string(ValidateServerOptions(o).message()),
              HasSubstr("--max-prefill-chunk (513) must not exceed --max-batch-tokens (512)"));
  o.max_prefill_chunk = 64;
  ASSERT_TRUE(ValidateServerOptions(o).ok());
  EXPECT_EQ(SchedulerOptionsOf(o).max_prefill_tokens_while_decoding, 64);
  EXPECT_EQ(SchedulerOptionsOf(o).max_batch_tokens, 512);
  EXPECT_EQ(EngineOptionsOf(o).max_batch_tokens, 512);
}

TEST(ServerOptionsTest, EachLayerGetsItsFlags) {
  ServerOptions o;
  o.prefix_cache_scope = "global";
  o.speculative = "ngram";
  o.kv_cache_dtype = "f16";
  o.dequantize = true;
  o.max_stop_strings = 3;
  o.max_constraint_compile_ms = 25;
  ASSERT_TRUE(ValidateServerOptions(o).ok());
  EXPECT_EQ(SchedulerOptionsOf(o).prefix_cache, PrefixCacheScope::kGlobal);
  EXPECT_EQ(SchedulerOptionsOf(o).speculation.mode, Speculation::kNgram);
  EXPECT_TRUE(EngineOptionsOf(o).kv_cache_f16);
  EXPECT_FALSE(EngineOptionsOf(o).quantized_kernels);
  EXPECT_EQ(ValidationLimitsOf(o).max_stop_strings, 3);
  EXPECT_EQ(ConstraintLimitsOf(o).max_compile_time, absl::Milliseconds(25));
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

}  // namespace
}  // namespace textgen::server
