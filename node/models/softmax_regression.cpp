#include "node/models/softmax_regression.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/errors.hpp"
#include "core/portable_random.hpp"

namespace qgossip {

using matrix_map = Eigen::Map<Eigen::MatrixXf>;
using const_matrix_map = Eigen::Map<const Eigen::MatrixXf>;
using const_vector_map = Eigen::Map<const Eigen::VectorXf>;
using vector_map = Eigen::Map<Eigen::VectorXf>;

double softmax_xent_grad(Eigen::Ref<Eigen::MatrixXf> logits, std::span<const std::uint8_t> labels,
                         xent_grad kind) {
  const Eigen::Index classes = logits.rows();
  const Eigen::Index n = logits.cols();
  QG_ENFORCE(static_cast<std::size_t>(n) == labels.size(), "logits " << n << " labels " << labels.size());
  const double inv_n = 1.0 / static_cast<double>(n);
  const double scale = kind == xent_grad::mean ? inv_n : 1.0;
  double loss = 0.0;
  for (Eigen::Index j = 0; j < n; ++j) {
    float* z = logits.col(j).data();
    const float m = *std::max_element(z, z + classes);
    double sum = 0.0;
    for (Eigen::Index k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k] - m));
    const double lse = static_cast<double>(m) + std::log(sum);
    const std::uint8_t y = labels[static_cast<std::size_t>(j)];
    QG_ENFORCE(y < classes, "label " << int(y) << " >= classes " << classes);
    loss += lse - static_cast<double>(z[y]);
    for (Eigen::Index k = 0; k < classes; ++k) {
      const double p = std::exp(static_cast<double>(z[k]) - lse);
      z[k] = static_cast<float>((p - (k == y ? 1.0 : 0.0)) * scale);
    }
  }
  return loss * inv_n;
}

void softmax_xent_eval(const Eigen::Ref<const Eigen::MatrixXf>& logits, std::span<const std::uint8_t> labels,
                       double& loss_sum, std::size_t& correct) {
  const Eigen::Index classes = logits.rows();
  QG_ENFORCE(static_cast<std::size_t>(logits.cols()) == labels.size(),
             "logits " << logits.cols() << " labels " << labels.size());
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    const float* z = logits.col(j).data();
    const float* best = std::max_element(z, z + classes);  // first maximum: ties go to the lowest class
    double sum = 0.0;
    for (Eigen::Index k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k] - *best));
    const std::uint8_t y = labels[static_cast<std::size_t>(j)];
    QG_ENFORCE(y < classes, "label " << int(y) << " >= classes " << classes);
    loss_sum += static_cast<double>(*best) + std::log(sum) - static_cast<double>(z[y]);
    if (best - z == y) ++correct;
  }
}

softmax_regression::softmax_regression(std::size_t dim, std::size_t classes, init_kind init)
    : dim_(dim), classes_(classes), init_(init) {
  if (dim == 0) throw config_error("softmax: input dimension must be >= 1");
  if (classes < 2 || classes > 256) {
    throw config_error("softmax: classes must be in 2..256, got " + std::to_string(classes));
  }
  bounds_ = {0, classes * dim + classes};
}

void softmax_regression::init(std::span<float> params, std::uint64_t seed) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " != " << num_params());
  std::mt19937_64 rng(derive_seed(seed, 0));
  if (init_ == init_kind::pytorch) {
    fill_uniform(params, 1.0 / std::sqrt(static_cast<double>(dim_)), rng);
    return;
  }
  fill_normal(params.first(classes_ * dim_), std::sqrt(2.0 / static_cast<double>(dim_ + classes_)), rng);
  std::fill(params.begin() + static_cast<std::ptrdiff_t>(classes_ * dim_), params.end(), 0.0f);
}

void softmax_regression::forward_batch(std::span<const float> params, const dataset& d,
                                       std::span<const std::size_t> batch) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " model " << num_params());
  QG_ENFORCE(d.dim == dim_ && d.classes == classes_,
             "data " << d.dim << "->" << d.classes << " model " << describe());
  QG_ENFORCE(!batch.empty());
  const std::size_t n = batch.size();
  grow_scratch(inputs_, n * dim_);
  grow_scratch(labels_, n);
  grow_scratch(logits_, n * classes_);
  gather(d, batch, inputs_, labels_);

  const auto c = static_cast<Eigen::Index>(classes_);
  const auto cols = static_cast<Eigen::Index>(n);
  const_matrix_map w(params.data(), c, static_cast<Eigen::Index>(dim_));
  const_vector_map b(params.data() + classes_ * dim_, c);
  const_matrix_map x(inputs_.data(), static_cast<Eigen::Index>(dim_), cols);
  matrix_map z(logits_.data(), c, cols);
  z.noalias() = w * x;
  z.colwise() += b;
}

double softmax_regression::loss_and_grad(std::span<const float> params, const dataset& d,
                                         std::span<const std::size_t> batch, std::span<float> grad) const {
  QG_ENFORCE(grad.size() == num_params(), "grad " << grad.size() << " model " << num_params());
  forward_batch(params, d, batch);
  const std::size_t n = batch.size();
  const auto c = static_cast<Eigen::Index>(classes_);
  const auto in = static_cast<Eigen::Index>(dim_);
  const auto cols = static_cast<Eigen::Index>(n);
  matrix_map z(logits_.data(), c, cols);
  const double loss = softmax_xent_grad(z, std::span<const std::uint8_t>(labels_).first(n));
  const_matrix_map x(inputs_.data(), in, cols);
  matrix_map dw(grad.data(), c, in);
  vector_map db(grad.data() + classes_ * dim_, c);
  dw.noalias() = z * x.transpose();
  db.noalias() = z.rowwise().sum();
  return loss;
}

double softmax_regression::loss_and_factors(std::span<const float> params, const dataset& d,
                                            std::span<const std::size_t> batch,
                                            std::vector<fc_factors>& out) const {
  forward_batch(params, d, batch);
  const std::size_t n = batch.size();
  matrix_map z(logits_.data(), static_cast<Eigen::Index>(classes_), static_cast<Eigen::Index>(n));
  const double loss = softmax_xent_grad(z, std::span<const std::uint8_t>(labels_).first(n), xent_grad::per_example);
  out.resize(1);
  fc_factors& f = out[0];
  f.offset = 0;
  f.in = dim_;
  f.out = classes_;
  f.batch = n;
  f.x.assign(inputs_.begin(), inputs_.begin() + static_cast<std::ptrdiff_t>(n * dim_));
  f.delta.assign(logits_.begin(), logits_.begin() + static_cast<std::ptrdiff_t>(n * classes_));
  return loss;
}

std::vector<fc_factors> softmax_regression::fc_shapes() const {
  std::vector<fc_factors> shapes(1);
  shapes[0].in = dim_;
  shapes[0].out = classes_;
  return shapes;
}

eval_result softmax_regression::evaluate(std::span<const float> params, const dataset& d,
                                         std::size_t max_examples) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " != " << num_params());
  QG_ENFORCE(d.dim == dim_ && d.classes == classes_,
             "data " << d.dim << "->" << d.classes << " model " << describe());
  const std::size_t total = std::min(max_examples, d.size);
  QG_ENFORCE(total > 0, "nothing to evaluate");
  const auto c = static_cast<Eigen::Index>(classes_);
  const auto in = static_cast<Eigen::Index>(dim_);
  const_matrix_map w(params.data(), c, in);
  const_vector_map b(params.data() + classes_ * dim_, c);
  grow_scratch(logits_, std::min(total, kEvalChunk) * classes_);
  double loss_sum = 0.0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < total; start += kEvalChunk) {
    const std::size_t n = std::min(kEvalChunk, total - start);
    // Consecutive rows of the row-major features are already a column-major dim × n matrix.
    const_matrix_map x(d.features.data() + start * dim_, in, static_cast<Eigen::Index>(n));
    matrix_map z(logits_.data(), c, static_cast<Eigen::Index>(n));
    z.noalias() = w * x;
    z.colwise() += b;
    softmax_xent_eval(z, std::span<const std::uint8_t>(d.labels).subspan(start, n), loss_sum, correct);
  }
  return {loss_sum / static_cast<double>(total), static_cast<double>(correct) / static_cast<double>(total),
          total};
}

std::string softmax_regression::describe() const {
  return "softmax " + std::to_string(dim_) + "-" + std::to_string(classes_);
}

}  // namespace qgossip
