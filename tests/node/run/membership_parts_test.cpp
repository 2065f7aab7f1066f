// A node's membership parts (node/run/node_membership.hpp) on the news they answer, with a recording
// double for the links (tests/node/run/recording_links.hpp): departures on news that reaches a node
// late, after a return (a cut path that comes back delivers what its connections held:
// docs/failures.md, "A cut path"), proven hostile neighbours, the halt agreement, the start check
// and the admitting side of returns.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/hash.hpp"
#include "core/state_io.hpp"
#include "node/config/config.hpp"
#include "node/log/run_log.hpp"
#include "node/membership/notice.hpp"
#include "node/run/learner.hpp"
#include "node/run/node_membership.hpp"
#include "tests/node/run/recording_links.hpp"
#include "tests/scratch_dir.hpp"
#include "topology/graph.hpp"
#include "topology/topology.hpp"

using namespace qgossip;
using qgossip::testing::recording_links;

namespace {

run_config continuing() {
  run_config c;
  c.network.on_peer_failure = peer_failure_policy::train_on;
  c.topology.weights = weight_kind::uniform;
  return c;
}

// Rank `rank` of a ring of 8 whose exchange talks to its two neighbours, with a D-PSGD model of 4
// values, and returns (nodes come back) unless `stop`.
struct ring_node {
  explicit ring_node(int rank, bool stop = false)
      : config(stop ? run_config{} : continuing()),
        topo(make_topology(qgossip::ring(8), weight_kind::uniform)),
        alg(make_algorithm(algorithm_kind::dpsgd, starting_row(config, topo, rank), std::vector<float>(4, 0.5f))),
        log(dir.dir, rank, false),
        m(config, topo, rank, neighbours(rank), neighbours(rank), !stop, 5000, 4, 16, *alg, log) {}

  static std::vector<int> neighbours(int rank) {
    std::vector<int> both{(rank + 7) % 8, (rank + 1) % 8};
    std::sort(both.begin(), both.end());
    return both;
  }

  status hear(int from, const std::vector<notice_item>& items) {
    const std::string text = encode_notice(items);
    return m.board.notice(from, std::as_bytes(std::span(text.data(), text.size())), links);
  }
  status hear_join(int from, const std::vector<notice_item>& items, std::uint64_t model_size = 4) {
    const std::string text = encode_notice(items);
    return m.board.join_message(from, model_size, std::as_bytes(std::span(text.data(), text.size())), links);
  }

  run_config config;
  topology topo;
  std::unique_ptr<algorithm> alg;
  qgossip::testing::scratch dir{"membership-parts"};
  run_log log;
  recording_links links;
  node_membership m;
};

// Rank `joiner`, dropped by n, comes back through n from round `from` (its join, n's offer, its accept).
void admit_back(ring_node& n, int joiner, std::uint64_t from) {
  REQUIRE(n.hear_join(joiner, {{.what = notice_item::kind::join, .round = 0}}).is_ok());
  REQUIRE(!n.links.joins.empty());
  CHECK(n.links.joins.back().second.rfind("offer ", 0) == 0);
  REQUIRE(n.hear_join(joiner, {{.what = notice_item::kind::accept, .round = from, .degree = 2}}).is_ok());
  REQUIRE_FALSE(n.m.members.departed(joiner));
}

notice_item left_item(int rank, std::uint64_t round, const std::string& cause = "its link closed") {
  return {.what = notice_item::kind::left, .rank = rank, .round = round, .cause = cause};
}

}  // namespace

TEST_CASE("departures: a neighbour's word that it dropped this node, from before its return, is stale") {
  // Rank 4 dropped rank 3 at round 47 (a cut) and admitted it again at round 1962. Rank 3's notice
  // "rank 4 left at round 47", queued on its old connection during the cut, arrives after that.
  ring_node n(4);
  n.m.left.begin_round(47);
  CHECK(n.m.left.failed(3, "nothing moved to or from its host", n.links));
  CHECK(n.m.members.departed(3));
  CHECK(n.links.dropped(3));
  admit_back(n, 3, 1962);
  CHECK(n.links.readmitted == std::vector<std::pair<int, std::uint64_t>>{{3, 1962}});
  CHECK(n.hear(3, {left_item(4, 47)}).is_ok());
  // The same word sent after rank 3's return is news: this node rejoins.
  CHECK(n.hear(3, {left_item(4, 1970)}).code() == errc::rejoin);
}

TEST_CASE("departures: a joiner that fails between its accept and its join round is a departure") {
  // Rank 4 accepted rank 3 back from round 1962 while at round 1960; rank 3's link fails before
  // 1962. The exchange drops it, so the membership must too (or the next remix names a neighbour
  // the algorithm has forgotten: an internal error).
  ring_node n(4);
  n.m.left.begin_round(1000);
  CHECK(n.m.left.failed(3, "its link closed", n.links));
  admit_back(n, 3, 1962);
  n.m.left.begin_round(1960);
  CHECK(n.m.left.failed(3, "its link closed", n.links));
  CHECK(n.m.members.departed(3));
}

TEST_CASE("departures: news of a departure is forwarded to the other live neighbours, with the new degree") {
  ring_node n(4);
  n.m.left.begin_round(12);
  CHECK(n.hear(5, {left_item(6, 11)}).is_ok());
  CHECK(n.m.members.departed(6));
  REQUIRE(n.links.notices.size() == 1);
  CHECK(n.links.notices[0].to == std::vector<int>{3});  // not back to rank 5, who told it
  CHECK(n.links.notices[0].payload.rfind("left 6 11 its link closed\n", 0) == 0);
  CHECK(n.links.notices[0].iteration == 12);
  CHECK(n.hear(5, {left_item(6, 11)}).is_ok());  // known already: not forwarded again
  CHECK(n.links.notices.size() == 1);
}

TEST_CASE("departures: under stop, a neighbour's failure ends the round naming the node that failed first") {
  ring_node n(4, /*stop=*/true);
  CHECK_FALSE(n.m.left.failed(5, "its link closed", n.links));
  const status s = n.hear(3, {left_item(2, 9, "it answered no heartbeat")});
  CHECK(s.code() == errc::peer_lost);
  CHECK(s.message().find("rank 2 left the run at round 9") != std::string::npos);
  n.m.left.stopping("round 10: failed", n.links);
  REQUIRE(n.links.notices.size() == 1);
  // The first failure it saw is named first, then this node's own stop.
  CHECK(n.links.notices[0].payload.rfind("left 5 0 its link closed\nleft 4 0 it stopped: round 10: failed\n", 0) == 0);
}

TEST_CASE("departures: after this node's own return, departures older than it are stale news") {
  // Rank 2 rejoined at round 1989 (the board hears it from returns). A notice that rank 3 left at
  // round 412, forwarded to it before the cut and delivered late, is older than its return.
  ring_node n(2);
  n.m.board.returned(1989);
  CHECK(n.hear(1, {left_item(3, 412)}).is_ok());
  CHECK_FALSE(n.m.members.departed(3));
  CHECK(n.hear(1, {left_item(2, 1500)}).is_ok());  // nor its own departure from before its return
  // A departure after the return counts.
  CHECK(n.hear(1, {left_item(3, 1995)}).is_ok());
  CHECK(n.m.members.departed(3));
}

TEST_CASE("departures: a neighbour dropped for a refused train message is proven hostile, and only that one") {
  ring_node n(4);
  n.m.left.begin_round(10);
  // The inbox refused its message: the exchange calls it a failure, naming why.
  CHECK(n.m.left.failed(5, "sent a train message for iteration 10 that does not decode (not finite)", n.links));
  CHECK(n.m.left.proven_hostile(5));
  CHECK(n.m.left.failed(3, "its link closed", n.links));  // a failure without a refused message
  CHECK_FALSE(n.m.left.proven_hostile(3));
  CHECK(n.m.left.refused_by_this_node() == std::vector<int>{5});
  // Its join is refused for good.
  REQUIRE(n.hear_join(5, {{.what = notice_item::kind::join, .round = 0}}).is_ok());
  REQUIRE(n.links.joins.size() == 1);
  CHECK(n.links.joins[0].second.find("refuse this node dropped it for train messages that do not decode") == 0);
}

TEST_CASE("departures: a resumed node still knows whom it dropped for a refused message") {
  // Robust mixing tolerates one fewer hostile neighbour while such a rank is out; a node resumed
  // from its checkpoint must not forget it (it would tolerate the full count again).
  ring_node n(4);
  n.m.left.begin_round(10);
  CHECK(n.m.left.failed(5, "sent a train message for iteration 10 that does not decode (qsgd: NaN scale)", n.links));
  state_writer out;
  n.m.left.save_state(out);
  const std::vector<std::byte> bytes = out.take();
  ring_node resumed(4);
  state_reader in(bytes, "test");
  resumed.m.left.load_state(in, resumed.links);
  CHECK(resumed.m.left.proven_hostile(5));
  CHECK(resumed.m.left.refused_by_this_node() == std::vector<int>{5});
  CHECK(resumed.links.dropped(5));  // the exchange drops the departed again
}

TEST_CASE("departures: a departure learnt from a neighbour for a message that does not decode marks the rank too") {
  // Rank 4 learns from rank 3 that rank 5 was dropped for such a message: rank 5 may ask rank 4 to
  // admit it (it dropped it on that word, before its own copy of the message came), and must be
  // refused as rank 3 would refuse it.
  ring_node n(4);
  n.m.left.begin_round(3);
  CHECK(n.hear(3, {left_item(5, 2, "sent a train message for iteration 2 that does not decode (qsgd: NaN scale)")})
            .is_ok());
  CHECK(n.m.members.departed(5));
  CHECK(n.m.left.proven_hostile(5));
  CHECK_FALSE(n.m.left.proven_hostile(3));
  // Not by this node: it does not lower this node's guard (rank 3's word could name an honest rank).
  CHECK(n.m.left.refused_by_this_node().empty());
}

TEST_CASE("returns: a join from a neighbour heard from makes it a departure, and the offer names the departed") {
  ring_node n(4);
  n.links.heard = {3, 5};
  n.m.left.begin_round(20);
  CHECK(n.hear(5, {left_item(1, 19)}).is_ok());  // the graph keeps a part of 5 with this node
  REQUIRE(n.hear_join(3, {{.what = notice_item::kind::join, .round = 0}}).is_ok());  // rank 3 restarted
  CHECK(n.m.members.departed(3));
  REQUIRE(n.links.joins.size() == 1);
  CHECK(n.links.joins[0].first == 3);
  // Round 2 (this node is at round 0), its degree then 2 (rank 5 and the joiner).
  CHECK(n.links.joins[0].second == "offer 2 2\nleft 1 19 its link closed\n");
  // Its accept for a round before the offered one is refused.
  REQUIRE(n.hear_join(3, {{.what = notice_item::kind::accept, .round = 1, .degree = 2}}).is_ok());
  CHECK(n.links.joins.back().second == "refuse join round 1 is before the offered round 2\n");
  CHECK(n.m.members.departed(3));
}

TEST_CASE("returns: a joiner of another model size is refused, naming both sizes") {
  ring_node n(4);
  n.m.left.failed(3, "its link closed", n.links);
  REQUIRE(n.hear_join(3, {{.what = notice_item::kind::join, .round = 0}}, /*model_size=*/7).is_ok());
  REQUIRE(n.links.joins.size() == 1);
  CHECK(n.links.joins[0].second.find("refuse its model has 7 values, this run's 4") == 0);
}

TEST_CASE("halt agreement: the lowest live rank proposes, and a node passes on only a later round") {
  ring_node lowest(0);
  lowest.m.left.begin_round(30);
  lowest.m.halt.signal(30, 10, lowest.links);
  CHECK(lowest.m.halt.round() == std::optional<std::uint64_t>(40));
  REQUIRE(lowest.links.notices.size() == 1);
  CHECK(lowest.links.notices[0].payload == "halt 40\n");
  CHECK(lowest.links.notices[0].to == std::vector<int>{1, 7});

  ring_node other(4);
  other.m.halt.signal(30, 10, other.links);  // not the proposer: nothing
  CHECK_FALSE(other.m.halt.round());
  CHECK(other.hear(3, {{.what = notice_item::kind::halt, .round = 40}}).is_ok());
  CHECK(other.m.halt.round() == std::optional<std::uint64_t>(40));
  REQUIRE(other.links.notices.size() == 1);
  CHECK(other.links.notices[0].to == std::vector<int>{5});  // passed on, not back
  CHECK(other.hear(5, {{.what = notice_item::kind::halt, .round = 38}}).is_ok());
  CHECK(other.m.halt.round() == std::optional<std::uint64_t>(40));
  CHECK(other.links.notices.size() == 1);
}

TEST_CASE("start check: a neighbour that starts from another model ends the wait, naming both hashes") {
  ring_node n(4);
  const std::vector<float> model(4, 0.5f);
  CHECK(n.hear(3, {{.what = notice_item::kind::start, .size = 4, .hash = 1}}).is_ok());  // not announced: no check
  n.m.start.announce(model, n.links);
  REQUIRE(n.links.notices.size() == 1);
  CHECK(n.links.notices[0].payload.rfind("start 4 ", 0) == 0);
  const status size = n.hear(3, {{.what = notice_item::kind::start, .size = 5, .hash = 1}});
  CHECK(size.code() == errc::refused);
  CHECK(size.message() == "rank 3 starts from a model of 5 values where this node's has 4");
  const status other = n.hear(3, {{.what = notice_item::kind::start, .size = 4, .hash = 1}});
  CHECK(other.code() == errc::refused);
  CHECK(other.message().starts_with("rank 3 starts from another model (hash " + hex64(1) + "; this node's is "));
}

TEST_CASE("the board: an item with no meaning on its channel is refused whole") {
  ring_node n(4);
  const status offer_in_notice = n.hear(3, {left_item(6, 2), {.what = notice_item::kind::offer, .round = 3}});
  CHECK(offer_in_notice.code() == errc::corrupt);
  CHECK(offer_in_notice.message() == "a 'offer' item in a notice from rank 3, where it has no meaning");
  CHECK_FALSE(n.m.members.departed(6));  // nothing of it was taken
  ring_node stop(4, /*stop=*/true);      // no returns: joined news has no part
  CHECK(stop.hear(3, {{.what = notice_item::kind::joined, .rank = 6, .round = 9}}).code() == errc::corrupt);
}
