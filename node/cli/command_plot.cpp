#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "node/launch/subprocess.hpp"

namespace qgossip {

void add_plot_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("plot", "Draw PNG figures from one or several run directories");
  cmd->footer(
      "Writes convergence.png (test accuracy and train loss vs. epoch and vs. wall time, one line per node\n"
      "plus the mean) and accuracy_vs_bytes.png into OUT (default: the first RUN_DIR).\n"
      "Runs scripts/plot.py with Debian's /usr/bin/python3 and python3-matplotlib.");
  struct options {
    std::vector<std::string> dirs;
    std::string out;
    std::string title;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("RUN_DIR", opt->dirs, "Run directories (runs/<name>)")->required();
  cmd->add_option("-o,--out", opt->out, "Output directory");
  cmd->add_option("--title", opt->title, "Figure title");
  cmd->callback([opt, exit_code] {
    std::string script = find_script("plot.py");
    if (script.empty()) throw config_error("cannot find scripts/plot.py next to this qgossip build");
    std::vector<std::string> argv{"/usr/bin/python3", script};
    argv.insert(argv.end(), opt->dirs.begin(), opt->dirs.end());
    if (!opt->out.empty()) argv.insert(argv.end(), {"-o", opt->out});
    if (!opt->title.empty()) argv.insert(argv.end(), {"--title", opt->title});
    *exit_code = run_and_wait(argv);
  });
}

}  // namespace qgossip
