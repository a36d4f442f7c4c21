#include "daemon/malloc_tuning.hpp"

#include <malloc.h>

namespace ckptmon {

void tune_malloc_for_daemon() {
  mallopt(M_ARENA_MAX, 2);
  // A fixed threshold: glibc otherwise raises it (up to 32 MiB) each time a
  // mapped chunk is freed, after which those buffers stay in the heap.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
}

bool release_free_heap(std::size_t threshold) {
  const struct mallinfo2 mi = mallinfo2();
  if (mi.fordblks < threshold) return false;
  malloc_trim(0);
  return true;
}

}  // namespace ckptmon
