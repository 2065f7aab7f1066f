// libqgossip_alloc_count.so: counts the heap allocations of each thread, for benchmarks that claim
// "no allocation per round" (bench/step_cost.py). Loaded with LD_PRELOAD, it stands in for glibc's
// malloc family (operator new goes through malloc) and forwards every call to glibc's own
// (__libc_malloc and friends, which need no dlsym and so cannot recurse). qg_alloc_count() gives the
// calling thread's allocations so far: calls and bytes asked for. Counting is thread-local: a
// benchmark reads it around a call on its own thread, and libzmq's I/O threads do not disturb it.
#include <cstddef>
#include <cstdint>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}

namespace {
thread_local std::uint64_t calls = 0, bytes = 0;
inline void count(std::size_t n) {
  ++calls;
  bytes += n;
}
}  // namespace

extern "C" {

void qg_alloc_count(std::uint64_t* out_calls, std::uint64_t* out_bytes) {
  *out_calls = calls;
  *out_bytes = bytes;
}

void* malloc(std::size_t n) {
  count(n);
  return __libc_malloc(n);
}
void* calloc(std::size_t k, std::size_t n) {
  count(k * n);
  return __libc_calloc(k, n);
}
void* realloc(void* p, std::size_t n) {
  count(n);
  return __libc_realloc(p, n);
}
void* memalign(std::size_t align, std::size_t n) {
  count(n);
  return __libc_memalign(align, n);
}
void* aligned_alloc(std::size_t align, std::size_t n) {
  count(n);
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, std::size_t align, std::size_t n) {
  count(n);
  void* p = __libc_memalign(align, n);
  if (!p) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }

}  // extern "C"
