#pragma once
// Membership news, dispatched by kind (docs/design.md, "Notices"), as the exchange's protocols are
// registered by message kind (gossip/exchange/core.hpp handle_kind). Two channels carry the items of
// node/membership/notice.hpp: notices (message_kind::notice: left, degree, joined, start, halt) and
// join messages (message_kind::join: join, offer, accept, refuse, and the left items of an offer).
// A part of the node registers once, at its construction, for the kinds it answers on a channel;
// the board parses each payload as hostile input, leaves out stale news (below), and hands each run
// of consecutive items of one part to that part, in the payload's order. An item of a kind no part
// registered for on its channel makes the whole payload errc::corrupt (the exchange rejects it); so
// does a payload that does not parse. A part's error ends the dispatch with it.
//
// Stale news: a `left` item in a notice is left out when it is older than a return by more than the
// membership's stale_margin() rounds: older than this node's own latest return (returned()), or the
// sender's word that it dropped this node from before the sender itself came back. Such news comes
// from a link's stale queue after a cut path healed (docs/failures.md, "A cut path"); its neighbours'
// offers told the node what holds since. A left item in a join message (an offer's) is not news of
// the same kind: the returns part takes it as it is.
// Not thread-safe: the node loop's thread (the exchange's callbacks run there).
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "gossip/exchange/link_control.hpp"
#include "node/membership/membership.hpp"
#include "node/membership/notice.hpp"

namespace qgossip {

enum class notice_channel { notice, join };

// Where a run of items came from: the sender, the channel, and (join messages) the header's count,
// the sender's model size.
struct notice_source {
  int from = -1;
  notice_channel channel = notice_channel::notice;
  std::uint64_t model_size = 0;
};

// A part that answers some kinds of items (node/run/departures.hpp, returns.hpp, start_check.hpp,
// halt_agreement.hpp).
class notice_part {
 public:
  virtual ~notice_part() = default;
  // Consecutive items of one payload, every one of a kind this part registered for on
  // source.channel, stale news already left out; links: what the part may do in answer. An error
  // ends the dispatch (and the exchange's wait) with it.
  virtual status on_items(const notice_source& source, std::span<const notice_item> items,
                          link_control& links) = 0;
};

class notice_board {
 public:
  // members: this node's view of the run (read for the stale rule); n: the run's nodes.
  notice_board(int rank, int n, const membership& members);
  notice_board(const notice_board&) = delete;
  notice_board& operator=(const notice_board&) = delete;

  // part answers items of `kind` on `channel` from now on. Throws invariant_error when another
  // part has the kind there already.
  void handle(notice_channel channel, notice_item::kind kind, notice_part& part);

  // This node rejoined the run at round `from` (the returns part): news older than it is stale.
  void returned(std::uint64_t from) { returned_at_ = from; }

  // The exchange's callbacks (exchange_events::notice and join, through node/run/link_events).
  [[nodiscard]] status notice(int from, std::span<const std::byte> payload, link_control& links);
  [[nodiscard]] status join_message(int from, std::uint64_t model_size, std::span<const std::byte> payload,
                                    link_control& links);

 private:
  [[nodiscard]] status dispatch(const notice_source& source, std::span<const std::byte> payload,
                                link_control& links);
  [[nodiscard]] bool stale(int from, const notice_item& item) const;
  [[nodiscard]] notice_part* part_for(notice_channel channel, notice_item::kind kind) const;

  int rank_;
  int n_;
  const membership& members_;
  std::uint64_t returned_at_ = 0;  // returned()
  // By channel, then kind (notice_item::kind's order): the part that answers it, or null.
  std::vector<std::vector<notice_part*>> parts_;
};

}  // namespace qgossip
