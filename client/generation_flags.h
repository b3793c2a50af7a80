#pragma once

// Sampling, stopping and output flags shared by `generate` and `chat`, and how they map onto a
// GenerateRequest or ChatRequest. Range checks beyond "is a number" are the server's job (it names
// the limit).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/flag_parser.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::client {

// Values of the generation flags; unset optionals leave the server default in place.
struct GenerationFlags {
  std::optional<double> temperature;
  int64_t top_k = 0;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<uint64_t> seed;
  std::vector<std::pair<int32_t, float>> logit_bias;  // from repeated --logit-bias ID=BIAS
  int64_t max_tokens = 0;                             // 0 = server default
  int64_t min_tokens = 0;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool parse_special = false;
  int64_t logprobs = -1;  // -1 = off; N >= 0 = logprobs plus N alternatives
  bool echo = false;
  std::string session_id;
  std::string request_id;
  // Output constraint: give one (with several, the request carries the last of json-schema,
  // json-object, grammar, regex).
  std::string json_schema;  // --json-schema FILE, the file's text
  std::string grammar;      // --grammar FILE (GBNF)
  std::optional<std::string> regex;
  bool json_object = false;
};

// Appends the specs of all generation flags writing into `flags`.
void AddGenerationFlags(GenerationFlags* flags, std::vector<FlagSpec>* specs);

// Copies the flag values into request.sampling/stopping/output/session_id/request_id.
// The prompt is left to the caller.
void FillGenerateRequest(const GenerationFlags& flags, textgen::v1::GenerateRequest* request);
// The same for a ChatRequest (parse_special does not apply: the template decides).
void FillChatRequest(const GenerationFlags& flags, textgen::v1::ChatRequest* request);

}  // namespace textgen::client
