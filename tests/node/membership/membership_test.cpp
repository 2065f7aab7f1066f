#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "node/membership/membership.hpp"
#include "topology/graph.hpp"
#include "topology/topology.hpp"

using namespace qgossip;

namespace {

topology ring_of(int n, weight_kind w = weight_kind::uniform) { return make_topology(qgossip::ring(n), w); }

departure gone(int rank, std::uint64_t round = 10) { return {.rank = rank, .round = round, .cause = "test", .reported_by = 0}; }

// Row r of every survivor, as a dense matrix, from each node's own membership view.
std::vector<std::vector<double>> matrix(const std::vector<membership>& views, std::uint64_t r, int n) {
  std::vector<std::vector<double>> w(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n), 0.0));
  for (const membership& m : views) {
    const mixing_row row = m.row_for(r);
    w[static_cast<std::size_t>(m.rank())][static_cast<std::size_t>(m.rank())] = row.self_weight;
    for (std::size_t k = 0; k < row.neighbours.size(); ++k)
      w[static_cast<std::size_t>(m.rank())][static_cast<std::size_t>(row.neighbours[k])] = row.weights[k];
  }
  return w;
}

// Symmetric, rows and columns summing to 1 over the survivors, nonnegative: within 1e-12 (sums of
// at most 3 doubles of magnitude <= 1).
void check_doubly_stochastic(const std::vector<std::vector<double>>& w, const std::vector<int>& survivors) {
  for (int i : survivors) {
    double row = 0, col = 0;
    for (int j : survivors) {
      const double wij = w[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      CHECK(wij >= 0);
      CHECK(std::abs(wij - w[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)]) < 1e-12);
      row += wij;
      col += w[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)];
    }
    CHECK(std::abs(row - 1) < 1e-12);
    CHECK(std::abs(col - 1) < 1e-12);
  }
}

}  // namespace

TEST_CASE("membership: before any departure the row is the topology's") {
  const topology t = ring_of(6);
  membership m(t, 2, true);
  const mixing_row row = m.row_for(1);
  CHECK(row.neighbours == std::vector<int>{1, 3});
  CHECK(row.weights == std::vector<double>{t.weight(2, 1), t.weight(2, 3)});
  CHECK(row.self_weight == doctest::Approx(t.self_weight(2)));
  CHECK(m.components().size() == 1);
  CHECK_FALSE(m.degree_notice());
}

TEST_CASE("membership: a departure drops the leaver at once, then re-weights from the announced round") {
  // Ring of 6, rank 3 leaves during round 10: its neighbours 2 and 4 record it with effective round
  // 12 (round + 2) and announce "degree 1 12"; 1 and 5 hear the announcements.
  const int n = 6;
  const topology t = ring_of(n);
  std::vector<membership> views;
  for (int r = 0; r < n; ++r)
    if (r != 3) views.emplace_back(t, r, true);
  auto view = [&](int r) -> membership& { return views[static_cast<std::size_t>(r < 3 ? r : r - 1)]; };
  for (int r : {2, 4}) {
    CHECK(view(r).record_departure(gone(3), 12));
    CHECK_FALSE(view(r).record_departure(gone(3), 13));  // known already: nothing to forward
    REQUIRE(view(r).degree_notice());
    CHECK(*view(r).degree_notice() == std::make_pair(1, std::uint64_t{12}));
  }
  view(1).record_degree(2, 1, 12);
  view(5).record_degree(4, 1, 12);
  for (int r : {0, 1, 5}) view(r).record_departure(gone(3), 12);  // the forwarded news; not neighbours of 3
  const std::vector<int> survivors{0, 1, 2, 4, 5};
  // Rounds 10 and 11: 3's weight goes to 2 and 4 themselves; every other weight as configured.
  for (std::uint64_t r : {10u, 11u}) {
    const auto w = matrix(views, r, n);
    check_doubly_stochastic(w, survivors);
    CHECK(w[2][1] == doctest::Approx(1.0 / 3));
    CHECK(w[2][2] == doctest::Approx(2.0 / 3));
  }
  // From round 12: Metropolis–Hastings on the edges at 2 and 4 (degree 1 against 2: 1/3; the path
  // 4-5-0-1-2 keeps 1/3 everywhere on a uniform ring, so check the self weights too).
  const auto w = matrix(views, 12, n);
  check_doubly_stochastic(w, survivors);
  CHECK(w[2][1] == doctest::Approx(1.0 / 3));
  CHECK(w[2][2] == doctest::Approx(2.0 / 3));
  CHECK(view(2).live_neighbours() == std::vector<int>{1});
}

TEST_CASE("membership: Metropolis–Hastings re-weighting raises the weights an irregular survivor graph allows") {
  // Complete graph of 5 with uniform weights 1/5; rank 0 leaves: every survivor's degree drops to 3,
  // so from the announced round every edge takes 1/(1+3) = 1/4.
  const int n = 5;
  const topology t = make_topology(qgossip::complete(n), weight_kind::uniform);
  std::vector<membership> views;
  for (int r = 1; r < n; ++r) views.emplace_back(t, r, true);
  for (auto& v : views) v.record_departure(gone(0), 7);
  for (auto& v : views)
    for (int j = 1; j < n; ++j)
      if (j != v.rank()) v.record_degree(j, 3, 7);
  const std::vector<int> survivors{1, 2, 3, 4};
  check_doubly_stochastic(matrix(views, 6, n), survivors);
  const auto w = matrix(views, 7, n);
  check_doubly_stochastic(w, survivors);
  CHECK(w[1][2] == doctest::Approx(0.25));
  CHECK(w[1][1] == doctest::Approx(0.25));
}

TEST_CASE("membership: without re-weighting (explicit weights) only the drop happens") {
  const topology t = ring_of(5);
  membership m(t, 1, false);
  m.record_departure(gone(0), 3);
  m.record_degree(2, 1, 3);
  const mixing_row row = m.row_for(100);
  CHECK(row.neighbours == std::vector<int>{2});
  CHECK(row.weights[0] == doctest::Approx(t.weight(1, 2)));
  CHECK(row.self_weight == doctest::Approx(1 - t.weight(1, 2)));
}

TEST_CASE("membership: a split graph is reported with this node's part first") {
  const topology t = ring_of(6);
  membership m(t, 4, true);
  m.record_departure(gone(1), 5);
  CHECK(m.components().size() == 1);
  m.record_departure(gone(3), 6);
  const auto parts = m.components();
  REQUIRE(parts.size() == 2);
  CHECK(parts[0] == std::vector<int>{0, 4, 5});
  CHECK(parts[1] == std::vector<int>{2});
  CHECK(m.live_neighbours() == std::vector<int>{5});
}

TEST_CASE("membership: after a cut, the side whose part is not the largest is the one cut off") {
  // Ring of 8 cut around ranks 2 and 3 (one host): each side drops its neighbours across the cut.
  const topology t = ring_of(8);
  for (int r : {2, 3}) {
    membership m(t, r, true);
    CHECK_FALSE(m.cut_off());
    m.record_departure(gone(1), 5);
    m.record_departure(gone(4), 5);
    CHECK(m.components().size() == 2);  // [2, 3] and [0, 5, 6, 7]: it sees the other side's rest
    CHECK(m.cut_off());
  }
  for (int r : {0, 1, 4, 5, 6, 7}) {
    membership m(t, r, true);
    m.record_departure(gone(2), 5);
    m.record_departure(gone(3), 5);
    CHECK(m.components().size() == 1);
    CHECK_FALSE(m.cut_off());
  }
  // Two sides can never both be cut off: each compares itself with what it has not seen leave of
  // the other side, which is smaller than that side. So halves (ranks 2..5 against 6, 7, 0, 1) both
  // see 4 against 2 and neither rejoins: they stay apart, as docs/failures.md says.
  membership low(t, 1, true), high(t, 2, true);
  low.record_departure(gone(2), 5);
  low.record_departure(gone(5), 5);
  high.record_departure(gone(1), 5);
  high.record_departure(gone(6), 5);
  CHECK(low.components() == std::vector<std::vector<int>>{{0, 1, 6, 7}, {3, 4}});
  CHECK(high.components() == std::vector<std::vector<int>>{{2, 3, 4, 5}, {0, 7}});
  CHECK_FALSE(low.cut_off());
  CHECK_FALSE(high.cut_off());
  // Equal parts in one view: the one holding the lower rank is kept.
  membership mid(ring_of(6), 4, true);
  mid.record_departure(gone(0), 5);
  mid.record_departure(gone(3), 5);
  CHECK(mid.components() == std::vector<std::vector<int>>{{4, 5}, {1, 2}});
  CHECK(mid.cut_off());
}

TEST_CASE("membership: announcements never go back in time") {
  const topology t = ring_of(6);
  membership m(t, 0, true);
  m.record_departure(gone(1), 20);
  m.record_departure(gone(5), 15);  // a later departure cannot take effect before the earlier one
  CHECK(m.degree_notice()->second == 20);
  CHECK(m.degree_notice()->first == 0);
}

TEST_CASE("membership: a checkpoint carries departures and announced degrees exactly") {
  const topology t = make_topology(qgossip::complete(5), weight_kind::metropolis_hastings);
  membership m(t, 1, true);
  m.record_departure({.rank = 0, .round = 9, .cause = "its link closed", .reported_by = 1}, 11);
  m.record_degree(2, 3, 11);
  m.record_degree(3, 3, 12);
  state_writer out;
  m.save_state(out);
  const std::vector<std::byte> bytes = out.take();
  membership back(t, 1, true);
  state_reader in(bytes, "test");
  back.load_state(in);
  in.expect_end();
  CHECK(back.live_neighbours() == m.live_neighbours());
  REQUIRE(back.departures().size() == 1);
  CHECK(back.departures()[0].cause == "its link closed");
  CHECK(back.departures()[0].reported_by == 1);
  for (std::uint64_t r : {9u, 11u, 12u, 40u}) {
    const mixing_row a = m.row_for(r), b = back.row_for(r);
    CHECK(a.neighbours == b.neighbours);
    CHECK(a.weights == b.weights);
    CHECK(a.self_weight == b.self_weight);
  }
  membership other(t, 0, true);  // rank 0's own departure is not its to load
  state_reader again(bytes, "test");
  CHECK_THROWS_AS(other.load_state(again), state_error);
}

TEST_CASE("membership: a rank that left and rejoins is mixed again from its join round, and W stays doubly stochastic") {
  // Ring of 6 (uniform weights), rank 3 leaves during round 10 (degrees announced from 12), then
  // rejoins at round 30 with degree 2: its neighbours 2 and 4 record the join (their degrees grow
  // back from 30), rank 3 itself joins at 30 admitted by both (their degrees 2), the others hear the
  // forwarded news and the announcements. Rows are checked for rounds 29 (without it), 30 and 31.
  const int n = 6;
  const topology t = ring_of(n);
  std::vector<membership> views;
  for (int r = 0; r < n; ++r) views.emplace_back(t, r, true);
  for (int r = 0; r < n; ++r)
    if (r != 3) views[static_cast<std::size_t>(r)].record_departure(gone(3), 12);
  views[1].record_degree(2, 1, 12);
  views[5].record_degree(4, 1, 12);
  for (int r : {2, 4}) {
    CHECK(views[static_cast<std::size_t>(r)].record_join(3, 30, 2));
    CHECK_FALSE(views[static_cast<std::size_t>(r)].record_join(3, 31));  // known already
    CHECK(*views[static_cast<std::size_t>(r)].degree_notice() == std::make_pair(2, std::uint64_t{30}));
    CHECK(views[static_cast<std::size_t>(r)].joined_from(3) == 30);
  }
  for (int r : {0, 1, 5}) CHECK(views[static_cast<std::size_t>(r)].record_join(3, 30));
  views[1].record_degree(2, 2, 30);
  views[5].record_degree(4, 2, 30);
  membership& joiner = views[3];
  joiner = membership(t, 3, true);  // a fresh process
  const std::vector<std::pair<int, int>> admitted{{2, 2}, {4, 2}};
  joiner.join_at(30, admitted, "did not admit this node");
  CHECK(joiner.live_neighbours() == std::vector<int>{2, 4});
  const std::vector<int> survivors{0, 1, 2, 4, 5}, everyone{0, 1, 2, 3, 4, 5};
  const auto before = matrix(views, 29, n);
  CHECK(before[2][3] == 0.0);
  CHECK(before[2][2] == doctest::Approx(2.0 / 3));
  for (std::uint64_t r : {30u, 31u}) {
    const auto w = matrix(views, r, n);
    check_doubly_stochastic(w, everyone);
    CHECK(w[2][3] == doctest::Approx(1.0 / 3));
    CHECK(w[3][3] == doctest::Approx(1.0 / 3));
  }
  // A joiner admitted by one neighbour only: the other counts as departed, and its degree is 1.
  membership half(t, 3, true);
  const std::vector<std::pair<int, int>> one{{2, 2}};
  half.join_at(30, one, "did not admit this node");
  CHECK(half.live_neighbours() == std::vector<int>{2});
  CHECK(half.departed(4));
  CHECK(half.row_for(30).weights == std::vector<double>{1.0 / 3});
}

TEST_CASE("membership: a checkpoint replays departures and joins in their order") {
  const topology t = ring_of(6);
  membership m(t, 2, true);
  m.record_departure(gone(3, 10), 12);
  CHECK(m.record_join(3, 30, 2));
  m.record_departure(gone(3, 40), 42);  // gone again
  m.record_departure(gone(0, 41), 43);
  CHECK(m.record_join(0, 50));
  state_writer out;
  m.save_state(out);
  const std::vector<std::byte> bytes = out.take();
  membership back(t, 2, true);
  state_reader in(bytes, "test");
  back.load_state(in);
  in.expect_end();
  CHECK(back.departed(3));
  CHECK_FALSE(back.departed(0));
  CHECK(back.joined_from(0) == 50);
  CHECK(back.live_neighbours() == m.live_neighbours());
  for (std::uint64_t r : {11u, 29u, 30u, 41u, 45u, 60u}) {
    const mixing_row a = m.row_for(r), b = back.row_for(r);
    CHECK(a.neighbours == b.neighbours);
    CHECK(a.weights == b.weights);
    CHECK(a.self_weight == b.self_weight);
  }
}

TEST_CASE("membership: news of a departure older than the rank's latest return is stale") {
  // Rank 3 left at round 10 and came back from round 30; news of its departure at round 10 that
  // reaches this node late (a link's queue after a cut) neither drops it nor is forwarded. The
  // margin is twice the ring's diameter (3) and 2: news from round 22 on may be new.
  const topology t = ring_of(6);
  membership view(t, 2, true);
  CHECK(view.stale_margin() == 8);
  CHECK(view.record_departure(gone(3, 10), 12));
  CHECK(view.record_join(3, 30, 2));
  CHECK_FALSE(view.record_departure(gone(3, 10), 32));
  CHECK_FALSE(view.record_departure(gone(3, 21), 32));
  CHECK_FALSE(view.departed(3));
  CHECK(view.live_neighbours() == std::vector<int>{1, 3});
  CHECK(view.record_departure(gone(3, 22), 33));  // within the margin: it may have failed since
  CHECK(view.departed(3));
  // What this node sees itself is never stale: a joiner that fails after its accept, before its
  // join round, is a departure here (the exchange drops it; the views must agree).
  membership own(t, 2, true);
  CHECK(own.record_departure(gone(3, 10), 12));
  CHECK(own.record_join(3, 30, 2));
  CHECK(own.record_departure({.rank = 3, .round = 5, .cause = "its link closed", .reported_by = 2}, 7));
  CHECK(own.departed(3));
}
