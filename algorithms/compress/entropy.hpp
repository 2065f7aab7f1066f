#pragma once
// An empirical entropy counter: add symbols one at a time, then ask for the Shannon entropy of
// their empirical distribution, H = -sum_k (c_k/N) log2(c_k/N) bits per symbol, the least an ideal
// (memoryless) entropy coder of these N symbols could spend on average. Codecs use it to report how
// close their bits come to the entropy of their symbols (compressor::entropy_bits_per_value).
// Small symbols (|x| < 2048, the quantization levels of every codec here) are counted in a flat
// array; others in a hash map. Thread safety: one histogram per thread.
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace qgossip {

class symbol_histogram {
 public:
  symbol_histogram();

  void add(std::int64_t symbol) { add(symbol, 1); }
  // Adds `times` copies of symbol (a run of zeros in one call).
  void add(std::int64_t symbol, std::uint64_t times);

  // Symbols added so far (N).
  std::size_t count() const { return count_; }
  // Distinct symbols among them.
  std::size_t distinct() const;
  // H in bits per symbol; 0 when empty or when every symbol is the same.
  double entropy_bits_per_symbol() const;

 private:
  static constexpr std::int64_t kDense = 2048;  // symbols in [-kDense, kDense) go to dense_

  std::vector<std::uint64_t> dense_;
  std::unordered_map<std::int64_t, std::uint64_t> sparse_;
  std::size_t count_ = 0;
};

}  // namespace qgossip
