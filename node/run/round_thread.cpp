#include "node/run/round_thread.hpp"

#include <utility>

#include "core/errors.hpp"

namespace qgossip {

round_thread::round_thread(work_pool* pool)
    : thread_([this, pool] {
        const work_pool::use threads(pool);
        loop();
      }) {}

round_thread::~round_thread() {
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !job_ && !running_; });
    quit_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void round_thread::start(std::function<void()> job) {
  QG_ENFORCE(!started_, "round_thread::start: a job is still running");
  {
    std::lock_guard lock(mutex_);
    job_ = std::move(job);
    error_ = nullptr;
  }
  started_ = true;
  changed_.notify_all();
}

void round_thread::wait() {
  if (!started_) return;
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !job_ && !running_; });
    error = std::exchange(error_, nullptr);
  }
  started_ = false;
  if (error) std::rethrow_exception(error);
}

void round_thread::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return quit_ || job_; });
    if (!job_) return;  // quit, nothing left
    std::function<void()> job = std::move(job_);
    job_ = nullptr;
    running_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    running_ = false;
    error_ = error;
    changed_.notify_all();
  }
}

}  // namespace qgossip
