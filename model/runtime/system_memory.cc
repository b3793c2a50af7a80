#include "model/runtime/system_memory.h"

#include <algorithm>
#include <fstream>
#include <string>

namespace textgen::model {
namespace {

// "MemAvailable:   23456789 kB" from /proc/meminfo.
std::optional<int64_t> MemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t value = 0;
  while (in >> key >> value >> unit) {
    if (key == "MemAvailable:") return value * 1024;
  }
  return std::nullopt;
}

// One number from a cgroup v2 file; nullopt for "max" or when absent.
std::optional<int64_t> CgroupValue(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The cgroup's page cache ("file" in memory.stat): counted in memory.current, yet the kernel
// reclaims it before it would kill anything.
int64_t CgroupFileBytes() {
  std::ifstream in("/sys/fs/cgroup/memory.stat");
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "file") return value;
  }
  return 0;
}

}  // namespace

std::optional<int64_t> AvailableMemoryBytes() {
  std::optional<int64_t> available = MemAvailable();
  const std::optional<int64_t> limit = CgroupValue("/sys/fs/cgroup/memory.max");
  const std::optional<int64_t> used = CgroupValue("/sys/fs/cgroup/memory.current");
  if (limit && used) {
    const int64_t room = std::max<int64_t>(0, *limit - (*used - CgroupFileBytes()));
    available = available ? std::min(*available, room) : room;
  }
  return available;
}

}  // namespace textgen::model
