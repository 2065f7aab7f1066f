#pragma once
// The payload of a notice (gossip/wire.hpp message_kind::notice): membership news that travels
// outside the rounds, one item per line, ASCII text so a person can read a captured one:
//   left <rank> <round> <cause>     rank left the run; its neighbour noticed during round <round>
//                                    (the cause is not empty)
//                                    (forwarded hop by hop, so every node learns every departure)
//   degree <degree> <from_round>    the sender's degree from round <from_round> on (Metropolis–
//                                    Hastings re-weighting; sent to neighbours only)
// A notice comes from an authenticated neighbour (the exchange checked its header), yet it is parsed
// as hostile input: anything else — an unknown word, a number out of range, a rank outside the run,
// a control character, more than kMaxNoticeBytes — is errc::corrupt and the notice is rejected whole.
// What parses encodes back to the very same bytes (fuzz/notice_fuzz.cpp checks it).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace qgossip {

inline constexpr std::size_t kMaxNoticeBytes = 4096;
inline constexpr std::size_t kMaxCauseBytes = 300;

struct notice_item {
  enum class kind { left, degree };
  kind what = kind::left;
  int rank = -1;              // left: who left
  std::uint64_t round = 0;    // left: when it was noticed; degree: the first round it applies to
  int degree = 0;             // degree: the sender's number of live neighbours
  std::string cause = {};     // left: why (printable ASCII, at most kMaxCauseBytes; longer is cut)
};

// The payload for items. Causes are cut to kMaxCauseBytes and control characters replaced by '?'.
std::string encode_notice(std::span<const notice_item> items);

// Parses a payload from a run of n nodes into out (cleared first).
status parse_notice(std::span<const std::byte> payload, int n, std::vector<notice_item>& out);

}  // namespace qgossip
