#include "algorithms/compress/isgq_mse.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "algorithms/compress/isgq_quantizers.hpp"

namespace qgossip::isgq_parts {

namespace {

// ---------------------------------------------------------------------------------------------
// MSE-ISGQ (the paper's Alg. 1). One half-step fits the reconstruction points pi of one factor P
// (rows × L, binned by `codes`) with the other factor fixed: O (orows × L) and its reconstruction
// O~, each optionally with a row of ones appended (the bias input, exact). With T = (1/L) P Oᵀ and
// G~(pi) = (1/L) P~(pi) O~ᵀ, the objective
//   f(pi) = ||T - G~||² + lambda (sum T + extra - sum G~)²
// is, up to the constant ||T||², the quadratic piᵀ H pi - 2 rᵀ pi + lambda (pᵀ pi - total)² with
//   H_kk' = (1/L²) sum_i sum_e,e' [c_ie = k][c_ie' = k'] S_ee',  S = O~ᵀ O~   (L × L)
//   r_k   = (1/L²) sum_i,e [c_ie = k] (P R)_ie,                   R = Oᵀ O~
//   p_k   = (1/L)  sum_i,e [c_ie = k] s_e,                        s = column sums of O~
//   total = (1/L)  sum_i,e P_ie t_e + extra,                      t = column sums of O
// so nothing of size rows × orows is ever formed: the cost is O((rows + orows) L²).

struct quadratic {
  Eigen::MatrixXd h;
  Eigen::VectorXd r, p;
  double total = 0;
  std::vector<std::size_t> count;  // entries in each bin
};

using dmatrix = Eigen::MatrixXd;
using fmap = Eigen::Map<const Eigen::MatrixXf>;

quadratic build_quadratic(std::span<const float> p_values, std::span<const std::uint16_t> codes, std::size_t rows,
                          std::span<const float> o_values, std::span<const float> o_tilde, std::size_t orows,
                          std::size_t batch, bool ones_row, double extra, std::size_t levels) {
  const auto l = static_cast<Eigen::Index>(batch);
  const dmatrix o = fmap(o_values.data(), static_cast<Eigen::Index>(orows), l).cast<double>();
  const dmatrix ot = fmap(o_tilde.data(), static_cast<Eigen::Index>(orows), l).cast<double>();
  const dmatrix p = fmap(p_values.data(), static_cast<Eigen::Index>(rows), l).cast<double>();
  const double one = ones_row ? 1.0 : 0.0;
  dmatrix s = ot.transpose() * ot;
  dmatrix r = o.transpose() * ot;
  s.array() += one;
  r.array() += one;
  const Eigen::VectorXd s_col = (ot.colwise().sum().array() + one).transpose();
  const Eigen::VectorXd t_col = (o.colwise().sum().array() + one).transpose();
  const dmatrix pr = p * r;  // rows × L

  quadratic q;
  q.h = dmatrix::Zero(static_cast<Eigen::Index>(levels), static_cast<Eigen::Index>(levels));
  q.r = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(levels));
  q.p = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(levels));
  q.count.assign(levels, 0);
  // H, row by row: with the row's distinct codes u_0..u_{p-1} (p <= L, usually a handful) and
  // R = S M (L × p, M the row's one-hot codes), H(c_e, u_j) += R(e, j). Building R adds whole
  // columns of S (vectorized), where adding S(e, e') into H one entry at a time would chain on the
  // few cells that most entries hit.
  std::vector<std::uint16_t> row_codes(batch), local(batch), distinct;
  std::vector<int> slot(levels, -1);
  std::vector<double> rmat;
  double* h = q.h.data();  // column-major levels × levels
  for (std::size_t i = 0; i < rows; ++i) {
    distinct.clear();
    for (std::size_t e = 0; e < batch; ++e) {
      const std::uint16_t k = codes[e * rows + i];
      row_codes[e] = k;
      if (slot[k] < 0) {
        slot[k] = static_cast<int>(distinct.size());
        distinct.push_back(k);
      }
      local[e] = static_cast<std::uint16_t>(slot[k]);
      ++q.count[k];
      q.r(k) += pr(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(e));
      q.p(k) += s_col(static_cast<Eigen::Index>(e));
    }
    const std::size_t p = distinct.size();
    rmat.assign(batch * p, 0.0);
    for (std::size_t e2 = 0; e2 < batch; ++e2) {
      double* col = rmat.data() + local[e2] * batch;
      const double* s_e2 = s.data() + e2 * batch;
      for (std::size_t e = 0; e < batch; ++e) col[e] += s_e2[e];
    }
    for (std::size_t j = 0; j < p; ++j) {
      double* h_col = h + static_cast<std::size_t>(distinct[j]) * levels;
      const double* col = rmat.data() + j * batch;
      for (std::size_t e = 0; e < batch; ++e) h_col[row_codes[e]] += col[e];
    }
    for (const std::uint16_t k : distinct) slot[k] = -1;
  }
  const double inv_l = 1.0 / static_cast<double>(batch);
  q.h *= inv_l * inv_l;
  q.r *= inv_l * inv_l;
  q.p *= inv_l;
  q.total = (p * t_col).sum() * inv_l + extra;
  return q;
}

double objective(const quadratic& q, std::span<const float> points, double lambda) {
  Eigen::VectorXd x(static_cast<Eigen::Index>(points.size()));
  for (std::size_t k = 0; k < points.size(); ++k) x(static_cast<Eigen::Index>(k)) = points[k];
  const double bias = q.p.dot(x) - q.total;
  return x.dot(q.h * x) - 2.0 * q.r.dot(x) + lambda * bias * bias;
}

// The minimizer over the points of occupied bins (the others do not enter f and keep their value),
// rounded to float; kept only if it is finite and does not increase f, so no step can make the
// fit worse (a singular system, e.g. an all-zero other factor, leaves the points as they were).
void solve_points(const quadratic& q, double lambda, std::vector<float>& points) {
  std::vector<Eigen::Index> used;
  for (std::size_t k = 0; k < points.size(); ++k)
    if (q.count[k] > 0) used.push_back(static_cast<Eigen::Index>(k));
  if (used.empty()) return;
  const auto m = static_cast<Eigen::Index>(used.size());
  dmatrix a(m, m);
  Eigen::VectorXd b(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    b(i) = q.r(used[i]) + lambda * q.total * q.p(used[i]);
    for (Eigen::Index j = 0; j < m; ++j) a(i, j) = q.h(used[i], used[j]) + lambda * q.p(used[i]) * q.p(used[j]);
  }
  // A relative ridge far below float resolution keeps the factorization defined when bins are
  // collinear (two bins that always co-occur) without moving a well-posed solution.
  a.diagonal().array() += 1e-12 * std::max(a.diagonal().maxCoeff(), 1e-300);
  const Eigen::VectorXd x = a.ldlt().solve(b);
  std::vector<float> candidate = points;
  for (Eigen::Index i = 0; i < m; ++i) {
    const double v = x(i);
    if (!std::isfinite(v) || std::abs(v) > double{FLT_MAX}) return;
    candidate[static_cast<std::size_t>(used[i])] = static_cast<float>(v);
  }
  if (objective(q, candidate, lambda) <= objective(q, points, lambda)) points = std::move(candidate);
}

}  // namespace

std::vector<float> uniform_points(std::uint32_t levels, float kappa) {
  std::vector<float> points(2 * levels + 1);
  for (std::size_t k = 0; k < points.size(); ++k)
    points[k] = static_cast<float>((static_cast<double>(k) - levels) * static_cast<double>(kappa));
  return points;
}

void fit_mse(const fc_factors& f, std::span<const std::uint16_t> cx, std::span<const std::uint16_t> cd,
             const isgq_options& o, std::vector<float>& alpha, std::vector<float>& beta) {
  const std::size_t l = f.batch;
  // The paper's lambda per entry of the layer gradient (isgq.hpp): sum² / N.
  const double lambda = o.mse_lambda / static_cast<double>(f.out * (f.in + 1));
  std::vector<float> xt(f.in * l), dt(f.out * l);
  point_values(cx, alpha, xt);
  point_values(cd, beta, dt);
  for (std::uint32_t it = 0; it < o.mse_iterations; ++it) {
    // beta: G~ = (1/L) Δ~ [X~; 1]ᵀ is linear in beta over the whole layer gradient [W b].
    quadratic q = build_quadratic(f.delta, cd, f.out, f.x, xt, f.in, l, /*ones_row=*/true, 0.0, beta.size());
    solve_points(q, lambda, beta);
    point_values(cd, beta, dt);
    // alpha: only the W-part depends on it; the bias-part's error enters the total bias as a constant.
    double bias_part = 0;
    for (std::size_t i = 0; i < dt.size(); ++i) bias_part += static_cast<double>(f.delta[i]) - dt[i];
    q = build_quadratic(f.x, cx, f.in, f.delta, dt, f.out, l, /*ones_row=*/false, bias_part / static_cast<double>(l),
                        alpha.size());
    solve_points(q, lambda, alpha);
    point_values(cx, alpha, xt);
  }
}

}  // namespace qgossip::isgq_parts
