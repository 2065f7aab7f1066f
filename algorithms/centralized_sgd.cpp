#include "algorithms/centralized_sgd.hpp"

#include <algorithm>

#include "algorithms/mixing.hpp"
#include "core/errors.hpp"

namespace qgossip {
namespace {

int nodes_of(const mixing_row& row) {
  const int n = static_cast<int>(row.neighbours.size()) + 1;
  for (int j = 0, k = 0; j < n; ++j) {
    if (j == row.rank) continue;
    QG_ENFORCE(row.neighbours[static_cast<std::size_t>(k)] == j,
               "a centralized algorithm talks to every other rank; rank " << j << " is missing");
    ++k;
  }
  return n;
}

void refuse_remix(std::string_view name) {
  QG_ENFORCE(false, name << " cannot remix: every node must take part in a centralized round");
}

}  // namespace

void allgather_sgd::remix(const mixing_row&) { refuse_remix(name()); }
void allreduce_sgd::remix(const mixing_row&) { refuse_remix(name()); }

allgather_sgd::allgather_sgd(const mixing_row& row, std::span<const float> x0)
    : algorithm(communication::all_to_all), row_(row), rank_(row.rank), x_(x0.begin(), x0.end()),
      gradients_(static_cast<std::size_t>(nodes_of(row)), float_vector(x0.size())),
      received_(gradients_.size()), sum_(x0.size()) {}

std::span<const float> allgather_sgd::outgoing(std::span<const float> grad, float lr, std::uint64_t) {
  lr_ = lr;
  std::fill(received_.begin(), received_.end(), false);
  return grad;
}

void allgather_sgd::absorb_own(std::span<const float> decoded, std::uint64_t t) { absorb(rank_, decoded, t); }

void allgather_sgd::absorb(int from, std::span<const float> decoded, std::uint64_t) {
  QG_ENFORCE(from >= 0 && static_cast<std::size_t>(from) < gradients_.size(), "rank " << from);
  QG_ENFORCE(!received_[static_cast<std::size_t>(from)], "two gradients from rank " << from << " in one round");
  auto& g = gradients_[static_cast<std::size_t>(from)];
  QG_ENFORCE(decoded.size() == g.size(), decoded.size() << " vs " << g.size());
  std::copy(decoded.begin(), decoded.end(), g.begin());
  received_[static_cast<std::size_t>(from)] = true;
}

void allgather_sgd::finish(std::uint64_t t) {
  std::fill(sum_.begin(), sum_.end(), 0.0f);
  for (std::size_t r = 0; r < gradients_.size(); ++r) {  // rank order: the same bits on every node
    QG_ENFORCE(received_[r], "round " << t << " finished without the gradient of rank " << r);
    mixing::add(sum_, gradients_[r]);
  }
  mixing::axpy(x_, -lr_ / static_cast<float>(gradients_.size()), sum_);
}

allreduce_sgd::allreduce_sgd(const mixing_row& row, std::span<const float> x0)
    : algorithm(communication::ring_allreduce),
      row_(row),
      n_(nodes_of(row)),
      x_(x0.begin(), x0.end()),
      sum_(x0.size()) {}

std::span<const float> allreduce_sgd::outgoing(std::span<const float> grad, float lr, std::uint64_t) {
  lr_ = lr;
  summed_ = false;
  return grad;
}

void allreduce_sgd::absorb_own(std::span<const float> decoded, std::uint64_t) {
  QG_ENFORCE(decoded.size() == sum_.size(), decoded.size() << " vs " << sum_.size());
  std::copy(decoded.begin(), decoded.end(), sum_.begin());
  summed_ = true;
}

void allreduce_sgd::absorb(int from, std::span<const float>, std::uint64_t) {
  QG_ENFORCE(false, "allreduce receives the all-reduced sum through absorb_own, not messages (from rank " << from
                                                                                                            << ")");
}

void allreduce_sgd::finish(std::uint64_t t) {
  QG_ENFORCE(summed_, "round " << t << " finished without the all-reduced gradient");
  mixing::axpy(x_, -lr_ / static_cast<float>(n_), sum_);
}

// Both centralized algorithms carry only x between rounds (every node the same x), and the node
// count it was trained with.
void allgather_sgd::save_state(state_writer& out) const {
  out.put_string("algorithm", name());
  out.put_u64("nodes", gradients_.size());
  out.put_floats("x", x_);
}

void allgather_sgd::load_state(state_reader& in) {
  in.expect_string("algorithm", name());
  in.expect_u64("nodes", gradients_.size());
  in.get_floats("x", x_);
}

void allreduce_sgd::save_state(state_writer& out) const {
  out.put_string("algorithm", name());
  out.put_u64("nodes", static_cast<std::uint64_t>(n_));
  out.put_floats("x", x_);
}

void allreduce_sgd::load_state(state_reader& in) {
  in.expect_string("algorithm", name());
  in.expect_u64("nodes", static_cast<std::uint64_t>(n_));
  in.get_floats("x", x_);
}

}  // namespace qgossip
