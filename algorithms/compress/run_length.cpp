#include "algorithms/compress/run_length.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "core/errors.hpp"

namespace qgossip {
namespace {

std::uint32_t magnitude(std::int32_t x) {
  QG_ENFORCE(x != INT32_MIN, "run-length values must satisfy |q| <= 2^31 - 1");
  return static_cast<std::uint32_t>(x < 0 ? -x : x);
}

status corrupt(const std::string& what) { return status::error(errc::corrupt, "run-length: " + what); }

}  // namespace

run_length_widths run_length_widths_of(std::span<const std::int32_t> q) {
  std::uint32_t largest = 0;
  std::size_t run = 0, longest = 0;
  for (const std::int32_t x : q) {
    if (x == 0) {
      longest = std::max(longest, ++run);
    } else {
      run = 0;
      largest = std::max(largest, magnitude(x));
    }
  }
  return {1 + static_cast<std::uint32_t>(std::bit_width(largest)),
          static_cast<std::uint32_t>(std::bit_width(longest))};
}

std::uint64_t run_length_bits(std::span<const std::int32_t> q) {
  const run_length_widths w = run_length_widths_of(q);
  std::uint64_t bits = 64;
  for (std::size_t k = 0; k < q.size();) {
    bits += w.value_bits;
    if (q[k] != 0) {
      ++k;
      continue;
    }
    bits += w.run_bits;
    while (k < q.size() && q[k] == 0) ++k;
  }
  return bits;
}

std::uint64_t run_length_max_bits(std::size_t n, std::uint64_t max_sum) {
  const std::uint64_t nonzero = std::min<std::uint64_t>(n, max_sum);
  const std::uint64_t runs = std::min<std::uint64_t>(nonzero + 1, (std::uint64_t{n} + 1) / 2);
  const std::uint64_t codes = std::min<std::uint64_t>(n, nonzero + runs);
  const std::uint64_t value_bits = 1 + std::bit_width(std::min<std::uint64_t>(max_sum, 0x7fffffffu));
  return 64 + codes * value_bits + runs * static_cast<std::uint64_t>(std::bit_width(n));
}

void run_length_encode(std::span<const std::int32_t> q, bit_stream_writer& out) {
  const run_length_widths w = run_length_widths_of(q);
  out.put_bits(w.value_bits, 32);
  out.put_bits(w.run_bits, 32);
  const std::uint64_t sign = std::uint64_t{1} << (w.value_bits - 1);
  for (std::size_t k = 0; k < q.size();) {
    const std::int32_t x = q[k];
    if (x != 0) {
      out.put_bits((x < 0 ? sign : 0) | magnitude(x), w.value_bits);
      ++k;
      continue;
    }
    const std::size_t start = k;
    while (k < q.size() && q[k] == 0) ++k;
    out.put_bits(0, w.value_bits);
    out.put_bits(k - start, w.run_bits);
  }
}

status run_length_decode(bit_stream_reader& in, std::span<std::int32_t> out) {
  std::uint64_t value_bits = 0, run_bits = 0;
  if (!in.get_bits(32, value_bits) || !in.get_bits(32, run_bits)) return corrupt("truncated widths");
  if (value_bits < 1 || value_bits > kRunLengthMaxValueBits)
    return corrupt("value width B_q = " + std::to_string(value_bits) + " outside [1, 32]");
  // A run is at most out.size() long, so a wider B_RLE cannot be the canonical one.
  if (run_bits > static_cast<std::uint64_t>(std::bit_width(out.size())))
    return corrupt("run width B_RLE = " + std::to_string(run_bits) + " too wide for " +
                   std::to_string(out.size()) + " values");
  const auto vb = static_cast<unsigned>(value_bits);
  const auto rb = static_cast<unsigned>(run_bits);
  const std::uint64_t sign = std::uint64_t{1} << (vb - 1);
  std::uint64_t largest = 0, longest = 0;
  bool after_run = false;
  for (std::size_t k = 0; k < out.size();) {
    std::uint64_t code = 0;
    if (!in.get_bits(vb, code)) return corrupt("truncated at value " + std::to_string(k));
    const std::uint64_t m = code & (sign - 1);
    if (m != 0) {
      out[k++] = (code & sign) != 0 ? -static_cast<std::int32_t>(m) : static_cast<std::int32_t>(m);
      largest = std::max(largest, m);
      after_run = false;
      continue;
    }
    if (code != 0) return corrupt("negative zero at value " + std::to_string(k));
    if (after_run) return corrupt("two zero runs in a row at value " + std::to_string(k));
    std::uint64_t run = 0;
    if (!in.get_bits(rb, run)) return corrupt("truncated run length at value " + std::to_string(k));
    if (run == 0 || run > out.size() - k)
      return corrupt("zero run of length " + std::to_string(run) + " at value " + std::to_string(k) + " of " +
                     std::to_string(out.size()));
    std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(k), run, 0);
    k += run;
    longest = std::max(longest, run);
    after_run = true;
  }
  if (value_bits != 1 + static_cast<std::uint64_t>(std::bit_width(largest)) ||
      run_bits != static_cast<std::uint64_t>(std::bit_width(longest)))
    return corrupt("widths B_q = " + std::to_string(value_bits) + ", B_RLE = " + std::to_string(run_bits) +
                   " are not the ones the values need (" + std::to_string(1 + std::bit_width(largest)) +
                   ", " + std::to_string(std::bit_width(longest)) + ")");
  return status::ok();
}

}  // namespace qgossip
