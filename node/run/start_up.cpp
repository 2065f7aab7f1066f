#include "node/run/start_up.hpp"

#include <atomic>
#include <sstream>

#include "node/run/run_control.hpp"

namespace qgossip {

namespace {
std::atomic<const char*> g_phase{"starting"};
}  // namespace

void start_up_step(const char* next) {
  if (stop_requested()) throw start_up_interrupted{std::string("before ") + next};
  g_phase.store(next);
}

const char* start_up_phase() { return g_phase.load(); }

std::string mib(std::uint64_t floats) {
  std::ostringstream os;
  os.precision(3);
  os << static_cast<double>(floats) * sizeof(float) / double(1 << 20) << " MiB";
  return os.str();
}

}  // namespace qgossip
