#pragma once

// The one place tests find ../shared (the project's shared reference files) and decide what a
// missing file means. TEXTGEN_SHARED_DIR (set by ctest for every test) overrides the
// compile-time default; an empty value counts as unset.
//
// A test that needs a shared file starts with TEXTGEN_REQUIRE_SHARED_FILE(path):
//   - ../shared absent: the test is skipped and says why (a checkout without it still passes);
//   - ../shared present but the file missing: the test FAILS, so a CI run with ../shared
//     beside it can never pass by skipping the comparisons it exists to make.

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace textgen::test_support {

inline std::string SharedDir() {
  const char* env = std::getenv("TEXTGEN_SHARED_DIR");
  return env != nullptr && *env != '\0' ? env : TEXTGEN_SHARED_DIR;
}

// A file under ../shared/models, e.g. SharedModelPath("stories260K/stories260K.gguf").
inline std::string SharedModelPath(const std::string& relative) {
  return SharedDir() + "/models/" + relative;
}

// ../shared counts as present when its models/ folder exists.
inline bool SharedDirPresent() { return std::filesystem::is_directory(SharedDir() + "/models"); }

}  // namespace textgen::test_support

// Skips (../shared absent) or fails (../shared present, file missing) unless `path` exists.
// For TEST bodies and SetUp(); returns from the enclosing void function.
#define TEXTGEN_REQUIRE_SHARED_FILE(path)                                                  \
  do {                                                                                     \
    const std::string textgen_required_path_ = (path);                                     \
    if (!std::filesystem::exists(textgen_required_path_)) {                                \
      if (::textgen::test_support::SharedDirPresent()) {                                   \
        GTEST_FAIL() << "../shared is present at " << ::textgen::test_support::SharedDir() \
                     << " but lacks " << textgen_required_path_;                           \
      }                                                                                    \
      GTEST_SKIP() << "needs " << textgen_required_path_ << ": ../shared is absent (set "  \
                   << "TEXTGEN_SHARED_DIR to the shared/ directory)";                      \
    }                                                                                      \
  } while (0)
