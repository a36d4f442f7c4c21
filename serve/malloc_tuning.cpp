#include "serve/malloc_tuning.hpp"

#include <malloc.h>

namespace ckptmon {

// mallopt() is not thread-safe: this runs before the daemon starts a thread
// (the header says so), hence the NOLINTs.
void tune_malloc_for_daemon() {
  mallopt(M_ARENA_MAX, 2);  // NOLINT(concurrency-mt-unsafe): no other thread yet
  // A fixed threshold: glibc otherwise raises it (up to 32 MiB) each time a
  // mapped chunk is freed, after which those buffers stay in the heap.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);   // NOLINT(concurrency-mt-unsafe): as above
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024);  // NOLINT(concurrency-mt-unsafe): as above
}

bool release_free_heap(std::size_t threshold) {
  const struct mallinfo2 mi = mallinfo2();
  if (mi.fordblks < threshold) return false;
  malloc_trim(0);
  return true;
}

}  // namespace ckptmon
