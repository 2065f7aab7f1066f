#pragma once
// The arithmetic shared by the gossip algorithms: weighted sums over a node and its neighbours,
// written as plain loops over contiguous floats so the compiler vectorizes them. Weights are used
// as float, and every sum runs in a fixed order, so results are bit-reproducible. Each loop splits
// into element ranges on the calling thread's work_pool (core/work_pool.hpp); an element's result
// does not depend on the range it falls in, so the bits do not depend on the thread count.
#include <algorithm>
#include <cstddef>
#include <span>

#include "core/errors.hpp"
#include "core/work_pool.hpp"

namespace qgossip::mixing {

// out = a * x
inline void scale(std::span<float> out, float a, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] = a * xp[i];
  });
}

// out += a * x
inline void axpy(std::span<float> out, float a, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] += a * xp[i];
  });
}

// out += x
inline void add(std::span<float> out, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] += xp[i];
  });
}

// out = a * out + b * x
inline void blend(std::span<float> out, float a, float b, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] = a * o[i] + b * xp[i];
  });
}

// out = x - y
inline void sub(std::span<float> out, std::span<const float> x, std::span<const float> y) {
  QG_ENFORCE(out.size() == x.size() && x.size() == y.size(), out.size() << ", " << x.size() << ", " << y.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  const float* __restrict yp = y.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] = xp[i] - yp[i];
  });
}

// One term of add_scaled: a * x.
struct scaled {
  float a;
  std::span<const float> x;
};

// out = s * out (skipped when s is 1), then out += a * x for each term in order: the same bits as
// scale() and one axpy() per term, in one pass over memory (each range of the vectors while it is
// in cache).
inline void add_scaled(std::span<float> out, float s, std::span<const scaled> terms) {
  for (const scaled& t : terms) QG_ENFORCE(t.x.size() == out.size(), t.x.size() << " vs " << out.size());
  float* __restrict o = out.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    if (s != 1.0f)
      for (std::size_t i = begin; i < end; ++i) o[i] = s * o[i];
    for (const scaled& t : terms) {
      const float a = t.a;
      const float* __restrict xp = t.x.data();
      for (std::size_t i = begin; i < end; ++i) o[i] += a * xp[i];
    }
  });
}

// out = x
inline void copy(std::span<float> out, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    std::copy(xp + begin, xp + end, o + begin);
  });
}

// The step from start to end as an algorithm takes it, x_{t+1/2} = x_t + (−1)·(x_t − x_{t,H}) (the
// change handed to outgoing() with lr 1), without a vector of the change:
//   step_to(x, start):    x = start + (−1)·(start − x)    (x holds x_{t,H}: a program's parameters)
//   step_from(x, other):  x = x + (−1)·(x − other), and other = the old x (x held x_t, other x_{t,H})
inline void step_to(std::span<float> x, std::span<const float> start) {
  QG_ENFORCE(x.size() == start.size(), x.size() << " vs " << start.size());
  float* __restrict o = x.data();
  const float* __restrict sp = start.data();
  parallel_ranges(x.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] = sp[i] + -1.0f * (sp[i] - o[i]);
  });
}

inline void step_from(std::span<float> x, std::span<float> other) {
  QG_ENFORCE(x.size() == other.size(), x.size() << " vs " << other.size());
  float* __restrict o = x.data();
  float* __restrict w = other.data();
  parallel_ranges(x.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const float start = o[i];
      o[i] = start + -1.0f * (start - w[i]);
      w[i] = start;
    }
  });
}

// out = (out - taken) + x: the steps taken since `taken` moved onto x (an overlapped round's landing)
inline void rebase(std::span<float> out, std::span<const float> taken, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size() && x.size() == taken.size(), out.size() << ", " << taken.size() << ", " << x.size());
  float* __restrict o = out.data();
  const float* __restrict tp = taken.data();
  const float* __restrict xp = x.data();
  parallel_ranges(out.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] = (o[i] - tp[i]) + xp[i];
  });
}

}  // namespace qgossip::mixing
