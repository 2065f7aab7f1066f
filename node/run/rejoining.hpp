#pragma once
// Rejoining (docs/failures.md, "Rejoining"; network.on_peer_failure: continue, synchronous gossip):
// a node the run dropped — it died and was restarted with the same command, started past the
// others' start time-out, or was stopped long enough to be declared lost — comes back from its live
// neighbours, with no coordinator. Messages (join messages, gossip/wire.hpp; items of
// node/membership/notice.hpp):
//   joiner R -> every neighbour   join <last round>          at start-up, and when told it was dropped
//   neighbour j -> R              offer <P> <degree>, and     j dropped R (a join from a neighbour it
//                                 left <rank> ... items        had heard from means R restarted: a
//                                                              departure); P = its round + 2, which it
//                                                              will not begin before R answers (at
//                                                              most 2 s); the departures j knows
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
// run's end; another run id or
// key never gets this far (the wire's run id check, CURVE). A joiner that every live neighbour
// refuses stops with exit 2. Not thread-safe: the node loop's thread.
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
#include "gossip/wire.hpp"

namespace qgossip {

class algorithm;
class exchange;
class rejoinable;
class peer_failures;
class run_log;
struct inbound_message;
struct notice_item;

class rejoining {
 public:
  // rounds: the run's last round; model_size: this node's model, in floats.
  rejoining(int rank, std::uint64_t rounds, std::uint32_t model_size, std::vector<int> neighbours);
  void attach(exchange& ex, algorithm& alg, peer_failures& failures, run_log& log);

  // exchange_events::join. At the joiner, an offer while it waits for a round ends that round
  // with errc::rejoin (the node loop then calls join()).
  status on_join(int from, const wire_header& h, std::span<const std::byte> payload);
  // exchange_events::foreign_join: a neighbour's join of another run is refused, under its run id.
  void on_foreign_join(int from, std::uint64_t run_id);
  // Start-up: asks every neighbour to admit this node (a fresh run's neighbours ignore it).
  void announce(std::uint64_t last_round);
  // Before round t's computation (and before peer_failures::begin_round): admits every joiner due
  // at round t. A joiner that fails meanwhile is a departure again; the status is not ok only when
  // the node must stop (on_peer_failure said so, or a stop request).
  [[nodiscard]] status admit_due(std::uint64_t t);
  // The joiner's side, after a round ended with errc::rejoin at round `current`: gathers the
  // offers, accepts, exchanges states and admits the neighbours. On ok, `restart_at` is the round
  // T the node runs next (its model is the donor's from T on). errc::refused (exit 2): every live
  // neighbour refused; other errors: the exchange's.
  [[nodiscard]] status join(std::uint64_t current, std::uint64_t& restart_at);

 private:
  struct offer {
    std::uint64_t round = 0;
    int degree = 0;
  };
  struct admission {
    std::uint64_t round = 0;
    int degree = 0;
  };
  // items as a join message to `to` (stamped with run_id when given; else this run's).
  status reply(int to, std::span<const notice_item> items, std::optional<std::uint64_t> run_id = std::nullopt);
  // Says once why, and sends `refuse <cause>` (stamped with run_id: a joiner of another run).
  status refuse(int to, const std::string& cause, std::optional<std::uint64_t> run_id = std::nullopt);
  status on_request(int from);
  status on_accept(int from, const notice_item& accept);
  [[nodiscard]] status hold_for_offers(std::uint64_t t);
  [[nodiscard]] std::vector<float> own_state() const;
  [[nodiscard]] status admit(int peer, std::uint64_t t);
  // Installs peer's state (its model, then its public state) for round t: admits it.
  [[nodiscard]] status install(int peer, std::uint64_t t, const inbound_message& theirs);
  [[nodiscard]] status wait(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& done);
  [[nodiscard]] status gather_offers(std::uint64_t current);
  [[nodiscard]] status exchange_states(std::uint64_t T, const std::vector<int>& admitted);

  int rank_;
  std::uint64_t rounds_;
  std::uint32_t model_size_;
  std::vector<int> neighbours_;
  exchange* ex_ = nullptr;
  algorithm* alg_ = nullptr;
  rejoinable* rejoin_ = nullptr;  // alg_'s (algorithms/capabilities.hpp)
  peer_failures* failures_ = nullptr;
  run_log* log_ = nullptr;
  std::uint64_t round_ = 0;                   // the latest round this node began
  std::map<int, admission> due_;              // joiners accepted here, by rank
  std::map<int, std::uint64_t> offered_;      // joiners offered a round here, by rank
  bool joining_ = false;                      // from announce until a join's end, or a round done
  std::uint64_t announced_at_ = 0;            // the round announce() named
  bool in_join_ = false;                      // inside join(): offers do not end a round
  std::map<int, offer> offers_;               // the joiner's: by neighbour
  std::map<int, std::string> refusals_;       // the joiner's: by neighbour
  std::set<std::string> refusals_logged_;     // each cause said once
  int attempts_ = 0;
};

}  // namespace qgossip
