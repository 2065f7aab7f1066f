// A node's checkpoint directory (node/checkpoint/checkpoint_store.hpp): atomic writes, what a
// reader skips and why, pruning, and checkpoints that survive SIGKILL at random moments.
#include "node/checkpoint/checkpoint_store.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system's temp dir, removed at the end of the test.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "qgossip-ckpt-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

constexpr std::uint64_t kRunId = 0xabcdef;

// A checkpoint whose content is a function of its round, so a reader can tell it is the right one.
checkpoint checkpoint_for(std::uint64_t round, std::size_t floats = 16, std::uint32_t rank = 0) {
  checkpoint ck;
  ck.run_id = kRunId;
  ck.rank = rank;
  ck.round = round;
  std::vector<float> data(floats);
  for (std::size_t i = 0; i < floats; ++i) data[i] = static_cast<float>(round * 1000 + i);
  state_writer w;
  w.put_floats("data", data);
  ck.add("payload", std::move(w));
  return ck;
}

bool holds_round(const checkpoint& ck, std::uint64_t round, std::size_t floats = 16) {
  state_reader r = ck.reader("payload", "test");
  const std::vector<float> data = r.get_floats("data");
  if (data.size() != floats) return false;
  for (std::size_t i = 0; i < floats; ++i)
    if (data[i] != static_cast<float>(round * 1000 + i)) return false;
  return ck.round == round;
}

const checkpoint_identity kMine{kRunId, 0};

void put_file(const fs::path& p, std::span<const std::byte> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct stop_here {};

}  // namespace

TEST_CASE("checkpoint names: ckpt-<round>.bin and .tmp, nothing else") {
  CHECK(checkpoint_path("d", 12) == fs::path("d") / "ckpt-12.bin");
  CHECK(parse_checkpoint_name("ckpt-12.bin")->round == 12);
  CHECK_FALSE(parse_checkpoint_name("ckpt-12.bin")->temporary);
  CHECK(parse_checkpoint_name("ckpt-0.tmp")->temporary);
  for (const char* bad : {"ckpt-.bin", "ckpt-012.bin", "ckpt-+1.bin", "ckpt-1x.bin", "ckpt-1.bak", "node-1.bin",
                          "ckpt-99999999999999999999.bin", "ckpt--1.bin"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_checkpoint_name(bad).has_value());
  }
}

TEST_CASE("write_checkpoint: the file reads back, the directory is created, two are kept") {
  temp_dir tmp;
  const fs::path dir = tmp.path / "node-0";
  for (std::uint64_t round : {10, 20, 30}) REQUIRE(write_checkpoint(dir, checkpoint_for(round)).is_ok());
  const checkpoint_listing listing = list_checkpoints(dir, kMine);
  CHECK(listing.rounds == std::vector<std::uint64_t>{20, 30});
  CHECK(listing.skipped.empty());
  CHECK_FALSE(fs::exists(checkpoint_path(dir, 10)));
  CHECK(holds_round(read_checkpoint(checkpoint_path(dir, 30), kMine), 30));
  const auto newest = read_newest_checkpoint(dir, kMine);
  REQUIRE(newest.has_value());
  CHECK(holds_round(*newest, 30));
  // keep = 3 keeps two previous ones.
  checkpoint_write_options keep_three;
  keep_three.keep = 3;
  REQUIRE(write_checkpoint(dir, checkpoint_for(40), keep_three).is_ok());
  CHECK(list_checkpoints(dir, kMine).rounds == std::vector<std::uint64_t>{20, 30, 40});
}

TEST_CASE("write_checkpoint: the previous checkpoint survives until the new one is renamed") {
  temp_dir tmp;
  REQUIRE(write_checkpoint(tmp.path, checkpoint_for(10)).is_ok());
  REQUIRE(write_checkpoint(tmp.path, checkpoint_for(20)).is_ok());

  // Killed after the temporary file is complete but before the rename.
  checkpoint_write_options stop_before_rename;
  stop_before_rename.after_stage_for_testing = [](checkpoint_write_stage s) {
    if (s == checkpoint_write_stage::temporary_synced) throw stop_here{};
  };
  CHECK_THROWS_AS((void)write_checkpoint(tmp.path, checkpoint_for(30), stop_before_rename), stop_here);
  CHECK(fs::exists(tmp.path / "ckpt-30.tmp"));
  checkpoint_listing listing = list_checkpoints(tmp.path, kMine);
  CHECK(listing.rounds == std::vector<std::uint64_t>{10, 20});
  REQUIRE(listing.skipped.size() == 1);
  CHECK(listing.skipped[0].find("ckpt-30.tmp: an unfinished write") != std::string::npos);
  CHECK(holds_round(*read_newest_checkpoint(tmp.path, kMine), 20));

  // Killed after the rename, before pruning: all three are there and valid.
  checkpoint_write_options stop_after_rename;
  stop_after_rename.after_stage_for_testing = [](checkpoint_write_stage s) {
    if (s == checkpoint_write_stage::renamed) throw stop_here{};
  };
  CHECK_THROWS_AS((void)write_checkpoint(tmp.path, checkpoint_for(30), stop_after_rename), stop_here);
  listing = list_checkpoints(tmp.path, kMine);
  CHECK(listing.rounds == std::vector<std::uint64_t>{10, 20, 30});
  CHECK(listing.skipped.empty());

  // The next complete write prunes to two and removes stale temporaries.
  put_file(tmp.path / "ckpt-35.tmp", std::vector<std::byte>(7));
  REQUIRE(write_checkpoint(tmp.path, checkpoint_for(40)).is_ok());
  listing = list_checkpoints(tmp.path, kMine);
  CHECK(listing.rounds == std::vector<std::uint64_t>{30, 40});
  CHECK(listing.skipped.empty());
  CHECK_FALSE(fs::exists(tmp.path / "ckpt-35.tmp"));
}

TEST_CASE("write_checkpoint: after a resume from an earlier round, later checkpoints are removed") {
  temp_dir tmp;
  for (std::uint64_t round : {10, 20, 30}) REQUIRE(write_checkpoint(tmp.path, checkpoint_for(round)).is_ok());
  // Resumed from 20 (another node had no 30): the node writes 25, and 30 belongs to a dead timeline.
  REQUIRE(write_checkpoint(tmp.path, checkpoint_for(25)).is_ok());
  CHECK(list_checkpoints(tmp.path, kMine).rounds == std::vector<std::uint64_t>{20, 25});
}

TEST_CASE("readers skip a leftover .tmp, a truncated or damaged .bin, and foreign checkpoints, saying why") {
  temp_dir tmp;
  REQUIRE(write_checkpoint(tmp.path, checkpoint_for(10)).is_ok());
  const std::vector<std::byte> good20 = encode_checkpoint(checkpoint_for(20));
  // A partial .tmp of round 20, a truncated .bin of 30, a damaged .bin of 40, another run's 50, a
  // copy of 10 under round 60's name, rank 1's 70, and a file of another kind.
  put_file(tmp.path / "ckpt-20.tmp", std::span<const std::byte>(good20).first(good20.size() / 2));
  const std::vector<std::byte> good30 = encode_checkpoint(checkpoint_for(30));
  put_file(tmp.path / "ckpt-30.bin", std::span<const std::byte>(good30).first(good30.size() - 1));
  std::vector<std::byte> damaged = encode_checkpoint(checkpoint_for(40));
  damaged[60] ^= std::byte{0x10};
  put_file(tmp.path / "ckpt-40.bin", damaged);
  checkpoint foreign = checkpoint_for(50);
  foreign.run_id = 7;
  put_file(tmp.path / "ckpt-50.bin", encode_checkpoint(foreign));
  fs::copy_file(checkpoint_path(tmp.path, 10), tmp.path / "ckpt-60.bin");
  put_file(tmp.path / "ckpt-70.bin", encode_checkpoint(checkpoint_for(70, 16, 1)));
  put_file(tmp.path / "notes.txt", std::vector<std::byte>(3));

  const checkpoint_listing listing = list_checkpoints(tmp.path, kMine);
  CHECK(listing.rounds == std::vector<std::uint64_t>{10});
  REQUIRE(listing.skipped.size() == 6);
  const auto skipped_for = [&](const std::string& file) {
    for (const std::string& s : listing.skipped)
      if (s.find(file) != std::string::npos) return s;
    return std::string("(not skipped)");
  };
  CHECK(skipped_for("ckpt-20.tmp").find("unfinished write") != std::string::npos);
  CHECK(skipped_for("ckpt-30.bin").find("truncated or extended") != std::string::npos);
  CHECK(skipped_for("ckpt-40.bin").find("checksum mismatch") != std::string::npos);
  CHECK(skipped_for("ckpt-50.bin").find("belongs to run 0x0000000000000007") != std::string::npos);
  CHECK(skipped_for("ckpt-60.bin").find("holds round 10 but is named for round 60") != std::string::npos);
  CHECK(skipped_for("ckpt-70.bin").find("belongs to rank 1, not 0") != std::string::npos);

  std::vector<std::string> skipped;
  const auto newest = read_newest_checkpoint(tmp.path, kMine, &skipped);
  REQUIRE(newest.has_value());
  CHECK(holds_round(*newest, 10));
  CHECK(skipped.size() == 6);
  // Without expectations, the other run's and rank's checkpoints are valid.
  CHECK(list_checkpoints(tmp.path, {}).rounds == std::vector<std::uint64_t>{10, 50, 70});
}

TEST_CASE("read_checkpoint: errors name the file and what is wrong; a missing directory lists nothing") {
  temp_dir tmp;
  const fs::path file = checkpoint_path(tmp.path, 5);
  CHECK_THROWS_WITH_AS((void)read_checkpoint(file, kMine), doctest::Contains((file.string() + ": cannot open").c_str()),
                       state_error);
  std::vector<std::byte> bytes = encode_checkpoint(checkpoint_for(5));
  bytes[bytes.size() - 1] ^= std::byte{1};
  put_file(file, bytes);
  CHECK_THROWS_WITH_AS((void)read_checkpoint(file, kMine), doctest::Contains((file.string() + ": checksum mismatch").c_str()),
                       state_error);
  CHECK_THROWS_WITH_AS((void)read_checkpoint(tmp.path / "ckpt-5.tmp", kMine),
                       doctest::Contains("not a complete checkpoint's name"), state_error);
  CHECK(list_checkpoints(tmp.path / "missing", kMine).rounds.empty());
  CHECK_FALSE(read_newest_checkpoint(tmp.path / "missing", kMine).has_value());
}

TEST_CASE("write_checkpoint: a directory that cannot be created is an io status naming it") {
  temp_dir tmp;
  put_file(tmp.path / "file", std::vector<std::byte>(1));
  const status st = write_checkpoint(tmp.path / "file" / "sub", checkpoint_for(1));
  CHECK(st.code() == errc::io);
  CHECK(st.message().find("file/sub") != std::string::npos);
}

TEST_CASE("newest_common_round: the newest round every node has") {
  const std::vector<std::vector<std::uint64_t>> lists = {{10, 20, 30}, {20, 30}, {10, 20}};
  CHECK(newest_common_round(lists) == 20);
  const std::vector<std::vector<std::uint64_t>> disjoint = {{10}, {20}};
  CHECK_FALSE(newest_common_round(disjoint).has_value());
  CHECK_FALSE(newest_common_round({}).has_value());
  const std::vector<std::vector<std::uint64_t>> one = {{30, 10}};
  CHECK(newest_common_round(one) == 30);
}

// A child process writes checkpoints of 1 MB as fast as it can (the first round given, then one
// more per write) and is killed with SIGKILL at a random moment, 20 times; each time the directory
// must hold a valid checkpoint with exactly the content of its round, only .tmp files may be
// skipped, and the next child resumes after the newest.
TEST_CASE("checkpoints survive SIGKILL at random moments, during writes included") {
  temp_dir tmp;
  constexpr std::size_t kFloats = 256 * 1024;
  REQUIRE(write_checkpoint(tmp.path, checkpoint_for(1, kFloats)).is_ok());
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> delay_us(0, 40000);
  std::uint64_t next = 2;
  int killed_with_tmp = 0;
  for (int kill = 0; kill < 20; ++kill) {
    CAPTURE(kill);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      for (std::uint64_t round = next;; ++round)
        if (!write_checkpoint(tmp.path, checkpoint_for(round, kFloats)).is_ok()) ::_exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    REQUIRE(::kill(child, SIGKILL) == 0);
    int wstatus = 0;
    REQUIRE(::waitpid(child, &wstatus, 0) == child);
    CHECK((WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL));

    const checkpoint_listing listing = list_checkpoints(tmp.path, kMine);
    REQUIRE_FALSE(listing.rounds.empty());
    for (const std::string& s : listing.skipped) CHECK(s.find(".tmp: an unfinished write") != std::string::npos);
    killed_with_tmp += listing.skipped.empty() ? 0 : 1;
    const auto newest = read_newest_checkpoint(tmp.path, kMine);
    REQUIRE(newest.has_value());
    CHECK(newest->round == listing.rounds.back());
    CHECK(holds_round(*newest, newest->round, kFloats));
    next = newest->round + 1;
  }
  MESSAGE("20 kills, " << killed_with_tmp << " of them left an unfinished .tmp; resumed up to round " << next);
}
