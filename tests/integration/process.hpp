#pragma once
// Helpers for integration tests: run the real qgossip binary, write configs, find free ports.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace qgossip::testing {

struct process_result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

// Runs `qgossip ARGS...` (the binary built with this test) and waits for it.
process_result run_qgossip(const std::vector<std::string>& args);

// A fresh folder under the system's temporary one, removed at the end (kept, and its path printed,
// when QGOSSIP_TEST_KEEP is set).
struct temp_dir {
  temp_dir();
  ~temp_dir();
  std::filesystem::path path;
};

void write_file(const std::filesystem::path& path, const std::string& text);

// A base port such that base .. base+count-1 can all be bound on 127.0.0.1 right now.
int free_port_range(int count);

}  // namespace qgossip::testing

namespace qgossip::testing {

// A qgossip process started in the background, its stdout+stderr going to `log`.
struct background_process {
  int pid = -1;
  std::filesystem::path log;
};
background_process start_qgossip(const std::vector<std::string>& args, const std::filesystem::path& log);
// Waits up to timeout_s for the process to exit; returns its exit code (128+signal), or -1 on timeout.
int wait_for(background_process& p, double timeout_s);
std::string read_file(const std::filesystem::path& path);

// The node summaries node-<r>.json of ranks 0..n-1 in dir, parsed (a test failure if one is unreadable).
std::map<int, nlohmann::ordered_json> summaries(const std::filesystem::path& dir, int n);
// A number field of a summary (a test failure if it is missing or not a number).
double number(const nlohmann::ordered_json& j, const char* key);
// The string field `key` of a summary (a test failure if it is missing or not a string).
std::string text(const nlohmann::ordered_json& j, const std::string& key);

}  // namespace qgossip::testing
