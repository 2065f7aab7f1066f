#pragma once
// The node's own thread (train.overlap, docs/algorithms.md "Overlapped rounds"): one job at a time,
// a round's encoding, sending, receiving and decoding, run beside the caller's next local steps.
// The caller hands a job over with start() and takes its end with wait(); between the two it must
// not touch what the job touches (the round steps keep to that: the job owns the pattern, the
// exchange and the algorithm's public copies until wait() returns). wait() is the only place the
// two threads meet, so everything the job wrote is visible to the caller after it.
// One thread for the object's life; the destructor waits for a job still running, then ends it.
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "core/work_pool.hpp"

namespace qgossip {

class round_thread {
 public:
  // pool: the threads the jobs split their work on (work_pool::use for the thread's life).
  explicit round_thread(work_pool* pool);
  ~round_thread();
  round_thread(const round_thread&) = delete;
  round_thread& operator=(const round_thread&) = delete;

  // Runs job on the node's thread. REQUIRES: no job is running (busy() false).
  void start(std::function<void()> job);
  // Until the job has ended; rethrows what it threw. Returns at once when none is running.
  void wait();
  // True from start() until wait() has returned.
  [[nodiscard]] bool busy() const { return started_; }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;   // the job handed over and not yet taken by the thread
  bool running_ = false;        // the thread holds a job
  bool quit_ = false;
  bool started_ = false;        // the caller's view: start() without its wait() yet
  std::exception_ptr error_;
  std::thread thread_;          // last: starts once the rest is built
};

}  // namespace qgossip
