#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "model/constraint/constraint.h"
#include "model/constraint/token_trie.h"
#include "model/tokenizer/tokenizer.h"
#include "server/scheduler/validated_request.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

// A request error about one field carries that field as data: its path in the proto request
// ("sampling.top_p", "stopping.stop[2]", "messages[0].content"), under this payload key. The
// message starts with the same path (FieldError), so a front end that spells fields
// differently (the OpenAI HTTP API: "top_p", "stop[2]") replaces exactly that leading name by
// looking the path up in its own table, never by searching the text. A few errors are about a
// field without starting with it (a chat template refusing "messages", in its own words):
// WithField attaches the field, and the front end renames nothing.
inline constexpr absl::string_view kFieldPayload = "textgen.dev/field";

// `code` with the message "<field> <problem>" and `field` attached.
absl::Status FieldError(absl::StatusCode code, absl::string_view field, absl::string_view problem);

// INVALID_ARGUMENT about `field`.
inline absl::Status InvalidField(absl::string_view field, absl::string_view problem) {
  return FieldError(absl::StatusCode::kInvalidArgument, field, problem);
}

// `status` with `field` attached (for errors whose message already starts with it, such as
// model::CheckUtf8's); OK stays OK.
absl::Status WithField(absl::Status status, absl::string_view field);

// The field a status is about, or nullopt.
std::optional<std::string> ErrorField(const absl::Status& status);

// Fixed ranges of request fields (the size limits an operator may change are in
// ValidationOptions, each with its flag).
inline constexpr int kMaxTopLogprobs = 20;
inline constexpr int kMaxRequestIdLength = 128;
inline constexpr float kMaxTemperature = 100.0f;
inline constexpr float kMaxLogitBias = 100.0f;
inline constexpr float kMaxPenalty = 2.0f;

struct ValidationOptions {
  // max_new_tokens when the request leaves it 0 (clamped to the room left in the context).
  int default_max_new_tokens = 256;
  // Largest max_new_tokens a request may ask for (--max-new-tokens-limit).
  int max_new_tokens_limit = 4096;
  // The model's context length: prompt + max_new_tokens must fit.
  int context_length = 2048;
  // Largest text prompt (Chat: all message text together), checked before tokenizing or
  // rendering, which cost ~85 ms per MiB on a request thread (--max-prompt-bytes).
  size_t max_prompt_bytes = 1 << 20;
  // Prepend BOS to text prompts (the vocabulary's tokenizer.ggml.add_bos_token).
  bool add_bos = true;
  // Size limits, each checked before the work it guards (stop matching and logit biasing run
  // for every generated token): --max-stop-strings, --max-stop-string-bytes,
  // --max-stop-token-ids, --max-logit-bias-entries, --max-session-id-bytes.
  int max_stop_strings = 16;
  int max_stop_string_bytes = 256;
  int max_stop_token_ids = 64;
  int max_logit_bias_entries = 300;  // OpenAI's own limit
  int max_session_id_bytes = 128;
  // Output constraints (structured output): compiled here, off the engine thread, with the
  // compiler's own limits (--max-constraint-bytes, --max-grammar-symbols,
  // --max-constraint-compile-ms). Null: requests with a constraint are refused.
  model::ConstraintCompiler* constraints = nullptr;
  std::shared_ptr<const model::TokenTrie> token_trie;  // the vocabulary, for token masks
  // Embeddings: how inputs are pooled (the file's pooling_type; last for generative models),
  // the model's width, and whether inputs end with EOS (tokenizer.ggml.add_eos_token).
  model::Pooling pooling = model::Pooling::kLast;
  int embedding_dim = 0;
  bool add_eos = false;
  // Encoders (BERT family) embed and cannot generate: generation requests are refused. They
  // attend bidirectionally, so an input is one forward chunk: at most --max-batch-tokens.
  bool generates = true;
  int max_embedding_tokens = 0;  // 0: the context is the only bound
  std::string model_name;        // for messages
};

// FAILED_PRECONDITION when the model cannot generate text (an encoder), naming the route that
// serves it; checked before any other work of a generation request.
absl::Status CheckGenerates(const ValidationOptions& options);

// Per-request facts that do not come from the message itself.
struct RequestContext {
  absl::Time arrival_time = absl::InfinitePast();
  absl::Time deadline = absl::InfiniteFuture();
  // Source of server-chosen seeds and request ids; null = a fresh absl::BitGen.
  std::function<uint64_t()> random;
  // Who sent it (an API key's principal); empty when the server has no keys.
  std::string principal;
};

// The scheduler's key of a session: sessions belong to the principal that made them, so one id
// from two principals names two caches (neither can see or probe the other's). Neither a
// principal nor a session id can contain '/'.
std::string SessionKey(absl::string_view principal, absl::string_view session_id);

// The fields every generating request (Generate, Chat) has besides its prompt.
// Compiles `spec` (from the compiler's cache when it has seen it before) into `out`; errors
// name `field`.
absl::Status CompileConstraint(const model::ConstraintSpec& spec, const char* field,
                               const ValidationOptions& options, ConstraintParams& out);

struct RequestFields {
  const std::string& request_id;
  const std::string& session_id;
  const v1::SamplingParameters& sampling;
  const v1::StoppingCriteria& stopping;
  const v1::OutputOptions& output;
  const v1::OutputConstraint& constraint;
  // Where a JSON output constraint (json_schema, json_object) sits in the reply when not at its
  // start (harmony: in the final message, after the model's analysis); null: the whole reply.
  const model::JsonFraming* json_framing = nullptr;
};
// Fills ValidatedRequest::prompt_tokens (and prompt_text) or says why it cannot.
using PromptBuilder = std::function<absl::Status(ValidatedRequest&)>;

// Checks `fields`, then builds the prompt (only for an otherwise valid request: it is the
// expensive part), then checks it against the context length. Errors as for
// ValidateGenerateRequest.
absl::StatusOr<ValidatedRequest> ValidateRequest(const RequestFields& fields,
                                                 const model::Tokenizer& tokenizer,
                                                 const ValidationOptions& options,
                                                 const RequestContext& context,
                                                 const PromptBuilder& build_prompt);

// Turns a GenerateRequest into a ValidatedRequest: tokenizes a text prompt, checks every
// field and resolves every default. Errors are INVALID_ARGUMENT (malformed field; the message
// names the field, the value and the allowed range) or OUT_OF_RANGE (prompt + max_new_tokens
// over the context length). Thread-safe (the tokenizer is).
absl::StatusOr<ValidatedRequest> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                         const model::Tokenizer& tokenizer,
                                                         const ValidationOptions& options,
                                                         const RequestContext& context);

// Checks a request id: at most kMaxRequestIdLength printable ASCII characters (they go into
// log lines).
absl::Status ValidateRequestId(absl::string_view id);

// Checks a session id: 1..max_bytes characters of [A-Za-z0-9._:-]. `field` names it in errors.
absl::Status ValidateSessionId(absl::string_view session_id, absl::string_view field,
                               int max_bytes = ValidationOptions().max_session_id_bytes);

// A session's KV cache lives in one replica's memory, so a load balancer must send every turn
// of a session to the same replica. It cannot read session_id inside the request body, so
// clients repeat it in this header (gRPC metadata or HTTP header), and the balancer hashes on
// it (deploy/nginx/textgen-lb.conf).
inline constexpr absl::string_view kSessionRoutingHeader = "x-session-id";

// A request whose header names another session than its session_id field would be routed by
// one and cached under the other: refused with INVALID_ARGUMENT. `header_values` holds every
// value the header was sent with (none: nothing to check; the header is optional).
absl::Status CheckSessionRoutingHeader(const std::vector<absl::string_view>& header_values,
                                       absl::string_view session_id);

// Checks token ids against the vocabulary; `field` names the list in errors.
absl::Status ValidateTokenIds(const google::protobuf::RepeatedField<int32_t>& ids, int vocab_size,
                              absl::string_view field);

}  // namespace textgen::server
