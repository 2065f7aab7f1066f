#include "core/units.hpp"

#include <cmath>
#include <cstdio>

namespace qgossip {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[48];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

std::string format_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  char buf[48];
  if (bytes < 1000) return std::to_string(bytes) + " B";
  if (b < 1e6) std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else if (b < 1e9) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  return buf;
}

}  // namespace qgossip
