#pragma once
// Run-time faults travel as values (docs/errors.md): a `status` is either ok or carries an error
// code and a human-readable message. Nothing that returns a status throws for that fault.
#include <string>
#include <string_view>
#include <utility>

namespace qgossip {

enum class errc {
  ok = 0,
  corrupt,     // bytes that fail validation: bad header field, checksum, truncated payload
  timeout,     // a deadline passed (a silent peer)
  io,          // the transport failed (socket error, address in use, peer gone)
  invalid,     // a caller passed something impossible (wrong size, unknown peer)
  cancelled,   // shut down by a signal or by the caller
  peer_lost,   // a link to a peer was lost; transport_liveness::take_lost_peers names it
  rejoin,      // this node was dropped from the run and is offered a way back (docs/failures.md)
  refused,     // the peers refuse this node (its key, its run): it cannot take part (exit 2)
};

std::string_view to_string(errc code);

class [[nodiscard]] status {
 public:
  status() = default;
  static status ok() { return status(); }
  static status error(errc code, std::string message) { return status(code, std::move(message)); }

  bool is_ok() const { return code_ == errc::ok; }
  explicit operator bool() const { return is_ok(); }
  errc code() const { return code_; }
  const std::string& message() const { return message_; }
  // "timeout: no message from rank 3 for iteration 17 within 5000 ms"
  std::string to_string() const;

 private:
  status(errc code, std::string message) : code_(code), message_(std::move(message)) {}
  errc code_ = errc::ok;
  std::string message_;
};

}  // namespace qgossip
