#include "model/constraint/constraint.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace textgen::model {

const char* ConstraintKindName(ConstraintKind kind) {
  switch (kind) {
    case ConstraintKind::kJsonSchema:
      return "json_schema";
    case ConstraintKind::kJsonObject:
      return "json_object";
    case ConstraintKind::kRegex:
      return "regex";
    case ConstraintKind::kGrammar:
      return "grammar";
  }
  return "unknown";
}

ConstraintCompiler::ConstraintCompiler(ConstraintLimits limits) : limits_(limits) {}

absl::StatusOr<Grammar> ConstraintCompiler::Build(const ConstraintSpec& spec) const {
  const GrammarLimits grammar{.max_positions = limits_.max_grammar_symbols};
  switch (spec.kind) {
    case ConstraintKind::kJsonSchema: {
      JsonSchemaLimits json{.max_schema_bytes = limits_.max_text_bytes,
                            .max_depth = limits_.max_schema_depth,
                            .grammar = grammar};
      return CompileJsonSchema(spec.text, json, spec.framing);
    }
    case ConstraintKind::kJsonObject:
      return JsonObjectGrammar(JsonSchemaLimits{.grammar = grammar});
    case ConstraintKind::kRegex: {
      GrammarBuilder builder;
      absl::StatusOr<CompiledRegex> regex = CompileRegex(
          builder, spec.text, TextContext::kRaw, RegexLimits{.max_length = limits_.max_text_bytes});
      if (!regex.ok()) return regex.status();
      return builder.Build(regex->rule, grammar);
    }
    case ConstraintKind::kGrammar:
      return ParseGbnf(spec.text,
                       GbnfLimits{.max_bytes = limits_.max_text_bytes, .grammar = grammar});
  }
  return absl::InvalidArgumentError("unknown constraint kind");
}

absl::StatusOr<CompiledConstraint> ConstraintCompiler::Compile(const ConstraintSpec& spec) {
  if (spec.text.size() > limits_.max_text_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", ConstraintKindName(spec.kind), " is ", spec.text.size(),
        " bytes, over the limit of ", limits_.max_text_bytes, " (--max-constraint-bytes)"));
  }
  // Every field, each length-prefixed so no two specs share a key.
  const JsonFraming& f = spec.framing;
  std::string key =
      absl::StrCat(static_cast<int>(spec.kind), ":", f.max_documents, ":", f.max_leading_whitespace,
                   ":", f.max_sections, ":", static_cast<int>(f.arguments), ":");
  for (const std::string* part :
       {&f.before, &f.after, &f.separator, &f.section_open, &f.section_close, &f.open, &f.close}) {
    absl::StrAppend(&key, part->size(), ":", *part);
  }
  absl::StrAppend(&key, f.before_branch.size(), ":");
  for (const std::string& part : f.before_branch) absl::StrAppend(&key, part.size(), ":", part);
  absl::StrAppend(&key, spec.text);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.end(), lru_, it->second);
      return CompiledConstraint{it->second->second, 0, true};
    }
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<Grammar> grammar = Build(spec);
  const absl::Duration took = absl::Now() - start;
  if (!grammar.ok()) {
    if (absl::IsResourceExhausted(grammar.status())) {
      return absl::ResourceExhaustedError(
          absl::StrCat(grammar.status().message(), " (--max-grammar-symbols)"));
    }
    return absl::InvalidArgumentError(grammar.status().message());
  }
  if (took > limits_.max_compile_time) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "compiling the ", ConstraintKindName(spec.kind), " took ", absl::FormatDuration(took),
        ", over the limit of ", absl::FormatDuration(limits_.max_compile_time),
        " (--max-constraint-compile-ms)"));
  }
  auto shared = std::make_shared<const Grammar>(std::move(*grammar));
  {
    absl::MutexLock lock(&mu_);
    if (auto it = index_.find(key); it == index_.end() && limits_.cache_entries > 0) {
      lru_.emplace_back(key, shared);
      index_.emplace(std::move(key), std::prev(lru_.end()));
      while (static_cast<int>(lru_.size()) > limits_.cache_entries) {
        index_.erase(lru_.front().first);
        lru_.pop_front();
      }
    }
  }
  return CompiledConstraint{std::move(shared), absl::ToDoubleSeconds(took), false};
}

}  // namespace textgen::model
