#pragma once
// What glibc malloc keeps of the memory the daemon frees (issue 16, item 10).
//
// The daemon's steady state is a few tens of MB of catalogs, listings and
// rendered text; every walk and publish allocates and frees about as much
// again, on up to a dozen threads (the collector workers, the walk slots).
// Left to its defaults glibc gives each such thread an arena of its own
// (up to 8 per core) and keeps the freed memory of each: the idle daemon
// held twice its live heap (docs/performance.md, "The idle daemon").

#include <cstddef>

namespace ckptmon {

// Before any thread starts (`serve` only): at most two arenas, allocations
// of 256 KiB and more (a walk's checkpoint vectors, a rendered exposition)
// mmap'ed and returned when freed, free memory at the top of a heap above
// 1 MiB given back.
void tune_malloc_for_daemon();

// Gives the free pages inside the heaps back to the kernel (malloc_trim)
// when more than `threshold` bytes lie free in them; true if it trimmed.
// Cheap when there is little to give back (a mallinfo2 call).
bool release_free_heap(std::size_t threshold = std::size_t{4} << 20);

}  // namespace ckptmon
