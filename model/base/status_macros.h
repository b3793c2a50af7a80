#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Status propagation for the loader's parsers (Abseil 20220623 has no public ASSIGN_OR_RETURN).
#define TEXTGEN_LOADER_CONCAT_INNER(a, b) a##b
#define TEXTGEN_LOADER_CONCAT(a, b) TEXTGEN_LOADER_CONCAT_INNER(a, b)

#define TEXTGEN_RETURN_IF_ERROR(expr)                   \
  do {                                                  \
    if (absl::Status _status = (expr); !_status.ok()) { \
      return _status;                                   \
    }                                                   \
  } while (0)

#define TEXTGEN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = *std::move(tmp)

// TEXTGEN_ASSIGN_OR_RETURN(auto x, FunctionReturningStatusOr());
#define TEXTGEN_ASSIGN_OR_RETURN(lhs, expr) \
  TEXTGEN_ASSIGN_OR_RETURN_IMPL(TEXTGEN_LOADER_CONCAT(_status_or_, __LINE__), lhs, expr)
