// libFuzzer target: the request validation path from raw protobuf bytes, as gRPC hands them to
// the service (and as the HTTP front end builds them): byte 0 picks GenerateRequest (0),
// ChatRequest (1) or EmbedRequest (2), the rest is parsed as that message and validated against
// the bundled model's real tokenizer and chat template (plus Llama 3's, named "llama3", when
// $TEXTGEN_FUZZ_CHAT_TEMPLATE names a file); byte 0 = 3 takes the rest as a Responses API body
// (JSON), parsed by the HTTP front end and validated as the chat request it becomes. Checks
// beyond "no crash, no leak, no UB":
//   accepted: a non-empty prompt of in-vocabulary ids that fits the context with its
//     max_new_tokens, which is within the limit; stop token ids in the vocabulary; the session
//     key scoped to the principal.
//   embeddings: every input non-empty, in the vocabulary, within the context with the one
//     position the scheduler reserves; dimensions within the width.
//   refused: one of the statuses the service documents, with a non-empty, valid UTF-8 message
//     (gRPC sends it to the client as is).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "model/constraint/constraint.h"
#include "model/constraint/token_trie.h"
#include "model/format/gguf_tokenizer.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "server/core/chat_validation.h"
#include "server/core/embedding.h"
#include "server/core/validation.h"
#include "server/http/openai/responses_request.h"
#include "textgen/v1/textgen.pb.h"

namespace {

using textgen::server::ValidatedRequest;

struct Fixture {
  std::unique_ptr<textgen::model::Tokenizer> tokenizer;
  textgen::server::ChatTemplates templates;
  textgen::server::ValidationOptions options;
  std::unique_ptr<textgen::model::ConstraintCompiler> constraints;
};

Fixture* fixture = nullptr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "request fuzzer: %s\n", what.c_str());
  std::abort();
}

void CheckAccepted(const ValidatedRequest& request) {
  const textgen::server::ValidationOptions& o = fixture->options;
  const int vocab = fixture->tokenizer->vocab_size();
  if (request.prompt_tokens.empty()) Fail("accepted an empty prompt");
  for (const int id : request.prompt_tokens) {
    if (id < 0 || id >= vocab) Fail("accepted a prompt id outside the vocabulary");
  }
  if (request.stopping.max_new_tokens < 1 ||
      request.stopping.max_new_tokens > o.max_new_tokens_limit) {
    Fail("accepted max_new_tokens outside [1, limit]");
  }
  if (request.prompt_tokens.size() + request.stopping.max_new_tokens >
      static_cast<size_t>(o.context_length)) {
    Fail("accepted a request that does not fit the context");
  }
  for (const int id : request.stopping.stop_token_ids) {
    if (id < 0 || id >= vocab) Fail("accepted a stop token id outside the vocabulary");
  }
  if (!request.session_id.empty() && !request.session_id.starts_with("fuzzer/")) {
    Fail("a session key not scoped to its principal");
  }
}

void CheckRefused(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kResourceExhausted:
      break;
    default:
      Fail("unexpected status " + status.ToString());
  }
  if (status.message().empty()) Fail("a refusal without a message");
  if (!textgen::model::IsValidUtf8(
          std::string_view(status.message().data(), status.message().size()))) {
    Fail("a refusal message that is not valid UTF-8: " + status.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs every string field with invalid UTF-8 it parses (and still parses it, as gRPC
  // does); the validator is what must refuse it, so the log is noise here.
  google::protobuf::SetLogHandler(nullptr);
  const std::string model = std::string(TEXTGEN_SOURCE_DIR) + "/models/default.gguf";
  auto data = textgen::model::ReadGgufVocabularyFile(model);
  if (!data.ok()) Fail(data.status().ToString());
  auto tokenizer = textgen::model::CreateTokenizer(*std::move(data));
  if (!tokenizer.ok()) Fail(tokenizer.status().ToString());

  std::map<std::string, std::string> sources{
      {"", ReadFile(std::string(TEXTGEN_SOURCE_DIR) + "/models/default.chat.jinja")}};
  if (const char* path = std::getenv("TEXTGEN_FUZZ_CHAT_TEMPLATE"); path != nullptr) {
    sources["llama3"] = ReadFile(path);
  }
  auto templates = textgen::server::ChatTemplates::Load(sources, "", **tokenizer);
  if (!templates.ok()) Fail(templates.status().ToString());

  fixture = new Fixture{*std::move(tokenizer), *std::move(templates), {}};
  // Small limits, so the fuzzer reaches them.
  fixture->options.context_length = 256;
  fixture->options.default_max_new_tokens = 16;
  fixture->options.max_new_tokens_limit = 64;
  fixture->options.max_prompt_bytes = 4096;
  // Output constraints compile as on the server (small limits, so the fuzzer reaches them).
  fixture->constraints = std::make_unique<textgen::model::ConstraintCompiler>(
      textgen::model::ConstraintLimits{.max_text_bytes = 4096, .max_grammar_symbols = 100000});
  fixture->options.constraints = fixture->constraints.get();
  fixture->options.token_trie = textgen::model::TokenTrie::Build(*fixture->tokenizer);
  fixture->options.embedding_dim = 64;
  return 0;
}

void CheckEmbed(const uint8_t* data, size_t size, const textgen::server::RequestContext& context) {
  textgen::v1::EmbedRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  absl::StatusOr<std::vector<ValidatedRequest>> validated = textgen::server::ValidateEmbedRequest(
      request, *fixture->tokenizer, fixture->options, context);
  if (!validated.ok()) return CheckRefused(validated.status());
  const textgen::server::ValidationOptions& o = fixture->options;
  if (validated->empty() || validated->size() != static_cast<size_t>(request.inputs_size())) {
    Fail("accepted embeddings of a different number of inputs");
  }
  for (const ValidatedRequest& input : *validated) {
    if (input.prompt_tokens.empty()) Fail("accepted an empty embedding input");
    if (input.prompt_tokens.size() + 1 > static_cast<size_t>(o.context_length)) {
      Fail("accepted an embedding input that does not fit the context");
    }
    for (const int id : input.prompt_tokens) {
      if (id < 0 || id >= fixture->tokenizer->vocab_size())
        Fail("accepted an id outside the vocabulary");
    }
    if (!input.embedding || input.embedding->dimensions > o.embedding_dim) {
      Fail("accepted dimensions over the model's width");
    }
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  textgen::server::RequestContext context;
  context.principal = "fuzzer";
  context.random = [] { return uint64_t{42}; };
  const int kind = data[0] & 3;
  if (kind == 2) {
    CheckEmbed(data + 1, size - 1, context);
    return 0;
  }
  absl::StatusOr<ValidatedRequest> validated;
  if (kind == 3) {
    absl::StatusOr<textgen::server::http::ResponsesRequest> parsed =
        textgen::server::http::ParseResponsesRequest(
            absl::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
    if (!parsed.ok()) {
      CheckRefused(parsed.status());
      return 0;
    }
    textgen::server::http::AssembleConversation(*parsed, {});
    // The tools as the HTTP front end hands them over: parsed with the body.
    const auto& tools = parsed->request.tools;
    validated = textgen::server::ValidateChatRequest(parsed->request.chat, fixture->templates,
                                                     *fixture->tokenizer, fixture->options, context,
                                                     tools ? &*tools : nullptr);
  } else if (kind == 1) {
    textgen::v1::ChatRequest request;
    if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    validated = textgen::server::ValidateChatRequest(
        request, fixture->templates, *fixture->tokenizer, fixture->options, context);
  } else {
    textgen::v1::GenerateRequest request;
    if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    validated = textgen::server::ValidateGenerateRequest(request, *fixture->tokenizer,
                                                         fixture->options, context);
  }
  if (validated.ok()) {
    CheckAccepted(*validated);
  } else {
    CheckRefused(validated.status());
  }
  return 0;
}
