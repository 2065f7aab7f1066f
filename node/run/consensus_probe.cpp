#include "node/run/consensus_probe.hpp"

#include <algorithm>
#include <span>
#include <string>

#include "node/run/node_setup.hpp"

namespace qgossip {

consensus_probe::consensus_probe(node_setup& s) : s_(s) {
  const std::size_t dim = s.rank == 0 && s.links.probing ? s.learner.model->num_params() : 0;
  average_.resize(dim);
  sum_.resize(dim);
}

status consensus_probe::run(std::uint64_t t, bool last, round_record& rec) {
  static const std::vector<int> to_rank0{0}, nobody;
  const std::size_t dim = s_.learner.model->num_params();
  const exchange& ex = *s_.links.ex;
  const auto before = ex.stats().wait_time + ex.stats().send_time;
  const std::span<const float> x = s_.learner.alg->model();
  const outgoing_message msg{.codec = static_cast<std::uint16_t>(codec_id::identity), .codec_tag = 0,
                             .count = dim, .payload = std::as_bytes(x)};
  status st = s_.links.ex->round(message_kind::probe, t * s_.links.shape.iterations_per_round, msg, inbound_,
                                 s_.rank == 0 ? round_peers{nobody, s_.links.all_others} : round_peers{to_rank0, nobody});
  comm_ += ex.stats().wait_time + ex.stats().send_time - before;
  if (!st || s_.rank != 0) return st;

  std::vector<std::span<const float>> models{x};
  for (const auto& m : inbound_) {
    if (m.payload.size() != dim * sizeof(float))
      return status::error(errc::corrupt, "probe from rank " + std::to_string(m.header.sender) + " has " +
                                              std::to_string(m.payload.size()) + " bytes, expected " +
                                              std::to_string(dim * sizeof(float)));
    models.emplace_back(reinterpret_cast<const float*>(m.payload.data()), dim);
  }
  std::fill(sum_.begin(), sum_.end(), 0.0);
  for (const auto& m : models)  // rank order: rank 0, then the others ascending
    for (std::size_t i = 0; i < dim; ++i) sum_[i] += m[i];
  for (std::size_t i = 0; i < dim; ++i) sum_[i] /= static_cast<double>(s_.n);
  double distance = 0;
  for (const auto& m : models)
    for (std::size_t i = 0; i < dim; ++i) distance += (m[i] - sum_[i]) * (m[i] - sum_[i]);
  for (std::size_t i = 0; i < dim; ++i) average_[i] = static_cast<float>(sum_[i]);
  rec.consensus_dist = distance / static_cast<double>(s_.n);
  const auto examples = static_cast<std::size_t>(s_.config.train.eval_examples);
  const eval_result r = s_.learner.model->evaluate(average_, s_.data.test, last || examples == 0 ? model::kAllExamples : examples);
  rec.avg_test_loss = r.loss;
  rec.avg_test_acc = r.accuracy;
  return st;
}

}  // namespace qgossip
