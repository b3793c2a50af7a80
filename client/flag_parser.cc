#include "client/flag_parser.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace textgen::client {
namespace {

const FlagSpec* FindSpec(const std::vector<FlagSpec>& specs, absl::string_view name) {
  for (const FlagSpec& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                      const std::vector<FlagSpec>& specs) {
  ParsedArgs parsed;
  bool flags_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_ended || arg == "-" || arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    if (arg[1] != '-') {
      // A lone dash followed by digits is a negative number, e.g. a token id bias target.
      int64_t unused;
      if (absl::SimpleAtoi(arg, &unused)) {
        parsed.positional.push_back(arg);
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", arg, " (flags are spelled --name)"));
    }
    absl::string_view body = absl::string_view(arg).substr(2);
    std::optional<absl::string_view> inline_value;
    if (size_t eq = body.find('='); eq != absl::string_view::npos) {
      inline_value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const FlagSpec* spec = FindSpec(specs, body);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", body));
    }
    absl::Status status;
    if (spec->value_name.empty()) {
      if (inline_value.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", body, " takes no value, got '", *inline_value, "'"));
      }
      status = spec->set("");
    } else if (inline_value.has_value()) {
      status = spec->set(*inline_value);
    } else {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", body, " needs a value (", spec->value_name, ")"));
      }
      status = spec->set(args[++i]);
    }
    if (!status.ok()) return status;
  }
  return parsed;
}

std::string FormatUsage(absl::string_view command, absl::string_view synopsis,
                        absl::string_view description, const std::vector<FlagSpec>& specs) {
  std::string out =
      absl::StrCat("Usage: textgen ", command, " ", synopsis, "\n\n", description, "\n\nFlags:\n");
  for (const FlagSpec& spec : specs) {
    std::string left = absl::StrCat("--", spec.name);
    if (!spec.value_name.empty()) absl::StrAppend(&left, " ", spec.value_name);
    absl::StrAppendFormat(&out, "  %-30s %s\n", left, spec.help);
  }
  absl::StrAppendFormat(&out, "  %-30s %s\n", "--help", "show this help");
  return out;
}

absl::StatusOr<int64_t> ParseInt(absl::string_view flag, absl::string_view value) {
  int64_t result;
  if (!absl::SimpleAtoi(value, &result)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected an integer, got '", value, "'"));
  }
  return result;
}

absl::StatusOr<uint64_t> ParseUint(absl::string_view flag, absl::string_view value) {
  uint64_t result;
  if (value.empty() || value[0] == '-' || !absl::SimpleAtoi(value, &result)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected a non-negative integer, got '", value, "'"));
  }
  return result;
}

absl::StatusOr<double> ParseDouble(absl::string_view flag, absl::string_view value) {
  double result;
  if (!absl::SimpleAtod(value, &result) || !std::isfinite(result)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected a finite number, got '", value, "'"));
  }
  return result;
}

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag, absl::string_view value) {
  absl::Duration duration;
  double seconds;
  if (absl::SimpleAtod(value, &seconds) && std::isfinite(seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(value, &duration)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": expected a duration like 30s, 1.5m or 250ms, got '", value, "'"));
  }
  if (duration <= absl::ZeroDuration() || duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": duration must be positive and finite, got '", value, "'"));
  }
  return duration;
}

FlagSpec BoolFlag(std::string name, bool* out, std::string help) {
  return {std::move(name), "", std::move(help), [out](absl::string_view) {
            *out = true;
            return absl::OkStatus();
          }};
}

FlagSpec StringFlag(std::string name, std::string* out, std::string value_name, std::string help) {
  return {std::move(name), std::move(value_name), std::move(help), [out](absl::string_view v) {
            *out = std::string(v);
            return absl::OkStatus();
          }};
}

FlagSpec RepeatedStringFlag(std::string name, std::vector<std::string>* out, std::string value_name,
                            std::string help) {
  return {std::move(name), std::move(value_name), std::move(help), [out](absl::string_view v) {
            out->emplace_back(v);
            return absl::OkStatus();
          }};
}

FlagSpec IntFlag(std::string name, int64_t* out, int64_t min, int64_t max, std::string help) {
  std::string flag = name;
  return {std::move(name), "N", std::move(help),
          [out, min, max, flag](absl::string_view v) -> absl::Status {
            absl::StatusOr<int64_t> parsed = ParseInt(flag, v);
            if (!parsed.ok()) return parsed.status();
            if (*parsed < min || *parsed > max) {
              return absl::InvalidArgumentError(
                  absl::StrFormat("--%s must be in [%d, %d], got %d", flag, min, max, *parsed));
            }
            *out = *parsed;
            return absl::OkStatus();
          }};
}

FlagSpec OptionalUintFlag(std::string name, std::optional<uint64_t>* out, std::string help) {
  std::string flag = name;
  return {std::move(name), "N", std::move(help), [out, flag](absl::string_view v) -> absl::Status {
            absl::StatusOr<uint64_t> parsed = ParseUint(flag, v);
            if (!parsed.ok()) return parsed.status();
            *out = *parsed;
            return absl::OkStatus();
          }};
}

FlagSpec RepeatedIntFlag(std::string name, std::vector<int32_t>* out, std::string help) {
  std::string flag = name;
  return {std::move(name), "ID", std::move(help), [out, flag](absl::string_view v) -> absl::Status {
            int32_t parsed;
            if (!absl::SimpleAtoi(v, &parsed)) {
              return absl::InvalidArgumentError(
                  absl::StrCat("--", flag, ": expected a 32-bit integer, got '", v, "'"));
            }
            out->push_back(parsed);
            return absl::OkStatus();
          }};
}

FlagSpec DoubleFlag(std::string name, double* out, std::string help) {
  std::string flag = name;
  return {std::move(name), "X", std::move(help), [out, flag](absl::string_view v) -> absl::Status {
            absl::StatusOr<double> parsed = ParseDouble(flag, v);
            if (!parsed.ok()) return parsed.status();
            *out = *parsed;
            return absl::OkStatus();
          }};
}

FlagSpec OptionalDoubleFlag(std::string name, std::optional<double>* out, std::string help) {
  std::string flag = name;
  return {std::move(name), "X", std::move(help), [out, flag](absl::string_view v) -> absl::Status {
            absl::StatusOr<double> parsed = ParseDouble(flag, v);
            if (!parsed.ok()) return parsed.status();
            *out = *parsed;
            return absl::OkStatus();
          }};
}

FlagSpec DurationFlag(std::string name, std::optional<absl::Duration>* out, std::string help) {
  std::string flag = name;
  return {std::move(name), "DURATION", std::move(help),
          [out, flag](absl::string_view v) -> absl::Status {
            absl::StatusOr<absl::Duration> parsed = ParseDurationFlag(flag, v);
            if (!parsed.ok()) return parsed.status();
            *out = *parsed;
            return absl::OkStatus();
          }};
}

FlagSpec FileFlag(std::string name, std::string* out, bool trim, std::string help) {
  const std::string flag = "--" + name;
  return FlagSpec{std::move(name), "FILE", std::move(help),
                  [out, flag, trim](absl::string_view path) -> absl::Status {
                    std::ifstream in{std::string(path), std::ios::binary};
                    if (!in) {
                      return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
                    }
                    std::ostringstream text;
                    text << in.rdbuf();
                    *out = std::move(text).str();
                    if (trim) *out = std::string(absl::StripTrailingAsciiWhitespace(*out));
                    return absl::OkStatus();
                  }};
}

}  // namespace textgen::client
