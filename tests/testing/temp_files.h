#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "gtest/gtest.h"

namespace textgen::test_support {

// A directory of this process's own under gtest's temp dir, removed when the process exits.
// ctest runs the tests side by side, one process each: with a file name two tests share, one
// truncates, rewrites or deletes what the other is reading or has mapped.
class ProcessTempDir {
 public:
  ProcessTempDir()
      : owner_(::getpid()),
        path_((std::filesystem::path(::testing::TempDir()) /
               ("textgen-test-" + std::to_string(owner_)))
                  .string()) {
    std::filesystem::create_directories(path_);
  }
  ~ProcessTempDir() {
    // A forked child that exits normally runs this too; the directory is its parent's.
    if (::getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ProcessTempDir(const ProcessTempDir&) = delete;
  ProcessTempDir& operator=(const ProcessTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  const pid_t owner_;
  const std::string path_;
};

inline const std::string& TestTempDir() {
  static const ProcessTempDir dir;
  return dir.path();
}

// `name` inside TestTempDir(); nothing is created.
inline std::string TestTempPath(std::string_view name) {
  return (std::filesystem::path(TestTempDir()) / name).string();
}

// Writes `text` to TestTempPath(name); returns the path.
inline std::string WriteTempFile(std::string_view name, std::string_view text) {
  const std::string path = TestTempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace textgen::test_support
