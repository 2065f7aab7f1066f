#include "node/run/resume.hpp"

#include <algorithm>
#include <vector>

#include "core/errors.hpp"
#include "node/checkpoint/checkpoint_store.hpp"
#include "topology/topology.hpp"

namespace qgossip {

namespace fs = std::filesystem;

fs::path checkpoint_dir(const run_config& c, int rank) {
  return fs::path(c.output_dir) / c.name / "checkpoints" / ("node-" + std::to_string(rank));
}

std::size_t checkpoint_keep(std::uint64_t rounds_apart, std::uint64_t every) {
  QG_ENFORCE(every >= 1, "every=" << every);
  return std::max<std::size_t>(2, 1 + static_cast<std::size_t>((rounds_apart + every - 1) / every));
}

std::uint64_t common_resume_round(const run_config& c, const std::function<void(const std::string&)>& note) {
  std::vector<std::vector<std::uint64_t>> rounds;
  for (int r = 0; r < c.topology.n; ++r) {
    const fs::path dir = checkpoint_dir(c, r);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw config_error("--resume: " + dir.string() + " (rank " + std::to_string(r) +
                         "'s checkpoints) does not exist here; when the nodes run on several hosts, give every "
                         "node the newest round they all have with --resume-round R");
    checkpoint_listing l = list_checkpoints(dir, {.run_id = c.run_id, .rank = static_cast<std::uint32_t>(r)});
    for (const std::string& s : l.skipped) note("skipped " + s);
    const bool foreign = std::any_of(l.skipped.begin(), l.skipped.end(),
                                     [](const std::string& s) { return s.find("belongs to run") != std::string::npos; });
    if (l.rounds.empty() && foreign)
      throw config_error("--resume: the checkpoints in " + dir.string() +
                         " were written by another configuration (another run id); resume with the same config "
                         "and --set options, or start afresh without --resume");
    rounds.push_back(std::move(l.rounds));
  }
  return newest_common_round(rounds).value_or(0);
}

std::size_t discard_checkpoints_after(const fs::path& dir, std::uint64_t round) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::vector<fs::path> doomed;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const auto name = parse_checkpoint_name(e.path().filename().string());
    if (name && (round == 0 || name->round > round)) doomed.push_back(e.path());
  }
  if (ec) throw config_error("cannot list the checkpoints in " + dir.string() + ": " + ec.message());
  for (const fs::path& file : doomed)
    if (!fs::remove(file, ec) && ec)
      throw config_error("cannot delete the checkpoint " + file.string() + ": " + ec.message());
  return doomed.size();
}

std::uint64_t checkpoint_csv_bytes(const checkpoint& ck, const std::string& origin) {
  state_reader in = ck.reader("log", origin);
  const std::uint64_t bytes = in.get_u64("csv_bytes");
  in.expect_end();
  return bytes;
}

void add_csv_bytes(checkpoint& ck, std::uint64_t csv_bytes) {
  state_writer out;
  out.put_u64("csv_bytes", csv_bytes);
  ck.add("log", std::move(out));
}

}  // namespace qgossip
