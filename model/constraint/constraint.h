#pragma once

// A request's output constraint (JSON Schema, any JSON object, a regex or a GBNF grammar),
// compiled once per distinct constraint: the compiler keeps the grammars it built in a
// bounded cache keyed by the constraint's content, so a client that sends the same schema on
// every call pays for it once. Thread-safe.

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "model/constraint/gbnf.h"
#include "model/constraint/grammar.h"
#include "model/constraint/json_schema.h"
#include "model/constraint/regex.h"
#include "model/constraint/token_trie.h"

namespace textgen::model {

enum class ConstraintKind { kJsonSchema, kJsonObject, kRegex, kGrammar };

const char* ConstraintKindName(ConstraintKind kind);

struct ConstraintSpec {
  // A constructor, not an aggregate: {kind, text} stays short where framing is not used.
  ConstraintSpec(ConstraintKind k = ConstraintKind::kJsonObject, std::string t = "",
                 JsonFraming f = {})
      : kind(k), text(std::move(t)), framing(std::move(f)) {}
  ConstraintKind kind;
  std::string text;     // the schema (JSON), the regex or the grammar; empty for kJsonObject
  JsonFraming framing;  // kJsonSchema: text around the document (tool calls)
};

struct ConstraintLimits {
  size_t max_text_bytes = 256 * 1024;     // schema, regex or grammar source
  int max_schema_depth = 64;              // nesting of a JSON Schema
  int64_t max_grammar_symbols = 1 << 20;  // size of the compiled grammar (its memory)
  absl::Duration max_compile_time = absl::Seconds(2);
  int cache_entries = 256;
};

// A compiled constraint: the grammar, and what compiling it cost.
struct CompiledConstraint {
  std::shared_ptr<const Grammar> grammar;
  double compile_seconds = 0;  // 0 when it came from the cache
  bool from_cache = false;
};

class ConstraintCompiler {
 public:
  explicit ConstraintCompiler(ConstraintLimits limits);

  // INVALID_ARGUMENT for a bad or unsupported constraint (the message names what and where),
  // RESOURCE_EXHAUSTED past a limit (the message names the limit).
  absl::StatusOr<CompiledConstraint> Compile(const ConstraintSpec& spec);

  const ConstraintLimits& limits() const { return limits_; }

 private:
  absl::StatusOr<Grammar> Build(const ConstraintSpec& spec) const;

  ConstraintLimits limits_;
  absl::Mutex mu_;
  // Least recently used first.
  std::list<std::pair<std::string, std::shared_ptr<const Grammar>>> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, decltype(lru_)::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace textgen::model
