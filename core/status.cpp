#include "core/status.hpp"

namespace qgossip {

std::string_view to_string(errc code) {
  switch (code) {
    case errc::ok: return "ok";
    case errc::corrupt: return "corrupt";
    case errc::timeout: return "timeout";
    case errc::io: return "io";
    case errc::invalid: return "invalid";
    case errc::cancelled: return "cancelled";
    case errc::peer_lost: return "peer_lost";
    case errc::rejoin: return "rejoin";
    case errc::refused: return "refused";
  }
  return "unknown";
}

std::string status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(qgossip::to_string(code_)) + ": " + message_;
}

}  // namespace qgossip
