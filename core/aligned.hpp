#pragma once
// Vectors of floats whose storage starts on a 64-byte boundary. Eigen's vectorized products peel
// a different number of leading elements depending on where a buffer starts, which changes the
// order of additions and so the low bits of a gradient: model parameters and gradients live in
// these so a seeded run reproduces bit for bit whatever else was allocated before them.
#include <cstddef>
#include <new>
#include <vector>

namespace qgossip {

inline constexpr std::size_t kVectorAlignment = 64;

template <class T>
struct aligned_allocator {
  using value_type = T;
  aligned_allocator() = default;
  template <class U>
  aligned_allocator(const aligned_allocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kVectorAlignment}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{kVectorAlignment}); }
  template <class U>
  bool operator==(const aligned_allocator<U>&) const { return true; }
};

using float_vector = std::vector<float, aligned_allocator<float>>;

}  // namespace qgossip
