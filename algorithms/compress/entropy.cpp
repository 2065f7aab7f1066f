#include "algorithms/compress/entropy.hpp"

#include <cmath>

namespace qgossip {

symbol_histogram::symbol_histogram() : dense_(2 * kDense, 0) {}

void symbol_histogram::add(std::int64_t symbol, std::uint64_t times) {
  if (symbol >= -kDense && symbol < kDense)
    dense_[static_cast<std::size_t>(symbol + kDense)] += times;
  else
    sparse_[symbol] += times;
  count_ += times;
}

std::size_t symbol_histogram::distinct() const {
  std::size_t k = sparse_.size();
  for (const std::uint64_t c : dense_) k += c != 0;
  return k;
}

double symbol_histogram::entropy_bits_per_symbol() const {
  if (count_ == 0) return 0.0;
  const double n = static_cast<double>(count_);
  // Sum of p log2(1/p) term by term: no cancellation between two large numbers, as
  // log2(N) - sum(c log2 c)/N would have for huge N.
  double h = 0.0;
  const auto term = [&](std::uint64_t c) {
    if (c == 0) return;
    const double p = static_cast<double>(c) / n;
    h -= p * std::log2(p);
  };
  for (const std::uint64_t c : dense_) term(c);
  for (const auto& [symbol, c] : sparse_) term(c);
  return h > 0.0 ? h : 0.0;  // a single symbol gives -0.0
}

}  // namespace qgossip
