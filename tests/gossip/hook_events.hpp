#pragma once
// exchange_events for tests: each event goes to the function of its name when one is set, else
// to the default (gossip/exchange/events.hpp), so a test sets only what it watches. The links a
// callback is handed are the test's own exchange, which the hooks use directly.
#include <chrono>
#include <functional>
#include <span>
#include <string>

#include "gossip/exchange/events.hpp"

namespace qgossip::testing {

struct hook_events final : exchange_events {
  std::function<void(const std::string&)> on_log;
  std::function<bool()> on_stop;
  std::function<status(const wire_header&, std::span<const std::byte>)> on_train;
  std::function<status(const wire_header&, std::span<const std::byte>)> on_early_train;
  std::function<bool(int, const std::string&)> on_peer_failed;
  std::function<status(int, std::span<const std::byte>)> on_notice;
  std::function<status(int, const wire_header&, std::span<const std::byte>)> on_join;
  std::function<void(int, std::uint64_t)> on_foreign_join;
  std::function<void(std::span<const int>, std::chrono::milliseconds)> on_waiting;

  void log(const std::string& line) override {
    if (on_log) on_log(line);
  }
  bool stop_requested() override { return on_stop && on_stop(); }
  status train_message(const wire_header& h, received_bytes& p) override {
    return on_train ? on_train(h, p.bytes()) : status::ok();
  }
  status early_train_message(const wire_header& h, std::span<const std::byte> p) override {
    return on_early_train ? on_early_train(h, p) : status::ok();
  }
  bool peer_failed(int peer, const std::string& why, link_control&) override {
    return on_peer_failed && on_peer_failed(peer, why);
  }
  status notice(int from, std::span<const std::byte> p, link_control&) override {
    return on_notice ? on_notice(from, p) : status::ok();
  }
  status join(int from, const wire_header& h, std::span<const std::byte> p, link_control&) override {
    return on_join ? on_join(from, h, p) : status::ok();
  }
  void foreign_join(int from, std::uint64_t run_id, link_control&) override {
    if (on_foreign_join) on_foreign_join(from, run_id);
  }
  void waiting(std::span<const int> peers, std::chrono::milliseconds waited) override {
    if (on_waiting) on_waiting(peers, waited);
  }
};

}  // namespace qgossip::testing
