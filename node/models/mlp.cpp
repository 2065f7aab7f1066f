#include "node/models/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <Eigen/Core>

#include "core/errors.hpp"
#include "core/portable_random.hpp"
#include "node/models/softmax_regression.hpp"

namespace qgossip {
namespace {

using matrix_map = Eigen::Map<Eigen::MatrixXf>;
using const_matrix_map = Eigen::Map<const Eigen::MatrixXf>;
using const_vector_map = Eigen::Map<const Eigen::VectorXf>;
using vector_map = Eigen::Map<Eigen::VectorXf>;

Eigen::Index idx(std::size_t v) { return static_cast<Eigen::Index>(v); }

}  // namespace

mlp::mlp(std::size_t dim, std::vector<std::size_t> hidden, std::size_t classes, init_kind init) : init_(init) {
  if (dim == 0) throw config_error("mlp: input dimension must be >= 1");
  if (hidden.empty()) throw config_error("mlp: needs at least one hidden layer (use model softmax for none)");
  for (std::size_t l = 0; l < hidden.size(); ++l) {
    if (hidden[l] == 0) throw config_error("mlp: hidden layer " + std::to_string(l) + " has width 0");
  }
  if (classes < 2 || classes > 256) {
    throw config_error("mlp: classes must be in 2..256, got " + std::to_string(classes));
  }
  widths_.push_back(dim);
  widths_.insert(widths_.end(), hidden.begin(), hidden.end());
  widths_.push_back(classes);
  bounds_.push_back(0);
  for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
    bounds_.push_back(bounds_.back() + widths_[l + 1] * widths_[l] + widths_[l + 1]);
  }
  acts_.resize(widths_.size() - 1);
}

void mlp::init(std::span<float> params, std::uint64_t seed) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " != " << num_params());
  const std::size_t layers = widths_.size() - 1;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::size_t in = widths_[l], out = widths_[l + 1];
    const double var = l + 1 < layers ? 2.0 / static_cast<double>(in) : 2.0 / static_cast<double>(in + out);
    std::mt19937_64 rng(derive_seed(seed, l));
    if (init_ == init_kind::pytorch) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(in));
      fill_uniform(params.subspan(bounds_[l], out * in + out), bound, rng);
      continue;
    }
    fill_normal(params.subspan(bounds_[l], out * in), std::sqrt(var), rng);
    std::fill_n(params.begin() + static_cast<std::ptrdiff_t>(bounds_[l] + out * in), out, 0.0f);
  }
}

float* mlp::forward(std::span<const float> params, const float* x, std::size_t n) const {
  const std::size_t layers = widths_.size() - 1;
  const float* input = x;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::size_t in = widths_[l], out = widths_[l + 1];
    grow_scratch(acts_[l], out * n);
    const_matrix_map w(params.data() + bounds_[l], idx(out), idx(in));
    const_vector_map b(params.data() + bounds_[l] + out * in, idx(out));
    const_matrix_map a_in(input, idx(in), idx(n));
    matrix_map a(acts_[l].data(), idx(out), idx(n));
    a.noalias() = w * a_in;
    a.colwise() += b;
    if (l + 1 < layers) a = a.cwiseMax(0.0f);
    input = acts_[l].data();
  }
  return acts_[layers - 1].data();
}

float* mlp::forward_batch(std::span<const float> params, const dataset& d,
                          std::span<const std::size_t> batch) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " model " << num_params());
  QG_ENFORCE(d.dim == input_dim() && d.classes == classes(),
             "data " << d.dim << "->" << d.classes << " model " << describe());
  QG_ENFORCE(!batch.empty());
  const std::size_t n = batch.size();
  grow_scratch(inputs_, n * input_dim());
  grow_scratch(labels_, n);
  gather(d, batch, inputs_, labels_);
  return forward(params, inputs_.data(), n);
}

void mlp::backprop_to_previous(std::span<const float> params, std::size_t l, std::size_t n) const {
  const std::size_t in = widths_[l], out = widths_[l + 1];
  grow_scratch(delta_, in * n);
  const_matrix_map dz(acts_[l].data(), idx(out), idx(n));
  const_matrix_map w(params.data() + bounds_[l], idx(out), idx(in));
  matrix_map da(delta_.data(), idx(in), idx(n));
  da.noalias() = w.transpose() * dz;
  // ReLU'(z) = [z > 0] = [relu(z) > 0]: the stored activation is enough to mask with.
  matrix_map a_prev(acts_[l - 1].data(), idx(in), idx(n));
  a_prev.array() = (a_prev.array() > 0.0f).select(da.array(), 0.0f);
}

double mlp::loss_and_grad(std::span<const float> params, const dataset& d, std::span<const std::size_t> batch,
                          std::span<float> grad) const {
  QG_ENFORCE(grad.size() == num_params(), "grad " << grad.size() << " model " << num_params());
  float* logits = forward_batch(params, d, batch);
  const std::size_t n = batch.size();
  const std::size_t layers = widths_.size() - 1;
  // From here on acts_[l] is overwritten, last layer first, by d(loss)/d(pre-activation of l).
  const double loss = softmax_xent_grad(matrix_map(logits, idx(classes()), idx(n)),
                                        std::span<const std::uint8_t>(labels_).first(n));
  for (std::size_t l = layers; l-- > 0;) {
    const std::size_t in = widths_[l], out = widths_[l + 1];
    const float* input = l == 0 ? inputs_.data() : acts_[l - 1].data();
    const_matrix_map dz(acts_[l].data(), idx(out), idx(n));
    const_matrix_map a_in(input, idx(in), idx(n));
    matrix_map dw(grad.data() + bounds_[l], idx(out), idx(in));
    vector_map db(grad.data() + bounds_[l] + out * in, idx(out));
    dw.noalias() = dz * a_in.transpose();
    db.noalias() = dz.rowwise().sum();
    if (l == 0) break;  // no gradient w.r.t. the data
    backprop_to_previous(params, l, n);
  }
  return loss;
}

double mlp::loss_and_factors(std::span<const float> params, const dataset& d, std::span<const std::size_t> batch,
                             std::vector<fc_factors>& out) const {
  float* logits = forward_batch(params, d, batch);
  const std::size_t n = batch.size();
  const std::size_t layers = widths_.size() - 1;
  out.resize(layers);
  // The inputs first: back-propagation overwrites the activations.
  for (std::size_t l = 0; l < layers; ++l) {
    fc_factors& f = out[l];
    f.offset = bounds_[l];
    f.in = widths_[l];
    f.out = widths_[l + 1];
    f.batch = n;
    const float* input = l == 0 ? inputs_.data() : acts_[l - 1].data();
    f.x.assign(input, input + f.in * n);
  }
  const double loss = softmax_xent_grad(matrix_map(logits, idx(classes()), idx(n)),
                                        std::span<const std::uint8_t>(labels_).first(n), xent_grad::per_example);
  for (std::size_t l = layers; l-- > 0;) {
    out[l].delta.assign(acts_[l].data(), acts_[l].data() + widths_[l + 1] * n);
    if (l == 0) break;
    backprop_to_previous(params, l, n);
  }
  return loss;
}

std::vector<fc_factors> mlp::fc_shapes() const {
  std::vector<fc_factors> shapes(widths_.size() - 1);
  for (std::size_t l = 0; l < shapes.size(); ++l) {
    shapes[l].offset = bounds_[l];
    shapes[l].in = widths_[l];
    shapes[l].out = widths_[l + 1];
  }
  return shapes;
}

eval_result mlp::evaluate(std::span<const float> params, const dataset& d, std::size_t max_examples) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " != " << num_params());
  QG_ENFORCE(d.dim == input_dim() && d.classes == classes(),
             "data " << d.dim << "->" << d.classes << " model " << describe());
  const std::size_t total = std::min(max_examples, d.size);
  QG_ENFORCE(total > 0, "nothing to evaluate");
  double loss_sum = 0.0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < total; start += kEvalChunk) {
    const std::size_t n = std::min(kEvalChunk, total - start);
    // Consecutive rows of the row-major features are already a column-major dim × n matrix.
    const float* logits = forward(params, d.features.data() + start * d.dim, n);
    softmax_xent_eval(const_matrix_map(logits, idx(classes()), idx(n)),
                      std::span<const std::uint8_t>(d.labels).subspan(start, n), loss_sum, correct);
  }
  return {loss_sum / static_cast<double>(total), static_cast<double>(correct) / static_cast<double>(total),
          total};
}

std::string mlp::describe() const {
  std::string s = "mlp ";
  for (std::size_t l = 0; l < widths_.size(); ++l) s += (l ? "-" : "") + std::to_string(widths_[l]);
  return s;
}

}  // namespace qgossip
