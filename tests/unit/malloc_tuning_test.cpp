#include "serve/malloc_tuning.hpp"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

// Resident pages of this process (/proc/self/statm, second field), in bytes.
long resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0;
  long resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

TEST(MallocTuning, NothingToReleaseBelowTheThreshold) {
  // Far more than this test binary ever leaves free in its heaps.
  EXPECT_FALSE(release_free_heap(std::size_t{1} << 40));
}

// AddressSanitizer and ThreadSanitizer bring allocators of their own:
// glibc's mallinfo2() and malloc_trim() see none of the blocks.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif

TEST(MallocTuning, ReleasesFreedBlocksInsideTheHeap) {
  if (!kGlibcMalloc) GTEST_SKIP() << "a sanitizer's allocator, not glibc's malloc";
  // 48 MiB in 4 KiB blocks (below any mmap threshold: in the heap), touched,
  // then freed except the last, which pins the heap's top: what is freed
  // lies inside the heap, where only malloc_trim gives it back.
  constexpr std::size_t kBlock = 4096;
  constexpr std::size_t kBlocks = 48 * 256;
  std::vector<char*> blocks;
  blocks.reserve(kBlocks);
  for (std::size_t i = 0; i < kBlocks; ++i) {
    char* p = static_cast<char*>(std::malloc(kBlock));
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, kBlock);
    blocks.push_back(p);
  }
  for (std::size_t i = 0; i + 1 < kBlocks; ++i) std::free(blocks[i]);
  const long before = resident_bytes();
  ASSERT_GT(before, 0);
  ASSERT_GE(mallinfo2().fordblks, std::size_t{32} << 20);
  EXPECT_TRUE(release_free_heap(std::size_t{16} << 20));
  const long after = resident_bytes();
  // At least 32 of the 48 freed MiB left the resident set.
  EXPECT_LE(after, before - (32L << 20)) << "before " << before << " after " << after;
  std::free(blocks.back());
}

}  // namespace
}  // namespace ckptmon
