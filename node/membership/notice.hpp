#pragma once
// The payload of a notice (gossip/wire.hpp message_kind::notice) and of a join message
// (message_kind::join): membership news that travels outside the rounds, one item per line, ASCII
// text so a person can read a captured one:
//   left <rank> <round> <cause>     rank left the run; its neighbour noticed during round <round>
//                                    (the cause is not empty; forwarded hop by hop, so every node
//                                    learns every departure)
//   degree <degree> <from_round>    the sender's degree from round <from_round> on (Metropolis–
//                                    Hastings re-weighting; sent to neighbours only)
//   joined <rank> <round>           rank came back: its edges run again from round <round> on
//                                    (forwarded hop by hop, as left)
//   halt <round>                    every node stops after round <round>, its checkpoint written (a
//                                    node that got SIGUSR1 proposes one; the latest proposal wins;
//                                    forwarded hop by hop when it moves a node's halt round)
//   start <size> <hash>             the sender starts the run afresh from a model of <size> values
//                                    whose 64-bit hash (core/hash.hpp) is <hash>, 16 lowercase hex
//                                    digits; every node must start from the same one (sent to
//                                    neighbours only)
// Rejoining (join messages only; docs/failures.md, "Rejoining"):
//   join <round>                    the sender asks to (re)join; <round> is the last it completed (0)
//   offer <round> <degree>          a neighbour that dropped the sender would admit it: the
//                                    neighbour is at round <round>, its degree then <degree>
//   accept <round> <degree>         the joiner takes the offer: the edge restarts at round <round>,
//                                    the joiner's degree from then <degree>
//   refuse <cause>                  the neighbour will not admit the sender, and why
// A notice comes from an authenticated neighbour (the exchange checked its header), yet it is parsed
// as hostile input: anything else — an unknown word, a number out of range, a rank outside the run,
// a control character, more than kMaxNoticeBytes — is errc::corrupt and the notice is rejected whole.
// What parses encodes back to the very same bytes (fuzz/notice_fuzz.cpp checks it).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace qgossip {

inline constexpr std::size_t kMaxNoticeBytes = 4096;
inline constexpr std::size_t kMaxCauseBytes = 300;

struct notice_item {
  enum class kind { left, degree, joined, join, offer, accept, refuse, start, halt };
  kind what = kind::left;
  int rank = -1;              // left, joined: who
  std::uint64_t round = 0;    // left: when it was noticed; degree: the first round it applies to;
                              // joined, accept: the edge's first round; join, offer: the sender's
  int degree = 0;             // degree, offer, accept: the sender's number of live neighbours
  std::uint64_t size = 0;     // start: the number of values of the sender's starting model
  std::uint64_t hash = 0;     // start: its hash
  std::string cause = {};     // left, refuse: why (printable ASCII, at most kMaxCauseBytes; longer is cut)
};

// The item's first word ("left", "offer", ...), for messages.
std::string_view notice_word(notice_item::kind kind);

// The payload for items. Causes are cut to kMaxCauseBytes and control characters replaced by '?'.
std::string encode_notice(std::span<const notice_item> items);

// Parses a payload from a run of n nodes into out (cleared first).
status parse_notice(std::span<const std::byte> payload, int n, std::vector<notice_item>& out);

}  // namespace qgossip
