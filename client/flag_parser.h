#pragma once

// A small table-driven command-line parser for the textgen subcommands.
//
// absl flags are process-global, which does not fit one binary with several subcommands whose
// flags differ; this parser keeps each subcommand's flags in a local table instead.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace textgen::client {

// One accepted flag. `set` parses and stores the value (called once per occurrence).
struct FlagSpec {
  std::string name;        // without leading dashes, e.g. "top-k"
  std::string value_name;  // e.g. "N"; empty for a boolean switch
  std::string help;
  std::function<absl::Status(absl::string_view value)> set;
};

// What a successful parse leaves besides the stored flag values.
struct ParsedArgs {
  std::vector<std::string> positional;
  bool help = false;  // --help or -h was given
};

// Parses `args` (without the program and subcommand names) against `specs`.
// Accepts "--name value", "--name=value", "--" (end of flags) and "-" as a positional.
// Errors (InvalidArgument) name the flag and the offending value.
absl::StatusOr<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                      const std::vector<FlagSpec>& specs);

// "Usage: textgen <command> <synopsis>\n\n<description>\n\nFlags:\n  --name VALUE  help\n...".
std::string FormatUsage(absl::string_view command, absl::string_view synopsis,
                        absl::string_view description, const std::vector<FlagSpec>& specs);

// ---- Value parsers (strict: the whole string must be a number, floats must be finite) ----
absl::StatusOr<int64_t> ParseInt(absl::string_view flag, absl::string_view value);
absl::StatusOr<uint64_t> ParseUint(absl::string_view flag, absl::string_view value);
absl::StatusOr<double> ParseDouble(absl::string_view flag, absl::string_view value);
// absl duration syntax ("30s", "1.5m", "250ms") or a bare number of seconds; must be > 0.
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag, absl::string_view value);

// ---- Spec builders: each stores into the pointed-to variable, which must outlive parsing ----
FlagSpec BoolFlag(std::string name, bool* out, std::string help);
FlagSpec StringFlag(std::string name, std::string* out, std::string value_name, std::string help);
// A flag whose value names a file: its contents go to `*out` (trailing whitespace trimmed
// when `trim`, as for a key written with echo).
FlagSpec FileFlag(std::string name, std::string* out, bool trim, std::string help);
FlagSpec RepeatedStringFlag(std::string name, std::vector<std::string>* out, std::string value_name,
                            std::string help);
// Integers checked against [min, max]; the message names the flag, value and range.
FlagSpec IntFlag(std::string name, int64_t* out, int64_t min, int64_t max, std::string help);
FlagSpec OptionalUintFlag(std::string name, std::optional<uint64_t>* out, std::string help);
FlagSpec RepeatedIntFlag(std::string name, std::vector<int32_t>* out, std::string help);
FlagSpec DoubleFlag(std::string name, double* out, std::string help);
FlagSpec OptionalDoubleFlag(std::string name, std::optional<double>* out, std::string help);
FlagSpec DurationFlag(std::string name, std::optional<absl::Duration>* out, std::string help);

}  // namespace textgen::client
