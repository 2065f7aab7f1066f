// round_steps' checkpoint step and its inverse (docs/checkpoints.md, "A node's checkpoint"): the
// sections a node writes after round t and loads to continue with round t + 1.
#include <algorithm>
#include <chrono>
#include <thread>

#include "node/checkpoint/checkpoint_store.hpp"
#include "node/run/node_setup.hpp"
#include "node/run/resume.hpp"
#include "node/run/round_steps.hpp"

namespace qgossip {

namespace {

void put_optional(state_writer& out, std::string_view name, const std::optional<double>& v) {
  out.put_bool(std::string(name) + "_set", v.has_value());
  out.put_f64(name, v.value_or(0.0));
}

std::optional<double> get_optional(state_reader& in, std::string_view name) {
  const bool set = in.get_bool(std::string(name) + "_set");
  const double v = in.get_f64(name);
  return set ? std::optional(v) : std::nullopt;
}

std::int64_t ns(std::chrono::nanoseconds d) { return static_cast<std::int64_t>(d.count()); }

}  // namespace

// The loop's own counters: what the next CSV rows and the summary continue from. The exchange's
// and the model's counters are saved as totals (this process's plus those carried in).
void round_steps::save_round(state_writer& out) const {
  out.put_u64("completed", completed_);
  out.put_f64("lr", lr_);
  out.put_f64("loss_sum", loss_sum_);
  out.put_u64("loss_count", loss_count_);
  out.put_f64("compute_s", compute_s_);
  out.put_f64("codec_s", codec_s_);
  out.put_f64("wall_s", wall_s());
  out.put_u64("row_iteration", rec_.iteration);
  out.put_f64("row_epoch", rec_.epoch);
  out.put_f64("row_wall_s", rec_.wall_s);
  out.put_f64("row_lr", rec_.lr);
  out.put_f64("row_train_loss", rec_.train_loss);
  put_optional(out, "row_test_loss", rec_.test_loss);
  put_optional(out, "row_test_acc", rec_.test_acc);
  const exchange_stats st = traffic();
  const std::uint64_t counts[] = {st.rounds,          st.messages_sent,      st.bytes_sent,
                                  st.probe_bytes_sent, st.probe_bytes_received, st.messages_received,
                                  st.bytes_received,  st.messages_delivered, st.duplicates,
                                  st.expired,         st.notice_bytes_sent,  st.notice_bytes_received};
  out.put_u64s("exchange_counts", counts);
  out.put_u64s("rejected", st.rejected);
  out.put_i64("wait_ns", ns(st.wait_time));
  out.put_i64("send_ns", ns(st.send_time));
  out.put_i64("probe_comm_ns", ns(probe_.comm_time() + carried_.probe_comm));
  const transfer_stats transfers = s_.net->transfers();
  out.put_f64("transfer_s", transfers.seconds + carried_.transfers.seconds);
  out.put_u64("transfer_bytes", transfers.bytes + carried_.transfers.bytes);
}

void round_steps::load_round(state_reader& in) {
  completed_ = in.get_u64("completed");
  lr_ = in.get_f64("lr");
  loss_sum_ = in.get_f64("loss_sum");
  loss_count_ = in.get_u64("loss_count");
  compute_s_ = in.get_f64("compute_s");
  codec_s_ = in.get_f64("codec_s");
  carried_.wall_s = in.get_f64("wall_s");
  rec_.iteration = in.get_u64("row_iteration");
  rec_.epoch = in.get_f64("row_epoch");
  rec_.wall_s = in.get_f64("row_wall_s");
  rec_.lr = in.get_f64("row_lr");
  rec_.train_loss = in.get_f64("row_train_loss");
  rec_.test_loss = get_optional(in, "row_test_loss");
  rec_.test_acc = get_optional(in, "row_test_acc");
  const std::vector<std::uint64_t> counts = in.get_u64s("exchange_counts");
  if (counts.size() != 10 && counts.size() != 12)  // 10: written before notices existed
    in.fail("exchange_counts holds " + std::to_string(counts.size()) + " counts, expected 12");
  exchange_stats& c = carried_.traffic;
  c.rounds = counts[0];
  c.messages_sent = counts[1];
  c.bytes_sent = counts[2];
  c.probe_bytes_sent = counts[3];
  c.probe_bytes_received = counts[4];
  c.messages_received = counts[5];
  c.bytes_received = counts[6];
  c.messages_delivered = counts[7];
  c.duplicates = counts[8];
  c.expired = counts[9];
  if (counts.size() == 12) {
    c.notice_bytes_sent = counts[10];
    c.notice_bytes_received = counts[11];
  }
  const std::vector<std::uint64_t> rejected = in.get_u64s("rejected");
  if (rejected.size() > kRejectReasons)  // reasons are only appended: an older checkpoint has fewer
    in.fail("rejected holds " + std::to_string(rejected.size()) + " counts, expected at most " +
            std::to_string(kRejectReasons));
  std::copy(rejected.begin(), rejected.end(), c.rejected.begin());
  c.wait_time = std::chrono::nanoseconds(in.get_i64("wait_ns"));
  c.send_time = std::chrono::nanoseconds(in.get_i64("send_ns"));
  carried_.probe_comm = std::chrono::nanoseconds(in.get_i64("probe_comm_ns"));
  carried_.transfers.seconds = in.get_f64("transfer_s");
  carried_.transfers.bytes = in.get_u64("transfer_bytes");
}

step_end round_steps::checkpoint(std::uint64_t t) {
  const auto every = static_cast<std::uint64_t>(s_.config.train.checkpoint_every);
  if (every == 0 || t % every != 0 || t >= s_.rounds) return {};
  const auto start = clock::now();
  qgossip::checkpoint ck;
  ck.run_id = s_.config.run_id;
  ck.rank = static_cast<std::uint32_t>(s_.rank);
  ck.round = t;
  state_writer round;
  save_round(round);
  ck.add("round", std::move(round));
  state_writer alg;
  s_.alg->save_state(alg);
  ck.add("algorithm", std::move(alg));
  state_writer codec;
  if (s_.codec->has_sender_state()) s_.codec->save_sender_state(codec);
  ck.add("compressor", std::move(codec));
  state_writer sampler;
  s_.sampler->save_state(sampler);
  ck.add("sampler", std::move(sampler));
  state_writer local;
  local_.save_state(local);
  ck.add("local_step", std::move(local));
  state_writer outer;
  outer_.save_state(outer);
  ck.add("outer_step", std::move(outer));
  if (s_.failures) {
    state_writer members;
    s_.failures->save_state(members);
    ck.add("membership", std::move(members));
  }
  try {
    add_csv_bytes(ck, s_.log->sync_csv());  // the rows so far are on the disk before the checkpoint is
  } catch (const config_error& e) {
    return {node_exit::failed, "round " + std::to_string(t) + ": checkpoint: " + e.what()};
  }
  checkpoint_write_options options{.keep = s_.checkpoint_keep};
  if (s_.checkpoint_pause.count() > 0)
    options.after_stage_for_testing = [pause = s_.checkpoint_pause](checkpoint_write_stage stage) {
      if (stage == checkpoint_write_stage::temporary_synced) std::this_thread::sleep_for(pause);
    };
  if (status st = write_checkpoint(s_.checkpoint_dir, ck, options); !st)
    return {node_exit::failed, "round " + std::to_string(t) + ": checkpoint: " + st.to_string()};
  say(s_.rank, "checkpoint of round " + std::to_string(t) + " written (" +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start).count()) +
                   " ms)");
  return {};
}

std::uint64_t round_steps::restore(const qgossip::checkpoint& ck, const std::string& origin) {
  auto load = [&](std::string_view section, auto&& fn) {
    state_reader in = ck.reader(section, origin);
    fn(in);
    in.expect_end();
  };
  load("round", [&](state_reader& in) { load_round(in); });
  if (completed_ != ck.round)
    throw state_error(origin + ": section 'round' completed round " + std::to_string(completed_) +
                      ", the header says " + std::to_string(ck.round));
  load("algorithm", [&](state_reader& in) { s_.alg->load_state(in); });
  load("compressor", [&](state_reader& in) {
    if (s_.codec->has_sender_state()) s_.codec->load_sender_state(in);
  });
  load("sampler", [&](state_reader& in) { s_.sampler->load_state(in); });
  if (s_.failures && ck.find("membership"))  // absent in checkpoints written before it existed
    load("membership", [&](state_reader& in) { s_.failures->load_state(in); });
  load("local_step", [&](state_reader& in) { local_.load_state(in); });
  load("outer_step", [&](state_reader& in) { outer_.load_state(in); });
  return ck.round;
}

}  // namespace qgossip
