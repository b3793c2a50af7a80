#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Status propagation for every layer (Abseil 20220623 has no public RETURN_IF_ERROR or
// ASSIGN_OR_RETURN). The one definition; do not write another.

#define TEXTGEN_STATUS_CONCAT_INNER(a, b) a##b
#define TEXTGEN_STATUS_CONCAT(a, b) TEXTGEN_STATUS_CONCAT_INNER(a, b)

// TEXTGEN_RETURN_IF_ERROR(FunctionReturningStatus());
#define TEXTGEN_RETURN_IF_ERROR(expr)                                   \
  do {                                                                  \
    if (absl::Status textgen_status_ = (expr); !textgen_status_.ok()) { \
      return textgen_status_;                                           \
    }                                                                   \
  } while (0)

#define TEXTGEN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = *std::move(tmp)

// TEXTGEN_ASSIGN_OR_RETURN(auto x, FunctionReturningStatusOr());
#define TEXTGEN_ASSIGN_OR_RETURN(lhs, expr) \
  TEXTGEN_ASSIGN_OR_RETURN_IMPL(TEXTGEN_STATUS_CONCAT(textgen_status_or_, __LINE__), lhs, expr)
