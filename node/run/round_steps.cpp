#include "node/run/round_steps.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "algorithms/mixing.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "node/data/augment.hpp"
#include "node/run/node_setup.hpp"

namespace qgossip {

namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool all_finite(std::span<const float> v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

std::string rejected_detail(const exchange_stats& s) {
  std::string out;
  for (std::size_t r = 0; r < kRejectReasons; ++r)
    if (s.rejected[r] > 0)
      out += (out.empty() ? "" : " ") + std::string(to_string(static_cast<reject_reason>(r))) + "=" +
             std::to_string(s.rejected[r]);
  if (s.duplicates > 0) out += (out.empty() ? "" : " ") + std::string("duplicate=") + std::to_string(s.duplicates);
  return out;
}

step_end failure(const status& st, const std::string& what) {
  return {st.code() == errc::cancelled ? node_exit::interrupted : node_exit::failed, what + st.to_string()};
}

}  // namespace

round_steps::round_steps(node_setup& s)
    : s_(s),
      local_(s.net->num_params(), s.config.train.momentum, s.config.train.weight_decay),
      local_rounds_(s.local_steps > 1 || !s.config.train.outer.is_identity()),
      work_(local_rounds_ ? s.net->num_params() : 0),
      outer_(local_rounds_ ? s.net->num_params() : 0, s.config.train.outer),
      outer_after_round_(local_rounds_ && !s.config.train.outer.is_identity() && !s.alg->adjustable_model().empty()),
      delta_(outer_after_round_ ? s.net->num_params() : 0),
      probe_(s),
      grad_(s.net->num_params()),
      own_decoded_(s.net->num_params()),
      reduced_(s.pattern == communication::ring_allreduce ? s.net->num_params() : 0) {
  encoded_.reserve(s.largest_message);
  if (s.pattern != communication::ring_allreduce) {  // the ring sums raw floats: nothing to decode
    decoded_in_.assign(s.train_peers.size(), float_vector(s.net->num_params()));
    s.validate = [this](const wire_header& h, std::span<const std::byte> payload) {
      return decode(payload, static_cast<int>(h.sender), h.iteration, decoded_in_[peer_slot(static_cast<int>(h.sender))]);
    };
  }
  const augment_spec& a = s.config.data.augment;
  augmenting_ = a.crop_padding > 0 || a.flip;
  if (augmenting_) {
    const auto b = static_cast<std::size_t>(s.config.train.batch);
    batch_ = s.data.train.subset(std::vector<std::size_t>(b, 0));
    batch_rows_.resize(b);
    std::iota(batch_rows_.begin(), batch_rows_.end(), std::size_t{0});
  }
}

// The step's examples: indices into the shard, or (augmenting) into batch_, which then holds
// the step's examples augmented.
std::span<const std::size_t> round_steps::next_batch(std::uint64_t step) {
  const std::span<const std::size_t> rows = s_.sampler->next();
  if (!augmenting_) return rows;
  gather(s_.data.train, rows, batch_.features, batch_.labels);
  augment_batch(batch_, s_.config.data.augment, s_.config.seed, s_.rank, step);
  return batch_rows_;
}

step_end round_steps::gradient(std::uint64_t t, std::uint64_t step, std::span<const float> x) {
  lr_ = s_.schedule.lr_at(s_.epoch_after(step - 1));
  const auto batch = next_batch(step);
  const dataset& examples = augmenting_ ? batch_ : s_.data.train;
  double loss = 0;
  if (s_.factored) {
    loss = s_.net->loss_and_factors(x, examples, batch, factors_);
    gradient_from_factors(factors_, grad_);  // the exact local gradient, for the checks below
  } else {
    s_.net->set_step_size(lr_);
    loss = s_.net->loss_and_grad(x, examples, batch, grad_);
  }
  const double limit = s_.config.train.diverge_loss;
  if (!std::isfinite(loss) || loss > limit || !all_finite(grad_))
    return {node_exit::diverged, "diverged at round " + std::to_string(t) +
                                     (step != t ? " (local step " + std::to_string(step) + ")" : std::string()) +
                                     ": training loss " + std::to_string(loss) +
                                     (std::isfinite(loss) && loss > limit
                                          ? " > train.diverge_loss " + std::to_string(limit) : "")};
  loss_sum_ += loss;
  ++loss_count_;
  return {};
}

// H local steps from x_t on work_. The outer step goes on the whole round's change where the
// algorithm lets the node adjust its model after the round (outer_after_round_: the algorithm gets
// the plain local change, finish_outer applies the outer step to x_t − x_{t+1}); elsewhere (DCD, ECD)
// on the local change, handed to the algorithm in place of γ·g. Either way the node average moves
// by the outer step of the mean change.
step_end round_steps::local_steps(std::uint64_t t) {
  const std::span<const float> start = s_.alg->model();
  std::copy(start.begin(), start.end(), work_.begin());
  for (std::uint64_t k = 1; k <= s_.local_steps; ++k) {
    if (step_end e = gradient(t, (t - 1) * s_.local_steps + k, work_); !e) return e;
    mixing::axpy(work_, -static_cast<float>(lr_), local_.apply(grad_, work_));
  }
  if (!outer_after_round_) {
    outgoing_ = s_.alg->outgoing(outer_.apply(start, work_), 1.0f, t);
    return {};
  }
  mixing::sub(delta_, start, work_);
  std::copy(start.begin(), start.end(), work_.begin());  // x_t, for finish_outer
  outgoing_ = s_.alg->outgoing(delta_, 1.0f, t);
  return {};
}

// x_{t+1} = x_t − s(x_t − x'_{t+1}), x' the algorithm's result of the round (outer_after_round_ only).
void round_steps::finish_outer() {
  const std::span<float> x = s_.alg->adjustable_model();
  mixing::sub(x, work_, outer_.apply(work_, x));
}

std::size_t round_steps::peer_slot(int rank) const {
  const auto& p = s_.train_peers;
  return static_cast<std::size_t>(std::lower_bound(p.begin(), p.end(), rank) - p.begin());
}

step_end round_steps::compute(std::uint64_t t) {
  round_start_ = clock::now();
  if (s_.failures) s_.failures->begin_round(t);
  const double transfer_before = s_.net->transfers().seconds;
  if (local_rounds_) {
    if (step_end e = local_steps(t); !e) return e;
  } else {
    if (step_end e = gradient(t, t, s_.alg->model()); !e) return e;
    outgoing_ = s_.alg->outgoing(local_.apply(grad_, s_.alg->model()), static_cast<float>(lr_), t);
  }
  if (!all_finite(outgoing_))
    return {node_exit::diverged, "diverged at round " + std::to_string(t) + ": the outgoing message is not finite"};
  compute_s_ += seconds(clock::now() - round_start_) - (s_.net->transfers().seconds - transfer_before);
  return {};
}

status round_steps::decode(std::span<const std::byte> bytes, int from, std::uint64_t t, float_vector& out) {
  const codec_context ctx{.seed = s_.config.seed, .rank = static_cast<std::uint32_t>(from), .iteration = t, .stream = 0};
  if (!s_.factored) return s_.codec->decode(bytes, ctx, out);
  std::fill(out.begin(), out.end(), 0.0f);
  return s_.factored->decode(bytes, ctx, s_.fc_shapes, out);
}

void round_steps::encode(std::uint64_t t) {
  if (s_.pattern == communication::ring_allreduce) {  // the all-reduce sums raw floats
    std::copy(outgoing_.begin(), outgoing_.end(), reduced_.begin());
    return;
  }
  const auto start = clock::now();
  const codec_context ctx{.seed = s_.config.seed, .rank = static_cast<std::uint32_t>(s_.rank), .iteration = t, .stream = 0};
  encoded_.clear();
  if (s_.factored) s_.factored->encode(factors_, ctx, encoded_);
  else s_.codec->encode(outgoing_, ctx, encoded_);
  const status own = decode(encoded_, s_.rank, t, own_decoded_);
  QG_ENFORCE(own.is_ok(), "the compressor cannot decode its own message: " << own.to_string());
  s_.alg->absorb_own(own_decoded_, t);
  codec_s_ += seconds(clock::now() - start);
}

step_end round_steps::exchange(std::uint64_t t) {
  const std::uint64_t sent = s_.ex->stats().bytes_sent, received = s_.ex->stats().bytes_received;
  if (s_.pattern == communication::ring_allreduce) {
    exchanged_ = s_.reducer ? s_.reducer->sum(reduced_, (t - 1) * s_.steps_per_round + 1) : status::ok();
  } else {
    const outgoing_message msg{.codec = static_cast<std::uint16_t>(s_.factored ? s_.factored->id() : s_.codec->id()),
                               .codec_tag = s_.factored ? s_.factored->params_tag() : s_.codec->params_tag(),
                               .count = static_cast<std::uint32_t>(s_.net->num_params()),
                               .payload = encoded_};
    exchanged_ = s_.ex->round(message_kind::train, t, msg, inbound_, round_peers{s_.train_peers, s_.train_peers});
  }
  round_sent_ = s_.ex->stats().bytes_sent - sent;
  round_recv_ = s_.ex->stats().bytes_received - received;
  if (!exchanged_) return failure(exchanged_, "round " + std::to_string(t) + ": ");
  if (s_.failures) s_.failures->after_exchange(t);
  // An emulated link hands messages over only while the node calls the transport: after the last
  // round nothing would, and the neighbours would wait through the final evaluation for them.
  if (t == s_.rounds)
    if (status fs = s_.network->flush(); !fs) say(s_.rank, "warning: messages still in the emulated link: " + fs.to_string());
  return {};
}

step_end round_steps::absorb(std::uint64_t t) {
  const auto start = clock::now();
  if (s_.pattern == communication::ring_allreduce) {
    s_.alg->absorb_own(reduced_, t);
  } else {
    // The exchange delivered only messages that decoded (exchange_options::validate): each one's
    // decoded vector waits in its sender's slot.
    for (const inbound_message& m : inbound_) {
      const int from = static_cast<int>(m.header.sender);
      s_.alg->absorb(from, decoded_in_[peer_slot(from)], t);
    }
  }
  const auto decoded = clock::now();
  s_.alg->finish(t);
  if (outer_after_round_) finish_outer();
  completed_ = t;
  codec_s_ += seconds(decoded - start);
  compute_s_ += seconds(clock::now() - decoded);
  return {};
}

void round_steps::evaluate(std::size_t max_examples) {
  const eval_result r = s_.net->evaluate(s_.alg->model(), s_.data.test, max_examples == 0 ? model::kAllExamples : max_examples);
  rec_.test_loss = r.loss;
  rec_.test_acc = r.accuracy;
}

exchange_stats round_steps::traffic() const {
  exchange_stats st = s_.ex->stats();
  const exchange_stats& c = carried_.traffic;
  st.rounds += c.rounds;
  st.messages_sent += c.messages_sent;
  st.bytes_sent += c.bytes_sent;
  st.probe_bytes_sent += c.probe_bytes_sent;
  st.probe_bytes_received += c.probe_bytes_received;
  st.notice_bytes_sent += c.notice_bytes_sent;
  st.notice_bytes_received += c.notice_bytes_received;
  st.messages_received += c.messages_received;
  st.bytes_received += c.bytes_received;
  st.messages_delivered += c.messages_delivered;
  st.duplicates += c.duplicates;
  st.expired += c.expired;
  for (std::size_t r = 0; r < kRejectReasons; ++r) st.rejected[r] += c.rejected[r];
  st.wait_time += c.wait_time;
  st.send_time += c.send_time;
  return st;
}

double round_steps::wall_s() const { return carried_.wall_s + seconds(clock::now() - s_.wall_start); }

void round_steps::fill_record(std::uint64_t t) {
  const exchange_stats st = traffic();
  transfer_stats transfers = s_.net->transfers();
  transfers.seconds += carried_.transfers.seconds;
  transfers.bytes += carried_.transfers.bytes;
  rec_.iteration = t;
  rec_.epoch = s_.epoch_after(t * s_.local_steps);
  rec_.wall_s = wall_s();
  rec_.lr = lr_;
  rec_.train_loss = loss_count_ ? loss_sum_ / static_cast<double>(loss_count_) : rec_.train_loss;
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
}

step_end round_steps::log(std::uint64_t t) {
  const auto& train = s_.config.train;
  rec_.consensus_dist.reset();
  rec_.avg_test_loss.reset();
  rec_.avg_test_acc.reset();
  const bool last = t == s_.rounds;
  const bool probe_now = s_.probing && (t % static_cast<std::uint64_t>(train.consensus_every) == 0 || last);
  if (probe_now) {
    if (status ps = probe_.run(t, last, rec_); !ps) return failure(ps, "round " + std::to_string(t) + ": consensus probe: ");
    if (last)  // as after the last exchange: the probe must leave before the final evaluation
      if (status fs = s_.network->flush(); !fs) say(s_.rank, "warning: messages still in the emulated link: " + fs.to_string());
  }
  const bool eval_now = t % s_.eval_period == 0 && !last;
  if (!eval_now && !probe_now && !last && t % static_cast<std::uint64_t>(train.log_every) != 0) return {};
  rec_.test_loss.reset();
  rec_.test_acc.reset();
  if (eval_now) evaluate(static_cast<std::size_t>(train.eval_examples));
  if (last) evaluate(0);
  fill_record(t);
  s_.log->row(rec_);
  s_.log->progress(rec_, s_.rounds);
  loss_sum_ = 0;
  loss_count_ = 0;
  return {};
}

node_exit round_steps::finish(const step_end& end, std::uint64_t t) {
  if (end) {
    leave(t);
  } else if (s_.failures) {  // before the links close: the neighbours learn why
    s_.failures->stopping(end.error);
  }
  if (!end) {
    say(s_.rank, "stopping: " + end.error);
    s_.network->abandon_queued();
    if (rec_.iteration != t) {  // the row of the round that failed, evaluated unless the model diverged
      rec_.test_loss.reset();
      rec_.test_acc.reset();
      if (end.exit != node_exit::diverged) evaluate(0);
      fill_record(t);
      s_.log->row(rec_);
    }
  }
  write_summary(end);
  return end.exit;
}

// After the last round: tell the peers, and wait until they have finished too (or left), so that
// no message of this node is still on its way to one that needs it when the links close
// (exchange::finish). A peer that does not finish in time is a warning: this node's run is complete.
void round_steps::leave(std::uint64_t t) {
  const auto deadline = clock::now() + to_ms(s_.config.network.round_timeout_s);
  if (status st = s_.ex->finish(t, deadline); !st)
    say(s_.rank, "warning: after the last round: " + st.to_string());
  if (status fs = s_.network->flush(); !fs) say(s_.rank, "warning: messages still in the emulated link: " + fs.to_string());
}

void round_steps::write_summary(const step_end& end) {
  node_summary summary;
  summary.rank = s_.rank;
  summary.host = host_name();
  summary.copies_kind = std::string(s_.alg->copies_kind());
  summary.error = end.error;
  summary.status = end.exit == node_exit::ok ? "ok"
                   : end.exit == node_exit::diverged ? "diverged"
                   : end.exit == node_exit::interrupted ? "interrupted" : "failed";
  summary.last = rec_;
  summary.rounds = completed_;
  const exchange_stats st = traffic();
  summary.mean_round_bytes_sent =
      completed_ ? static_cast<double>(st.bytes_sent - st.probe_bytes_sent - st.notice_bytes_sent) /
                        static_cast<double>(completed_) : 0.0;
  summary.wall_s = wall_s();
  summary.model_hash = hash64(s_.alg->model());
  for (const auto& copy : s_.alg->held_copies()) summary.copies.push_back({copy.rank, hash64(copy.values)});
  summary.rejected_detail = rejected_detail(st);
  if (s_.failures) {
    summary.departures = s_.failures->describe_departures();
    for (const departure& d : s_.failures->members().departures()) summary.departed.push_back(d.rank);
    std::sort(summary.departed.begin(), summary.departed.end());
  }
  s_.log->finish(summary);
  if (!end) return;
  std::ostringstream os;
  os << "done: " << summary.rounds << " rounds in " << summary.wall_s << " s, test accuracy "
     << (rec_.test_acc ? *rec_.test_acc : 0.0) << ", sent " << rec_.bytes_sent / 1e6 << " MB ("
     << summary.mean_round_bytes_sent << " B/round), time compute " << rec_.compute_s << " s, codec " << rec_.codec_s
     << " s, comm " << rec_.comm_s << " s, host-device copies " << rec_.transfer_s << " s";
  say(s_.rank, os.str());
}

}  // namespace qgossip
