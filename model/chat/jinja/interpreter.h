#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/ast.h"
#include "model/chat/jinja/lexer.h"
#include "model/chat/jinja/value.h"

namespace textgen::model::jinja {

// Bounds that keep a hostile template from hanging or exhausting the server. Checked before
// the work they guard (a huge range() or string repetition is refused, not built).
struct RenderLimits {
  size_t max_output_bytes = 4 << 20;       // rendered text, and any one string built
  int64_t max_loop_iterations = 1000000;   // all loop iterations of one render
  int64_t max_collection_items = 1000000;  // one list built by range(), "*" or filters
  int max_call_depth = 64;                 // nested macro calls (recursion)
};

struct RenderOptions {
  RenderLimits limits;
  // The time strftime_now() reports, as Unix seconds; unset = the clock (local time zone,
  // as Python's datetime.now()). Tests fix it so renderings compare.
  std::optional<int64_t> now_unix_seconds;
};

// Status payload that marks an error the template raised itself (raise_exception), whose
// message is the template's own.
inline constexpr absl::string_view kRaisedByTemplatePayload = "textgen.jinja.raised";

// Variables of one scope; lookups walk outwards through `parent`. Shared, because a macro
// keeps the scope it was defined in alive.
struct Frame {
  absl::flat_hash_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;

  const Value* Find(absl::string_view name) const;
};
using FramePtr = std::shared_ptr<Frame>;

// Runs a parsed template. One per render; not thread-safe (templates themselves are).
class Interpreter {
 public:
  Interpreter(const Source& source, const RenderOptions& options);

  // Renders `body` with `context` as the template's variables (plus Jinja's and Hugging
  // Face's globals). Errors: INVALID_ARGUMENT for template errors (with line and column,
  // or the template's own message), RESOURCE_EXHAUSTED for limits.
  absl::StatusOr<TaintedString> Render(const Body& body, const Dict& context);

  // For builtins: call a template value (macro, method, builtin) with arguments.
  absl::StatusOr<Value> Call(const Value& callee, CallArgs& args);
  // For namespace(): the object is emptied when the render ends, so a namespace that refers to
  // itself (`set ns.me = ns`) cannot keep itself alive.
  void TrackNamespace(const Value& ns) { namespaces_.push_back(ns); }
  // For builtins: check that `n` more items / bytes fit in the limits.
  absl::Status CheckItems(int64_t n) const;
  absl::Status CheckBytes(size_t n) const;
  // For builtins: a string of `n` bytes was built. Besides the size bound, everything built
  // and written in one render shares a budget (kWorkBytesFactor x max_output_bytes), so a
  // loop that grows a string by concatenation cannot run for minutes.
  absl::Status Charge(size_t n);
  static constexpr size_t kWorkBytesFactor = 16;
  int64_t NowUnixSeconds() const;

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  absl::StatusOr<Flow> ExecBody(const Body& body, const FramePtr& frame);
  absl::StatusOr<Flow> Exec(const Stmt& stmt, const FramePtr& frame);
  absl::StatusOr<Flow> ExecFor(const Stmt& stmt, const FramePtr& frame);
  absl::Status ExecSet(const Stmt& stmt, const FramePtr& frame);
  absl::Status Assign(const Stmt& stmt, const Value& value, Frame& frame);
  // Renders `body` into a string of its own (block set, filter blocks, macros).
  absl::StatusOr<Value> Capture(const Body& body, const FramePtr& frame);
  // A macro (or a call block's `caller`) as a callable bound to its defining scope. The
  // interpreter keeps the scope alive (the callable holds a plain pointer): a macro stored in
  // the frame it closes over would otherwise be a reference cycle, leaked.
  Value MakeMacro(const Stmt& stmt, const FramePtr& scope);
  absl::StatusOr<Value> CallMacro(const Stmt& macro, const FramePtr& scope, CallArgs& args);

  absl::StatusOr<Value> Eval(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<Value> EvalOperator(const Expr& expr, const FramePtr& frame);
  // `result`, its error located at `expr` (Locate).
  absl::StatusOr<Value> Located(absl::StatusOr<Value> result, const Expr& expr) const;
  // Lists, tuples and dicts; attribute, item and slice access; calls, filters and tests.
  absl::StatusOr<Value> EvalCollection(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<Value> EvalAccess(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<Value> EvalApplication(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<Value> EvalCompare(const Expr& expr, const FramePtr& frame);
  absl::StatusOr<CallArgs> EvalArgs(const Expr& expr, size_t first, const FramePtr& frame);

  // Adds "template error at line L, column C" to errors that have no position yet.
  absl::Status Locate(absl::Status status, size_t offset) const;

  const Source& source_;
  const RenderOptions& options_;
  TaintedString* output_ = nullptr;  // where text goes: the result or a captured block
  Value block_input_;                // the body of the innermost {% filter %} / {% set x | f %}
  std::vector<FramePtr> closure_scopes_;  // frames macros close over
  std::vector<Value> namespaces_;         // namespace() objects of this render
  int call_depth_ = 0;
  int64_t loop_iterations_ = 0;
  size_t work_bytes_ = 0;
};

}  // namespace textgen::model::jinja
