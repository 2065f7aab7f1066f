// doctest's main, and a watchdog: a test case that runs past QGOSSIP_TEST_CASE_LIMIT_S seconds (set
// by CTest below its own time-out: tests/CMakeLists.txt) is named on stderr and the binary aborts.
// Without it a hang ends as CTest's bare "Timeout" with no output, and which case hung is lost.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

class watchdog final : public doctest::IReporter {
 public:
  explicit watchdog(const doctest::ContextOptions&) {
    if (const char* s = std::getenv("QGOSSIP_TEST_CASE_LIMIT_S")) limit_ = std::chrono::seconds(std::atoi(s));
  }

  void test_run_start() override {
    if (limit_.count() > 0) thread_ = std::thread([this] { watch(); });
  }
  void test_run_end(const doctest::TestRunStats&) override {
    if (!thread_.joinable()) return;
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void test_case_start(const doctest::TestCaseData& d) override {
    const std::lock_guard lock(mutex_);
    running_ = std::string(d.m_name) + " (" + d.m_file.c_str() + ":" + std::to_string(d.m_line) + ")";
    since_ = std::chrono::steady_clock::now();
  }
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    const std::lock_guard lock(mutex_);
    running_.clear();
  }

  void report_query(const doctest::QueryData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  void watch() {
    std::unique_lock lock(mutex_);
    while (!done_) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      if (running_.empty() || std::chrono::steady_clock::now() - since_ < limit_) continue;
      const std::string name = running_;
      lock.unlock();
      std::fprintf(stderr,
                   "watchdog: the test case \"%s\" has run for more than %lld s "
                   "(QGOSSIP_TEST_CASE_LIMIT_S): aborting\n",
                   name.c_str(), static_cast<long long>(limit_.count()));
      std::fflush(stderr);
      // Past doctest's own SIGABRT handler, which would report through the reporters (this one
      // included) from this thread while the hung case still runs on the other.
      std::signal(SIGABRT, SIG_DFL);
      std::abort();
    }
  }

  std::chrono::seconds limit_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::string running_;  // the case running now, with its file and line; empty between cases
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

}  // namespace

DOCTEST_REGISTER_LISTENER("watchdog", 1, watchdog);
