// The network:, output: and node: sections (node/config/sections.hpp).
#include <cstdlib>

#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"

namespace qgossip {

namespace {

void read_timeouts(yaml_reader& n, network_config& nw) {
  nw.start_timeout_s = get_positive_double(n, "start_timeout_s", nw.start_timeout_s, 0.01, 86400, "the start time-out");
  nw.round_timeout_s = get_positive_double(n, "round_timeout_s", nw.round_timeout_s, 0.01, 86400, "the round time-out");
  nw.linger_s = get_double_in(n, "linger_s", nw.linger_s, 0.0, 3600);
  if (auto e = n.map("emulate")) {
    nw.emulate_rate_mbit = get_double_in(*e, "rate_mbit", nw.emulate_rate_mbit, 0.0, 1e6);
    nw.emulate_delay_ms = get_double_in(*e, "delay_ms", nw.emulate_delay_ms, 0.0, 3.6e6);
    e->finish();
  }
  nw.pace_mbit = get_double_in(n, "pace_mbit", nw.pace_mbit, 0.0, 1e6);
}

// network.stall_timeout_s: seconds >= 0, or `none`.
std::optional<double> read_stall_timeout(yaml_reader& n, std::optional<double> def) {
  auto v = n.child("stall_timeout_s");
  if (!v) return def;
  if (v->IsScalar() && v->Scalar() == "none") return std::nullopt;
  const std::string what = n.key_path("stall_timeout_s") + ": expected seconds >= 0 (at most 1e7) or 'none'";
  if (!v->IsScalar()) throw n.error_at(*v, what);
  const std::string text = v->Scalar();
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(x >= 0 && x <= 1e7)) throw n.error_at(*v, what + ", got '" + text + "'");
  return x;
}

void read_failures(yaml_reader& n, network_config& nw) {
  nw.on_peer_failure = get_choice(n, "on_peer_failure", nw.on_peer_failure);
  nw.heartbeat_s = get_double_in(n, "heartbeat_s", nw.heartbeat_s, 0.0, 3600);
  if (nw.heartbeat_s > 0 && nw.heartbeat_s < 0.05)
    throw n.error_at(*n.child("heartbeat_s"), n.key_path("heartbeat_s") + ": expected 0 (off) or at least 0.05 s, received " +
                                                  std::to_string(nw.heartbeat_s));
  nw.stall_timeout_s = read_stall_timeout(n, nw.stall_timeout_s);
  nw.max_rejected = get_int_in(n, "max_rejected", nw.max_rejected, 0, 1 << 30);
  nw.max_message_mib = get_positive_double(n, "max_message_mib", nw.max_message_mib, 1.0 / 1024, 4095,
                                           "the largest chunk of a state, in MiB");
  nw.restart = get_int_in(n, "restart", nw.restart, 0, 1000);
}

}  // namespace

void read_network(yaml_reader& r, run_config& c) {
  if (auto n = r.map("network")) {
    network_config& nw = c.network;
    nw.transport = get_choice(*n, "transport", nw.transport);
    read_timeouts(*n, nw);
    nw.shaping = n->get_string("shaping", nw.shaping);
    nw.security = get_choice(*n, "security", nw.security);
    nw.keys_dir = n->get_string("keys_dir", nw.keys_dir);
    read_failures(*n, nw);
    n->finish();
  }
  if (auto o = r.map("output")) {
    c.output_dir = o->get_string("dir", c.output_dir);
    c.save_model = o->get_bool("model", c.save_model);
    o->finish();
  }
  if (auto h = r.map("node")) {
    c.threads = get_int_in(*h, "threads", c.threads, 0, 1024);
    h->finish();
  }
}

// keys_dir is host-local (hosts may keep their keys apart), restart the launcher's, stall_timeout_s
// each node's own tolerance: none is in the canonical config.
void emit_network(YAML::Emitter& y, const network_config& nw) {
  y << YAML::BeginMap << YAML::Key << "transport" << YAML::Value << std::string(name_of(nw.transport)) << YAML::Key
    << "start_timeout_s" << YAML::Value << nw.start_timeout_s << YAML::Key << "round_timeout_s" << YAML::Value
    << nw.round_timeout_s << YAML::Key << "linger_s" << YAML::Value << nw.linger_s << YAML::Key << "emulate"
    << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "rate_mbit" << YAML::Value << nw.emulate_rate_mbit
    << YAML::Key << "delay_ms" << YAML::Value << nw.emulate_delay_ms << YAML::EndMap << YAML::Key << "pace_mbit"
    << YAML::Value << nw.pace_mbit << YAML::Key << "shaping" << YAML::Value << nw.shaping << YAML::Key << "security"
    << YAML::Value << std::string(name_of(nw.security)) << YAML::Key << "on_peer_failure" << YAML::Value
    << std::string(name_of(nw.on_peer_failure)) << YAML::Key << "heartbeat_s" << YAML::Value << nw.heartbeat_s
    << YAML::Key << "max_rejected" << YAML::Value << nw.max_rejected << YAML::Key << "max_message_mib" << YAML::Value
    << nw.max_message_mib << YAML::EndMap;
}

}  // namespace qgossip
