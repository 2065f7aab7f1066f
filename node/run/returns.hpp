#pragma once
// Rejoining (docs/failures.md, "Rejoining"; network.on_peer_failure: continue, synchronous gossip),
// one part of a node's membership (docs/design.md, "Notices"): a node the run dropped — it died and
// was restarted with the same command, started past the others' start time-out, was stopped long
// enough to be declared lost, or was cut off — comes back from its live neighbours, with no
// coordinator. It answers `joined` notices and the join messages' items (node/membership/notice.hpp):
//   joiner R -> every neighbour   join <last round>          at start-up, and when told it was dropped
//   neighbour j -> R              offer <P> <degree>, and     j dropped R (a join from a neighbour it
//                                 left <rank> ... items        had heard from means R restarted: a
//                                                              departure); P = its round + 2, which it
//                                                              will not begin before R answers (at
//                                                              most 2 s, and longer for large
//                                                              messages); the departures j knows
//   R -> each offering j          accept <T> <degree>        T = the largest P; R's degree from T =
//                                                            the number of offers
//   j, on accept                  joined R T and its new degree to its other neighbours (forwarded
//                                 hop by hop); the exchange expects R's messages from round T on
//   j, at the start of round T    sends its model and public state (join_state), waits for R's,
//                                 admits R (rejoinable::admit) with the row of round T
//   R                             waits for the state of its donor (the lowest-ranked j), restarts
//                                 from its model (rejoinable::restart; optimizer and outer momentum
//                                 start at zero, the batch order at round T's position), sends its
//                                 own state to each j, admits each, and runs round T
// So both ends of every edge re-create their copies of each other from a full-state message and
// switch their weights in the same round. A neighbour refuses (refuse <cause>, logged once at each
// end) a joiner with another model size, an accept without a standing offer, for a round before the
// offered one or one it has begun (its offer was withdrawn: the joiner asks again), or past the
// run's end, and a joiner proven hostile (node/run/departures.hpp); another run id or key never gets
// this far (the wire's run id check, CURVE). A joiner that every live neighbour refuses stops with
// exit 2. The joiner's side is node/run/returns_join.cpp. Not thread-safe: the node loop's thread.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "gossip/exchange.hpp"
#include "gossip/exchange/link_control.hpp"
#include "node/membership/membership.hpp"
#include "node/membership/notice_board.hpp"
#include "node/run/departures.hpp"
#include "topology/topology.hpp"

namespace qgossip {

class algorithm;
class rejoinable;
class run_log;

class returns final : public notice_part {
 public:
  // rounds: the run's last round; model_size: this node's model, in floats; message_bytes: its largest
  // train message (the codec's bound), which times the offers' waits (offer_wait); members: this node's
  // view of the run (written here as nodes come back); news: the departures part, which tells the
  // live peers and knows who left. Registers for joined notices and every join-message item.
  // Throws invariant_error for an algorithm that cannot rejoin (algorithms/capabilities.hpp).
  returns(int rank, std::uint64_t rounds, std::uint64_t model_size, std::uint64_t message_bytes, const topology& topo,
          bool reweight,
          membership& members, std::vector<int> neighbours, departures& news, algorithm& alg, run_log& log,
          notice_board& board);

  status on_items(const notice_source& source, std::span<const notice_item> items, link_control& links) override;

  // exchange_events::foreign_join: a neighbour's join of another run is refused, under its run id.
  void on_foreign_join(int from, std::uint64_t run_id, link_control& links);
  // exchange_events::dropped_peer_heard: a message from a neighbour this node dropped arrived, so
  // the path to it moves again after a cut (docs/failures.md, "A cut path"). A node in a smaller
  // part of the split graph (membership::cut_off) then rejoins as a restarted node does:
  // errc::rejoin. Otherwise ok.
  [[nodiscard]] status dropped_peer_heard(int from);

  // Start-up: asks every neighbour to admit this node (a fresh run's neighbours ignore it).
  void announce(std::uint64_t last_round, link_control& links);
  // Before round t's computation (and before departures::begin_round): admits every joiner due at
  // round t. A joiner that fails meanwhile is a departure again; the status is not ok only when the
  // node must stop (departures::failed said so, or a stop request).
  [[nodiscard]] status admit_due(std::uint64_t t, exchange& ex);
  // The joiner's side, after a round ended with errc::rejoin at round `current`: gathers the
  // offers, accepts, exchanges states and admits the neighbours. On ok, `restart_at` is the round
  // T the node runs next (its model is the donor's from T on). errc::refused (exit 2): every live
  // neighbour refused; other errors: the exchange's.
  [[nodiscard]] status join(std::uint64_t current, std::uint64_t& restart_at, exchange& ex);

  // "3 from round 148 (at 12.4 s, admitted by this node); this node from round 300 (at 20.1 s, from
  // rank 2's model); ..." for the node's summary ("rejoins"): every return this node saw, with the
  // seconds since this node started.
  [[nodiscard]] const std::string& describe() const { return account_; }

 private:
  struct offer {
    std::uint64_t round = 0;
    int degree = 0;
  };
  struct admission {
    std::uint64_t round = 0;
    int degree = 0;
  };
  // The join-message items of one message from `source.from`.
  status on_join_items(const notice_source& source, std::span<const notice_item> items, link_control& links);
  // A departed rank comes back from round `from` on (its accept of this node's offer, degree = its
  // degree then; or news from told_by): recorded, forwarded hop by hop ("joined"), this node's new
  // degree announced, logged.
  void rejoined(int rank, std::uint64_t from, std::optional<int> degree, int told_by, link_control& links);
  // items as a join message to `to` (stamped with run_id when given; else this run's).
  status reply(int to, std::span<const notice_item> items, link_control& links,
               std::optional<std::uint64_t> run_id = std::nullopt);
  // Says once why, and sends `refuse <cause>` (stamped with run_id: a joiner of another run).
  status refuse(int to, const std::string& cause, link_control& links,
                std::optional<std::uint64_t> run_id = std::nullopt);
  status on_request(int from, link_control& links);
  status on_accept(int from, const notice_item& accept, link_control& links);
  [[nodiscard]] status hold_for_offers(std::uint64_t t, exchange& ex);
  [[nodiscard]] std::vector<float> own_state() const;
  // Waits for states with wait_once(deadline) until it returns other than errc::timeout: the deadline
  // is kStateQuiet past the latest state chunk that arrived (exchange::state_bytes_received), so a
  // large state (8 GB at 1 B parameters) is waited for while it keeps arriving, and a stalled one
  // gives up after kStateQuiet as before; before the first chunk, after first_quiet.
  [[nodiscard]] static status wait_for_states(exchange& ex, std::chrono::milliseconds first_quiet,
                                              const std::function<status(std::chrono::steady_clock::time_point)>& wait_once);
  static constexpr std::chrono::seconds kStateQuiet{30};
  [[nodiscard]] status admit(int peer, std::uint64_t t, exchange& ex);
  // Installs peer's state (its model, then its public state) for round t: admits it.
  [[nodiscard]] status install(int peer, std::uint64_t t, const inbound_message& theirs);
  // The joiner's side (node/run/returns_join.cpp).
  [[nodiscard]] status wait(exchange& ex, std::chrono::steady_clock::time_point deadline,
                            const std::function<bool()>& done);
  [[nodiscard]] status gather_offers(std::uint64_t current, exchange& ex);
  [[nodiscard]] status exchange_states(std::uint64_t T, const std::vector<int>& accepted, exchange& ex);
  [[nodiscard]] status attempt(std::uint64_t current, std::uint64_t& restart_at, exchange& ex, bool& again);
  // This node rejoins at round `from`, admitted by `admitted` (rank, its degree then).
  void joined_at(std::uint64_t from, std::span<const std::pair<int, int>> admitted, link_control& links);
  // The account of returns (describe()): one more, "text (at S s".
  void note(const std::string& text);

  int rank_;
  std::uint64_t rounds_;
  std::uint64_t model_size_;
  // A round's train messages on this node's links (one to and one from each neighbour) at the slowest
  // a message moves (gossip/transport.hpp): how late a busy neighbour's offer may come, beyond the
  // fixed waits that serve small models (kOfferWindow, kOfferHold).
  std::chrono::milliseconds offer_wait_;
  const membership initial_;  // the topology's, for a node that rejoins after a cut
  membership& members_;
  std::vector<int> neighbours_;
  departures& news_;
  algorithm& alg_;
  rejoinable& rejoin_;  // alg_'s (algorithms/capabilities.hpp)
  run_log& log_;
  notice_board& board_;
  std::uint64_t round_ = 0;                   // the latest round this node began
  std::map<int, admission> due_;              // joiners accepted here, by rank
  std::map<int, std::uint64_t> offered_;      // joiners offered a round here, by rank
  bool joining_ = false;                      // from announce until a join's end, or a round done
  std::uint64_t announced_at_ = 0;            // the round announce() named
  bool in_join_ = false;                      // inside join(): offers do not end a round
  bool healed_cut_ = false;                   // dropped_peer_heard asked to rejoin; join forgets the cut
  std::map<int, offer> offers_;               // the joiner's: by neighbour
  std::map<int, std::string> refusals_;       // the joiner's: by neighbour
  std::set<std::string> refusals_logged_;     // each cause said once
  std::string account_;                       // describe()
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace qgossip
