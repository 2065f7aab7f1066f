#include "core/work_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <asio/post.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <latch>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace qgossip {

struct work_pool::threads_impl {
  explicit threads_impl(unsigned n) : pool(n) {}
  ~threads_impl() { pool.join(); }
  asio::thread_pool pool;
};

namespace {

thread_local work_pool* current_pool = nullptr;

// One run()'s pieces, shared by the threads that work through them.
struct piece_queue {
  piece_queue(std::size_t count, function_ref<void(std::size_t)> f) : pieces(count), fn(f) {}

  std::size_t pieces;
  function_ref<void(std::size_t)> fn;
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr error;

  // Inside a piece no pool is installed: a split within a piece runs inline, so no thread ever
  // waits on pieces queued behind its own.
  void work() {
    const work_pool::use inline_only(nullptr);
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < pieces;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
      }
    }
  }
};

}  // namespace

work_pool::work_pool(unsigned threads) : threads_(threads) {
  QG_ENFORCE(threads >= 1, "threads=" << threads);
  if (threads > 1) impl_ = std::make_unique<threads_impl>(threads - 1);
}

work_pool::~work_pool() = default;

void work_pool::run(std::size_t pieces, function_ref<void(std::size_t)> fn) {
  piece_queue queue(pieces, fn);
  const std::size_t helpers = impl_ && pieces > 1 ? std::min<std::size_t>(threads_ - 1, pieces - 1) : 0;
  std::latch done(static_cast<std::ptrdiff_t>(helpers));
  for (std::size_t h = 0; h < helpers; ++h)
    asio::post(impl_->pool, [&queue, &done] {
      queue.work();
      done.count_down();
    });
  queue.work();
  done.wait();
  if (queue.error) std::rethrow_exception(queue.error);
}

work_pool::use::use(work_pool* pool) : previous_(current_pool) { current_pool = pool; }

work_pool::use::~use() { current_pool = previous_; }

work_pool* work_pool::current() noexcept { return current_pool; }

void parallel_ranges(std::size_t n, std::size_t grain, function_ref<void(std::size_t, std::size_t)> fn) {
  QG_ENFORCE(grain >= 1, "grain=0");
  const std::size_t ranges = (n + grain - 1) / grain;
  work_pool* pool = work_pool::current();
  if (ranges <= 1 || pool == nullptr || pool->threads() == 1) {
    for (std::size_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  pool->run(ranges, [&](std::size_t i) { fn(i * grain, std::min(n, (i + 1) * grain)); });
}

namespace {

std::optional<double> read_number(const std::string& path) {
  std::ifstream in(path);
  double v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

// cgroup v2's cpu.max: "max 100000" (no quota) or "<quota> <period>".
std::optional<double> v2_quota(const std::string& dir) {
  std::ifstream in(dir + "/cpu.max");
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  return std::stod(quota) / period;
}

std::optional<double> v1_quota(const std::string& dir) {
  const auto quota = read_number(dir + "/cpu.cfs_quota_us");
  const auto period = read_number(dir + "/cpu.cfs_period_us");
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return *quota / *period;
}

// The smallest quota on the way from this process's cgroup up to the root, in CPUs.
std::optional<double> cgroup_quota() {
  std::ifstream in("/proc/self/cgroup");
  std::optional<double> lowest;
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    std::vector<std::string> roots;
    if (controllers.empty()) roots = {"/sys/fs/cgroup"};
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');)
      if (c == "cpu") roots = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"};
    for (const std::string& root : roots) {
      for (std::string p = path;; p = p.substr(0, p.rfind('/'))) {
        const auto q = controllers.empty() ? v2_quota(root + p) : v1_quota(root + p);
        if (q && (!lowest || *q < *lowest)) lowest = q;
        if (p.empty() || p == "/") break;
      }
    }
  }
  return lowest;
}

}  // namespace

unsigned usable_cores() {
  cpu_set_t set;
  unsigned cores = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = std::max(1, CPU_COUNT(&set));
  if (const auto quota = cgroup_quota())
    cores = std::min(cores, std::max(1u, static_cast<unsigned>(std::ceil(*quota))));
  return cores;
}

}  // namespace qgossip
