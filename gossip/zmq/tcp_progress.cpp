#include "gossip/zmq/tcp_progress.hpp"

// The kernel's own struct tcp_info (glibc's <netinet/tcp.h> lacks the byte counters); the two
// headers cannot be included together, so this file includes only the kernel's.
#include <netinet/in.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace qgossip {

std::optional<tcp_progress> read_tcp_progress(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  if (len < offsetof(tcp_info, tcpi_bytes_sent) + sizeof info.tcpi_bytes_sent) return std::nullopt;
  int outstanding = 0;
  if (ioctl(fd, SIOCOUTQ, &outstanding) != 0 || outstanding < 0) return std::nullopt;
  tcp_progress p;
  p.bytes_received = info.tcpi_bytes_received;
  p.bytes_acked = info.tcpi_bytes_acked;
  p.bytes_sent = info.tcpi_bytes_sent;
  p.outstanding = static_cast<std::uint64_t>(outstanding);
  p.rto = std::chrono::microseconds(info.tcpi_rto);
  p.delivered = info.tcpi_delivered;  // before tcpi_bytes_sent: within the length checked above
  if (len >= offsetof(tcp_info, tcpi_snd_wnd) + sizeof info.tcpi_snd_wnd) p.window = info.tcpi_snd_wnd;  // Linux 6.2
  int unsent = 0;
  if (ioctl(fd, SIOCOUTQNSD, &unsent) != 0 || unsent < 0) return std::nullopt;
  p.unsent = static_cast<std::uint64_t>(unsent);
  std::uint32_t meminfo[SK_MEMINFO_VARS] = {};
  socklen_t meminfo_len = sizeof meminfo;
  if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, meminfo, &meminfo_len) == 0 &&
      meminfo_len >= (SK_MEMINFO_WMEM_ALLOC + 1) * sizeof(std::uint32_t))
    p.local = meminfo[SK_MEMINFO_WMEM_ALLOC];
  return p;
}

}  // namespace qgossip
