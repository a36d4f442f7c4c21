#pragma once
// Which history samples to keep as they age: every sample while young, then
// one per bucket of each coarser resolution, then none. The store asks this
// function and deletes what it returns, in batches of its choosing. Pure;
// thread-safe.

#include <cstddef>
#include <span>
#include <vector>

#include "model/policy.hpp"

namespace ckptmon {

// Indices (ascending) of the samples to delete. A sample no older than
// raw_retention stays. An older one falls in the first level whose retention
// covers its age and stays only if it is the earliest sample of its bucket
// (floor(t / resolution)) among those of the same level; older than every
// level: deleted. Keeping the earliest makes repeated pruning stable when each
// resolution divides the next: the sample that survives a 5-minute bucket is
// the one its hour keeps later. Samples from the future (a clock that jumped
// back) are kept.
std::vector<std::size_t> samples_to_delete(std::span<const double> timestamps, double now,
                                           const HistoryPolicy& policy);

}  // namespace ckptmon
