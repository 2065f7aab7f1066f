#pragma once
// Durations and byte counts as a person reads them, for logs and the launcher's display.
#include <cstdint>
#include <string>

namespace qgossip {

// "1h02m", "1m12s", "45s"; "?" for a negative or non-finite duration.
[[nodiscard]] std::string format_duration(double seconds);
// "950 B", "123.4 kB", "123.4 MB", "12.3 GB" (decimal units, like the per-node "MB sent" column).
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

}  // namespace qgossip
