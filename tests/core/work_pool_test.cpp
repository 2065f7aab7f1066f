// core/work_pool: every piece once, on the pool's threads and the caller's; exceptions carried back;
// the calling thread's pool installed and restored by scope; ranges fixed by size and grain alone.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/work_pool.hpp"

using namespace qgossip;

TEST_CASE("run: every piece exactly once, on up to `threads` threads") {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    CAPTURE(threads);
    work_pool pool(threads);
    CHECK(pool.threads() == threads);
    for (std::size_t pieces : {0u, 1u, 2u, 7u, 1000u}) {
      std::vector<std::atomic<int>> seen(pieces);
      std::mutex mutex;
      std::set<std::thread::id> ids;
      pool.run(pieces, [&](std::size_t i) {
        seen[i].fetch_add(1);
        const std::lock_guard lock(mutex);
        ids.insert(std::this_thread::get_id());
      });
      for (auto& s : seen) CHECK(s.load() == 1);
      CHECK(ids.size() <= threads);
      if (threads == 1 && pieces > 0) CHECK(ids == std::set{std::this_thread::get_id()});
    }
  }
}

TEST_CASE("run: a piece's exception comes back to the caller, the other pieces still run") {
  work_pool pool(3);
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH_AS(pool.run(50,
                                [&](std::size_t i) {
                                  ran.fetch_add(1);
                                  if (i == 17) throw std::runtime_error("piece 17");
                                }),
                       "piece 17", std::runtime_error);
  CHECK(ran.load() == 50);
  pool.run(4, [](std::size_t) {});  // the pool still works
}

TEST_CASE("parallel_ranges: the same ranges with or without a pool; the scope restores the pool before it") {
  auto ranges_of = [](std::size_t n, std::size_t grain) {
    std::mutex mutex;
    std::set<std::pair<std::size_t, std::size_t>> out;
    parallel_ranges(n, grain, [&](std::size_t b, std::size_t e) {
      const std::lock_guard lock(mutex);
      out.insert({b, e});
    });
    return out;
  };
  const auto inline_ranges = ranges_of(1000, 64);
  CHECK(inline_ranges.size() == 16);
  CHECK(*inline_ranges.rbegin() == std::pair<std::size_t, std::size_t>{960, 1000});
  CHECK(ranges_of(0, 64).empty());
  work_pool outer(2), inner(4);
  CHECK(work_pool::current() == nullptr);
  {
    const work_pool::use a(&outer);
    CHECK(work_pool::current() == &outer);
    {
      const work_pool::use b(&inner);
      CHECK(work_pool::current() == &inner);
      CHECK(ranges_of(1000, 64) == inline_ranges);
      // A split inside a piece runs inline, on the piece's thread.
      std::atomic<int> nested_inline{0};
      parallel_ranges(4, 1, [&](std::size_t, std::size_t) {
        if (work_pool::current() == nullptr) nested_inline.fetch_add(1);
      });
      CHECK(nested_inline.load() == 4);
    }
    CHECK(work_pool::current() == &outer);
  }
  CHECK(work_pool::current() == nullptr);
}

TEST_CASE("usable_cores: at least 1, at most the machine's") {
  const unsigned cores = usable_cores();
  CHECK(cores >= 1);
  CHECK(cores <= std::max(1u, std::thread::hardware_concurrency()));
}
