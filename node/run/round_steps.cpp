#include "node/run/round_steps.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "algorithms/capabilities.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"
#include "node/data/npy.hpp"
#include "node/run/node_setup.hpp"

namespace qgossip {

namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string rejected_detail(const exchange_stats& s) {
  std::string out;
  for (std::size_t r = 0; r < kRejectReasons; ++r)
    if (s.rejected[r] > 0)
      out += (out.empty() ? "" : " ") + std::string(to_string(static_cast<reject_reason>(r))) + "=" +
             std::to_string(s.rejected[r]);
  if (s.duplicates > 0) out += (out.empty() ? "" : " ") + std::string("duplicate=") + std::to_string(s.duplicates);
  return out;
}

// Why round t's computation diverged (its outcome, or an outgoing vector that is not finite: for a
// message left to the round as a difference, its minuend, the model), or "".
std::string divergence(const local_training::outcome& e, std::span<const float> outgoing, algorithm& alg,
                       std::uint64_t t) {
  if (!e) return e.diverged;
  const difference_message* d = outgoing.empty() ? difference_message_of(alg) : nullptr;
  if (!kernels::all_finite(d ? d->minuend() : outgoing))
    return "diverged at round " + std::to_string(t) + ": the outgoing message is not finite";
  return {};
}

step_end failure(const status& st, const std::string& what) {
  const node_exit exit = st.code() == errc::cancelled ? node_exit::interrupted
                         : st.code() == errc::refused ? node_exit::refused
                                                      : node_exit::failed;
  return {exit, what + st.to_string(), st.code() == errc::rejoin};
}

}  // namespace

round_steps::round_steps(node_setup& s)
    : s_(s), training_(s.config, s.rank, s.learner, s.plan, s.data.train), probe_(s),
      async_(s.links.async), thread_(s.config.train.overlap ? std::make_unique<round_thread>(&s.pool) : nullptr) {
  if (s.log->header_final()) metrics_.resume(s.log->metric_columns());  // a continued CSV: its columns
}

step_end round_steps::open_round(std::uint64_t& t, bool& mixing_only) {
  node_membership& members = *s_.links.membership;
  if (members.back)
    if (status s = members.back->admit_due(t, *s_.links.ex); !s)
      return back_or_end(failure(s, "round " + std::to_string(t) + ": "), t);
  members.left.begin_round(t);
  const bool catching_up = async_ && async_->mixing_only();
  if (catching_up && catch_up_rounds_++ == 0)
    say(s_.rank, "every neighbour has finished: from round " + std::to_string(t) +
                     " this node only mixes with their final models (no training step), then stops");
  mixing_only = catching_up || only_mix_;
  return {};
}

step_end round_steps::compute(std::uint64_t& t) {
  round_start_ = clock::now();
  bool mixing_only = false;
  if (step_end end = open_round(t, mixing_only); !end || end.rejoined) return end;
  const model& m = *s_.learner.model;
  const double transfer_before = m.transfers().seconds;
  if (std::string why = divergence(training_.round(t, outgoing_, mixing_only), outgoing_, *s_.learner.alg, t);
      !why.empty())
    return {node_exit::diverged, why};
  compute_s_ += seconds(clock::now() - round_start_) - (m.transfers().seconds - transfer_before);
  return {};
}

void round_steps::encode(std::uint64_t t) {
  const auto start = clock::now();
  s_.links.pattern->encode(outgoing_, t);
  codec_s_ += seconds(clock::now() - start);
}

status round_steps::send_and_gather(std::uint64_t t) {
  // The round's own messages: notices, finished messages and their acknowledgements, which come
  // when they come, are outside the row's round bytes as they are outside bytes_sent.
  const exchange_stats& st = s_.links.ex->stats();
  auto sent_now = [&] { return st.bytes_sent - st.notice_bytes_sent; };
  auto received_now = [&] { return st.bytes_received - st.notice_bytes_received; };
  const std::uint64_t sent = sent_now(), received = received_now();
  const status exchanged = s_.links.pattern->exchange(t);
  round_sent_ = sent_now() - sent;
  round_recv_ = received_now() - received;
  return exchanged;
}

step_end round_steps::exchanged(const status& st, std::uint64_t& t) {
  if (!st) return back_or_end(failure(st, "round " + std::to_string(t) + ": "), t);
  after_exchange(t);
  return {};
}

void round_steps::after_exchange(std::uint64_t t) {
  if (async_) staleness_ = std::max(staleness_, async_->staleness());
  s_.links.membership->left.after_exchange(t);
  // An emulated link hands messages over only while the node calls the transport: after the last
  // round nothing would, and the neighbours would wait through the final evaluation for them.
  if (t == s_.plan.rounds)
    if (status fs = s_.links.network->flush(); !fs) say(s_.rank, "warning: messages still in the emulated link: " + fs.to_string());
}

step_end round_steps::exchange(std::uint64_t& t) { return exchanged(send_and_gather(t), t); }

void round_steps::absorb(std::uint64_t t) {
  const auto start = clock::now();
  s_.links.pattern->absorb(t);
  const auto absorbed = clock::now();
  s_.learner.alg->finish(t);
  after_mix(t);
  codec_s_ += seconds(absorbed - start);
  compute_s_ += seconds(clock::now() - absorbed);
}

void round_steps::after_mix(std::uint64_t t) {
  if (const clip_stats* c = clip_stats_of(*s_.learner.alg)) {  // robust mixing: columns of the CSV
    metrics_.add("clip_tau", c->tau);
    metrics_.add("clip_fraction", c->clipped_fraction);
    metrics_.add("clip_largest_distance", c->largest_distance);
    if (s_.config.algorithm_params.robust.screen) {  // the loss screen's
      metrics_.add("screen_fraction", c->screened_fraction);
      metrics_.add("screen_loss_gap", c->loss_gap);
    }
  }
  training_.finish_round();
  completed_ = t;
}

void round_steps::evaluate(std::size_t max_examples) {
  if (s_.data.test.size == 0) return;  // model.kind external: the program evaluates, with its data
  const eval_result r = s_.learner.model->evaluate(s_.learner.alg->model(), s_.data.test,
                                                   max_examples == 0 ? model::kAllExamples : max_examples);
  rec_.test_loss = r.loss;
  rec_.test_acc = r.accuracy;
}

exchange_stats round_steps::traffic() const {
  exchange_stats st = s_.links.ex->stats();
  st += carried_.traffic;
  return st;
}

double round_steps::wall_s() const { return carried_.wall_s + seconds(clock::now() - s_.wall_start); }

void round_steps::fill_record(std::uint64_t t) {
  const exchange_stats st = traffic();
  transfer_stats transfers = s_.learner.model->transfers();
  transfers.seconds += carried_.transfers.seconds;
  transfers.bytes += carried_.transfers.bytes;
  rec_.iteration = t;
  rec_.epoch = s_.plan.epoch_after(t * s_.plan.local_steps);
  rec_.wall_s = wall_s();
  rec_.lr = training_.lr();
  rec_.train_loss = training_.take_mean_loss(rec_.train_loss);
  if (!metrics_.fixed()) {  // the first row: the program's metrics so far are the CSV's extra columns
    metrics_.fix();
    if (!metrics_.names().empty()) s_.log->add_metric_columns(metrics_.names());
  }
  metrics_.take_means(rec_.metrics);
  rec_.round_bytes_sent = round_sent_;
  rec_.round_bytes_recv = round_recv_;
  rec_.bytes_sent = st.bytes_sent - st.probe_bytes_sent - st.notice_bytes_sent;
  rec_.bytes_recv = st.bytes_received - st.probe_bytes_received - st.notice_bytes_received;
  rec_.probe_bytes_sent = st.probe_bytes_sent;
  rec_.compute_s = compute_s_;
  rec_.codec_s = codec_s_;
  rec_.comm_s = seconds(st.wait_time + st.send_time - probe_.comm_time() - carried_.probe_comm);
  rec_.transfer_s = transfers.seconds;
  rec_.transfer_bytes = transfers.bytes;
  rec_.rejected = st.rejected_total();
  rec_.staleness = staleness_;
  rec_.rounds_per_s = rec_.wall_s > row_wall_s_ ? static_cast<double>(t - row_iteration_) / (rec_.wall_s - row_wall_s_) : 0;
  staleness_ = 0;
  row_iteration_ = t;
  row_wall_s_ = rec_.wall_s;
}

step_end round_steps::back_or_end(step_end end, std::uint64_t& t) {
  if (end || !end.rejoin) return end;
  say(s_.rank, "rejoining the run: " + end.error);  // why, as the exchange or a neighbour said
  step_end back = rejoin(t);
  back.rejoined = static_cast<bool>(back);
  return back;
}

step_end round_steps::rejoin(std::uint64_t& t) {
  std::uint64_t restart_at = 0;
  if (status s = s_.links.membership->back->join(t, restart_at, *s_.links.ex); !s) {
    step_end end = failure(s, "rejoining after round " + std::to_string(t) + ": ");
    end.rejoin = false;
    return end;
  }
  // The model is the donor's from round restart_at on; the optimizer's and the outer step's
  // momentum start over at zero (docs/failures.md), the batch order at that round's place.
  training_.restart();
  if (s_.plan.sampler) s_.plan.sampler->seek((restart_at - 1) * s_.plan.local_steps);
  t = restart_at - 1;
  completed_ = t;
  return {};
}

step_end round_steps::run_round(std::uint64_t& t) {
  if (thread_) return run_overlapped(t);
  ++t;
  step_end end = compute(t);
  if (!end || end.rejoined) return end;
  encode(t);
  if (!(end = exchange(t)) || end.rejoined) return end;
  absorb(t);
  if (!(end = log(t))) return end;
  return checkpoint(t);
}

// Round t's local steps beside round t − 1's exchange; then round t − 1 lands and round t is taken
// and handed to the node's thread (see round_steps.hpp).
step_end round_steps::run_overlapped(std::uint64_t& t) {
  ++t;
  round_start_ = clock::now();
  const model& m = *s_.learner.model;
  const double transfer_before = m.transfers().seconds;
  if (!only_mix_)
    if (local_training::outcome e = training_.steps(t); !e) return {node_exit::diverged, e.diverged};
  compute_s_ += seconds(clock::now() - round_start_) - (m.transfers().seconds - transfer_before);
  if (in_flight_) {
    std::uint64_t previous = t - 1;
    const step_end end = land(previous);
    if (!end || end.rejoined || ended_) {  // failed, rejoined, or the node's rounds are over
      t = previous;
      if (end && ended_) training_.reset_parameters();
      return end;
    }
  }
  const step_end end = take_change(t);
  if (!end || end.rejoined) return end;
  // Decided before the thread runs (the exchange moves the membership's and the pattern's state).
  const bool at_once = (async_ && async_->mixing_only()) || only_mix_ || t == s_.plan.rounds || checkpoint_due(t);
  launch(t);
  if (!at_once) return {};
  return land(t);
}

// compute's second half, overlapped: the membership's round, and the parameters round t takes.
step_end round_steps::take_change(std::uint64_t& t) {
  if (step_end end = open_round(t, flight_mixes_only_); !end || end.rejoined) return end;
  if (!flight_mixes_only_) training_.keep_parameters();  // the caller's one copy of the model
  return {};
}

// Round t on the node's thread: its change, encode, exchange, absorb and mix. Until land(t) the
// caller's thread leaves the pattern, the exchange, the membership and the algorithm alone.
void round_steps::launch(std::uint64_t t) {
  in_flight_ = true;
  thread_->start([this, t] {
    const auto start = clock::now();
    flight_diverged_ = divergence(
        flight_mixes_only_ ? training_.round(t, outgoing_, true) : training_.change(t, outgoing_), outgoing_,
        *s_.learner.alg, t);
    if (!flight_diverged_.empty()) return;
    flight_compute_s_ += seconds(clock::now() - start);
    encode(t);
    flight_ = send_and_gather(t);
    if (!flight_) return;
    after_exchange(t);
    const auto mixing = clock::now();
    s_.links.pattern->absorb(t);
    s_.learner.alg->finish(t);
    codec_s_ += seconds(clock::now() - mixing);
  });
}

// The round in flight, t, once the thread is done: its mix written into the parameters (on top of
// the steps taken since), logged, checkpointed.
step_end round_steps::land(std::uint64_t& t) {
  in_flight_ = false;  // first: a job that threw (rethrown here) is not landed twice
  thread_->wait();
  compute_s_ += std::exchange(flight_compute_s_, 0.0);
  if (!flight_diverged_.empty()) return {node_exit::diverged, flight_diverged_};
  if (!flight_) return back_or_end(failure(flight_, "round " + std::to_string(t) + ": "), t);
  after_mix(t);
  if (step_end end = log(t); !end) return end;
  return checkpoint(t);
}

step_end round_steps::settle(std::uint64_t& t) {
  if (!in_flight_) return {};
  return land(t);
}

bool round_steps::checkpoint_due(std::uint64_t t) const {
  const auto every = static_cast<std::uint64_t>(s_.config.train.checkpoint_every);
  const bool halting = s_.links.membership->halt.round() == t;
  return every > 0 && (t % every == 0 || halting) && t < s_.plan.rounds;
}

// Round t completed means no round is in flight, so the membership is the caller's to read.
bool round_steps::halts_after(std::uint64_t t) const {
  return completed_ == t && s_.links.membership->halt.round() == t;
}

void round_steps::hold() {
  if (thread_) thread_->wait();  // the status stays in flight_ for land()
}

step_end round_steps::log(std::uint64_t t) {
  const auto& train = s_.config.train;
  rec_.consensus_dist.reset();
  rec_.avg_test_loss.reset();
  rec_.avg_test_acc.reset();
  const bool last = t == s_.plan.rounds || (async_ && async_->peers_done());
  ended_ = last;
  const bool probe_now = s_.links.probing && (t % static_cast<std::uint64_t>(train.consensus_every) == 0 || last);
  if (probe_now) {
    if (status ps = probe_.run(t, last, rec_); !ps) return failure(ps, "round " + std::to_string(t) + ": consensus probe: ");
    if (last)  // as after the last exchange: the probe must leave before the final evaluation
      if (status fs = s_.links.network->flush(); !fs) say(s_.rank, "warning: messages still in the emulated link: " + fs.to_string());
  }
  const bool eval_now = t % s_.plan.eval_period == 0 && !last;
  if (!eval_now && !probe_now && !last && t % static_cast<std::uint64_t>(train.log_every) != 0) return {};
  rec_.test_loss.reset();
  rec_.test_acc.reset();
  if (eval_now) evaluate(static_cast<std::size_t>(train.eval_examples));
  if (last) evaluate(0);
  fill_record(t);
  s_.log->row(rec_);
  s_.log->progress(rec_, s_.plan.shown_rounds());
  return {};
}

node_exit round_steps::finish(const step_end& ending, std::uint64_t t) {
  step_end end = ending;
  if (in_flight_) {  // overlapped, a round in flight: landed, or abandoned on a failure
    if (end) {
      end = land(t);
    } else {
      in_flight_ = false;
      s_.links.events->cancel();
      try {
        thread_->wait();
      } catch (const std::exception& e) {
        say(s_.rank, std::string("the round in flight: ") + e.what());
      }
    }
  }
  if (end || end.exit == node_exit::halted) {  // halted: every node stops after this same round
    leave(t);
  } else {
    // The launcher hears why first, then the neighbours (before the links close): a neighbour that stops
    // because this node did must not be taken for the cause.
    s_.log->error(end.error);
    s_.links.membership->left.stopping(end.error, *s_.links.ex);
    say(s_.rank, "stopping: " + end.error);
    s_.links.network->abandon_queued();
  }
  // The last round's row, where its round logged none: the round that failed (evaluated unless the
  // model diverged), or a program's last (its loop, not the plan, decided that it was the last).
  if (rec_.iteration != t) {
    rec_.test_loss.reset();
    rec_.test_acc.reset();
    if (end.exit != node_exit::diverged) evaluate(0);
    fill_record(t);
    s_.log->row(rec_);
  }
  if (s_.config.save_model) save_model();
  write_summary(end);
  return end.exit;
}

// output.model: the node's model as it ends (after a failure too: the summary's status says how).
void round_steps::save_model() {
  const std::span<const float> x = s_.learner.alg->model();
  const std::string path = (s_.log->dir() / ("model-" + std::to_string(s_.rank) + ".npy")).string();
  try {
    write_npy(path, "<f4", {x.size()}, std::as_bytes(x));
  } catch (const config_error& e) {
    say(s_.rank, std::string("warning: output.model: ") + e.what());
  }
}

// After the last round: tell the peers, and wait until they have finished too (or left), so that
// no message of this node is still on its way to one that needs it when the links close
// (exchange::finish). A peer that does not finish in time is a warning: this node's run is complete.
void round_steps::leave(std::uint64_t t) {
  const auto deadline = clock::now() + to_ms(s_.config.network.round_timeout_s);
  if (status st = s_.links.pattern->leave(t, deadline); !st) say(s_.rank, "warning: after the last round: " + st.to_string());
  if (status fs = s_.links.network->flush(); !fs) say(s_.rank, "warning: messages still in the emulated link: " + fs.to_string());
}

void round_steps::write_summary(const step_end& end) {
  node_summary summary;
  summary.rank = s_.rank;
  summary.host = host_name();
  const algorithm& alg = *s_.learner.alg;
  summary.copies_kind = std::string(alg.copies_kind());
  summary.hostile = s_.attack;
  summary.error = end.error;
  summary.status = status_of(end.exit);
  summary.last = rec_;
  summary.rounds = completed_;
  summary.stopped_with_peers = end && completed_ < s_.plan.rounds;
  summary.catch_up_rounds = catch_up_rounds_;
  summary.rounds_unsent = async_ ? async_->rounds_unsent() : 0;
  summary.messages_unsent = async_ ? async_->messages_unsent() : 0;
  const exchange_stats st = traffic();
  summary.mean_round_bytes_sent =
      completed_ ? static_cast<double>(st.bytes_sent - st.probe_bytes_sent - st.notice_bytes_sent) /
                        static_cast<double>(completed_) : 0.0;
  summary.wall_s = wall_s();
  summary.gradient_s = training_.gradient_s();
  summary.model_hash = hash64(alg.model());
  summary.group_hashes = s_.group_hashes;
  for (std::size_t i = 0; i < metrics_.names().size(); ++i)
    summary.metrics.emplace_back(metrics_.names()[i], metrics_.last()[i]);
  for (const auto& copy : alg.held_copies())
    summary.copies.push_back({copy.rank, hash64(copy.values), copy.holder});
  summary.rejected_detail = rejected_detail(st);
  const node_membership& m = *s_.links.membership;
  summary.departures = m.left.describe();
  if (m.back) summary.rejoins = m.back->describe();
  for (const departure& d : m.members.departures())  // gone at the end (some came back)
    if (m.members.departed(d.rank)) summary.departed.push_back(d.rank);
  std::sort(summary.departed.begin(), summary.departed.end());
  summary.departed.erase(std::unique(summary.departed.begin(), summary.departed.end()), summary.departed.end());
  s_.log->finish(summary);
  if (!end) return;
  std::ostringstream os;
  os << "done: " << summary.rounds << " rounds in " << summary.wall_s << " s, ";
  if (rec_.test_acc) os << "test accuracy " << *rec_.test_acc << ", ";  // none: the program evaluates
  os << "sent " << rec_.bytes_sent / 1e6 << " MB ("
     << summary.mean_round_bytes_sent << " B/round), time compute " << rec_.compute_s << " s, codec " << rec_.codec_s
     << " s, comm " << rec_.comm_s << " s, host-device copies " << rec_.transfer_s << " s";
  say(s_.rank, os.str());
}

}  // namespace qgossip
