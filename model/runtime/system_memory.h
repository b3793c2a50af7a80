#pragma once

#include <cstdint>
#include <optional>

namespace textgen::model {

// Bytes this process can still take before the kernel must kill something: the system's
// MemAvailable, lowered to what the cgroup (a container's memory limit) still allows.
// nullopt when neither can be read (not Linux, /proc not mounted).
std::optional<int64_t> AvailableMemoryBytes();

}  // namespace textgen::model
