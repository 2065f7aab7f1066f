#pragma once
// Reads a TCP connection's progress counters from the kernel (TCP_INFO and SIOCOUTQ), for
// link_liveness. Linux only; the counters it needs (bytes received, acknowledged and sent) exist
// since Linux 4.19.
#include <optional>

#include "gossip/zmq/link_liveness.hpp"

namespace qgossip {

// The counters of the TCP socket fd, or nullopt when fd is not a TCP socket this kernel reports them
// for (closed, not TCP, or a kernel older than 4.19).
[[nodiscard]] std::optional<tcp_progress> read_tcp_progress(int fd);

}  // namespace qgossip
