#pragma once
// Helpers for integration tests: run the real qgossip binary, write configs, find free ports.
#include <filesystem>
#include <string>
#include <vector>

namespace qgossip::testing {

struct process_result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

// Runs `qgossip ARGS...` (the binary built with this test) and waits for it.
process_result run_qgossip(const std::vector<std::string>& args);

// A fresh directory under the system temp dir, removed by the destructor.
struct temp_dir {
  temp_dir();
  ~temp_dir();
  std::filesystem::path path;
};

void write_file(const std::filesystem::path& path, const std::string& text);

// A base port such that base .. base+count-1 can all be bound on 127.0.0.1 right now.
int free_port_range(int count);

}  // namespace qgossip::testing
