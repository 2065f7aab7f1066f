// peer_failures (node/run/peer_failures.hpp) on news that reaches a node late, after a return: a
// cut path that comes back delivers what its connections held (docs/failures.md, "A cut path").
// Such news must change nothing; the same news sent after the return must still count.
#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/state_io.hpp"
#include "node/config/config.hpp"
#include "node/membership/notice.hpp"
#include "node/run/peer_failures.hpp"
#include "topology/graph.hpp"
#include "topology/topology.hpp"

using namespace qgossip;

namespace {

run_config continuing() {
  run_config c;
  c.network.on_peer_failure = peer_failure_policy::train_on;
  c.topology.weights = weight_kind::uniform;
  return c;
}

// A ring of 8; rank's exchange talks to its two neighbours. No exchange attached: nothing is sent.
peer_failures node(int rank) {
  const topology t = make_topology(qgossip::ring(8), weight_kind::uniform);
  peer_failures f(continuing(), t, rank, {(rank + 7) % 8, (rank + 1) % 8});
  f.allow_rejoining();
  return f;
}

std::string left_notice(int rank, std::uint64_t round) {
  const notice_item i{
      .what = notice_item::kind::left, .rank = rank, .round = round, .cause = "its link closed"};
  return encode_notice(std::span(&i, 1));
}

status hear(peer_failures& f, int from, const std::string& payload) {
  return f.on_notice(from, std::as_bytes(std::span(payload.data(), payload.size())));
}

}  // namespace

TEST_CASE("peer_failures: a neighbour's word that it dropped this node, from before its return, is stale") {
  // Rank 4 dropped rank 3 at round 47 (a cut) and admitted it again at round 1962. Rank 3's notice
  // "rank 4 left at round 47", queued on its old connection during the cut, arrives after that.
  peer_failures f = node(4);
  f.begin_round(47);
  CHECK(f.on_peer_failure(3, "nothing moved to or from its host"));
  CHECK(f.members().departed(3));
  f.rejoined(3, 1962, 2, 4);
  CHECK_FALSE(f.members().departed(3));
  CHECK(hear(f, 3, left_notice(4, 47)).is_ok());
  // The same word sent after rank 3's return is news: this node rejoins.
  const status later = hear(f, 3, left_notice(4, 1970));
  CHECK(later.code() == errc::rejoin);
}

TEST_CASE("peer_failures: a joiner that fails between its accept and its join round is a departure") {
  // Rank 4 accepted rank 3 back from round 1962 while at round 1960; rank 3's link fails before
  // 1962. The exchange drops it, so the membership must too (or the next remix names a neighbour
  // the algorithm has forgotten: an internal error).
  peer_failures f = node(4);
  f.begin_round(1000);
  CHECK(f.on_peer_failure(3, "its link closed"));
  f.rejoined(3, 1962, 2, 4);
  f.begin_round(1960);
  CHECK(f.on_peer_failure(3, "its link closed"));
  CHECK(f.members().departed(3));
}

TEST_CASE("peer_failures: after this node's own return, departures older than it are stale news") {
  // Rank 2 rejoined at round 1989 admitted by rank 1 (and rank 3). A notice that rank 3 left at
  // round 412, forwarded to it before the cut and delivered late, is older than its return.
  peer_failures f = node(2);
  const std::vector<std::pair<int, int>> admitted{{1, 2}, {3, 2}};
  f.joined_at(1989, admitted);
  CHECK(hear(f, 1, left_notice(3, 412)).is_ok());
  CHECK_FALSE(f.members().departed(3));
  CHECK(hear(f, 1, left_notice(2, 1500)).is_ok());  // nor its own departure from before its return
  // A departure after the return counts.
  CHECK(hear(f, 1, left_notice(3, 1995)).is_ok());
  CHECK(f.members().departed(3));
}

TEST_CASE(
    "peer_failures: a neighbour dropped for a refused train message is proven hostile, and only that one") {
  peer_failures f = node(4);
  f.begin_round(10);
  // The inbox refused its message: the exchange calls it a failure, naming why.
  CHECK(f.on_peer_failure(5, "sent a train message for iteration 10 that does not decode (not finite)"));
  CHECK(f.proven_hostile(5));
  CHECK(f.on_peer_failure(3, "its link closed"));  // a failure without a refused message
  CHECK_FALSE(f.proven_hostile(3));
  CHECK(f.refused_by_this_node() == std::vector<int>{5});
}

TEST_CASE("peer_failures: a resumed node still knows whom it dropped for a refused message") {
  // Robust mixing tolerates one fewer hostile neighbour while such a rank is out; a node resumed
  // from its checkpoint must not forget it (it would tolerate the full count again).
  peer_failures f = node(4);
  f.begin_round(10);
  CHECK(f.on_peer_failure(5, "sent a train message for iteration 10 that does not decode (qsgd: NaN scale)"));
  state_writer out;
  f.save_state(out);
  const std::vector<std::byte> bytes = out.take();
  peer_failures resumed = node(4);
  state_reader in(bytes, "test");
  resumed.load_state(in);
  CHECK(resumed.proven_hostile(5));
  CHECK(resumed.refused_by_this_node() == std::vector<int>{5});
}

TEST_CASE(
    "peer_failures: a departure learnt from a neighbour for a message that does not decode marks the rank "
    "too") {
  // Rank 4 learns from rank 3 that rank 5 was dropped for such a message: rank 5 may ask rank 4 to
  // admit it (it dropped it on that word, before its own copy of the message came), and must be
  // refused as rank 3 would refuse it.
  peer_failures f = node(4);
  f.begin_round(3);
  const notice_item refused{
      .what = notice_item::kind::left,
      .rank = 5,
      .round = 2,
      .cause = "sent a train message for iteration 2 that does not decode (qsgd: NaN scale)"};
  const std::string payload = encode_notice(std::span(&refused, 1));
  CHECK(hear(f, 3, payload).is_ok());
  CHECK(f.members().departed(5));
  CHECK(f.proven_hostile(5));
  CHECK_FALSE(f.proven_hostile(3));
  // Not by this node: it does not lower this node's guard (rank 3's word could name an honest rank).
  CHECK(f.refused_by_this_node().empty());
}
