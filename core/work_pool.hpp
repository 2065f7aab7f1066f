#pragma once
// A node's threads for the work of a round that splits into independent pieces: the codec's
// buckets, the mix's element ranges, the model-sized copies (docs/design.md, "Memory and size";
// `node.threads`). The caller says how its work splits into pieces, and the pieces depend on the
// work alone, never on the thread count; each piece writes only its own part of the output. So
// what a round computes is the same bits on 1 thread or 64, and only its time changes.
//
// The threads are Asio's thread_pool (Debian's libasio-dev, as the launcher's event loop); the
// calling thread works through the pieces beside them, so a pool of t threads keeps t - 1 of its
// own and a pool of 1 runs everything inline.
//
// Which pool a piece of code splits its work on is its thread's: work_pool::use installs a pool as
// the calling thread's for a scope (the node's round, on whichever thread runs it), and the
// kernels below ask parallel_ranges, which runs inline where no pool is installed. So nothing
// below the node takes a pool through its interfaces, as a thread's OpenMP team in libtorch.
// Thread safety: run() may be called from several threads at once; each call waits for its own
// pieces only.
#include <cstddef>
#include <memory>

#include "core/function_ref.hpp"

namespace qgossip {

class work_pool {
 public:
  // threads >= 1 (QG_ENFORCE): the calling thread and threads - 1 of the pool's own.
  explicit work_pool(unsigned threads);
  ~work_pool();
  work_pool(const work_pool&) = delete;
  work_pool& operator=(const work_pool&) = delete;

  [[nodiscard]] unsigned threads() const { return threads_; }

  // Runs fn(i) once for every i in [0, pieces), on the pool's threads and the caller's, and returns
  // when every piece has ended. If pieces throw, the rest still run and the first exception (in
  // the order they were caught) is rethrown here.
  void run(std::size_t pieces, function_ref<void(std::size_t)> fn);

  // Installs pool (nullptr: none, run inline) as the calling thread's for this object's life; the
  // one installed before comes back at its end.
  class use {
   public:
    explicit use(work_pool* pool);
    ~use();
    use(const use&) = delete;
    use& operator=(const use&) = delete;

   private:
    work_pool* previous_;
  };
  // The calling thread's pool, or nullptr.
  [[nodiscard]] static work_pool* current() noexcept;

 private:
  struct threads_impl;
  unsigned threads_;
  std::unique_ptr<threads_impl> impl_;  // null for a pool of 1
};

// Splits [0, n) into consecutive ranges of `grain` elements (the last one shorter) and calls
// fn(begin, end) once for each, on the calling thread's pool (inline without one, or when there is
// only one range). The ranges depend on n and grain only. REQUIRES: grain >= 1.
void parallel_ranges(std::size_t n, std::size_t grain, function_ref<void(std::size_t, std::size_t)> fn);

// Elements per range of the element-wise loops (the mix, copies): 64 Ki floats, 256 KiB, large
// enough that a range's hand-off costs nothing beside its work, small enough that two threads
// share a 1 M-parameter model. A vector of fewer than two ranges is worked inline.
inline constexpr std::size_t kElementGrain = std::size_t{1} << 16;

// The cores this process may run on: its CPU affinity, lowered to the CPU quota of its cgroup
// (v1's cpu.cfs_quota_us / cfs_period_us or v2's cpu.max, rounded up) where one is set. At least 1.
[[nodiscard]] unsigned usable_cores();

}  // namespace qgossip
