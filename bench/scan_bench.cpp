// Scan benchmark: a full walk of a tier and a steady-state rescan with nothing
// changed, against `find TREE -printf '%s %T@\n'` on the same tree in the same
// run. Prints a table; never a test. Usage:
//   bench/gen_tree.py /tmp/tree && build/bench/scan_bench /tmp/tree [runs] [concurrency]
// concurrency: the tier's walk_concurrency (0 = auto from the file-system type).

#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "collectors/tree_scan.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double time_find(const std::string& tree) {
  const std::string cmd = "find '" + tree + "' -printf '%s %T@\\n' > /dev/null";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  const auto t1 = std::chrono::steady_clock::now();
  if (rc != 0) static_cast<void>(std::fprintf(stderr, "find failed: %d\n", rc));
  return std::chrono::duration<double>(t1 - t0).count();
}

double cpu_seconds() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    static_cast<void>(std::fprintf(stderr, "usage: %s TREE [runs]\n", argv[0]));
    return 2;
  }
  const std::string tree = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  ckptmon::TierConfig cfg;
  cfg.name = "bench";
  cfg.path = tree;
  cfg.walk_concurrency = argc > 3 ? std::atoi(argv[3]) : 0;
  const double now = 1'800'000'000;

  time_find(tree);  // warm the cache
  std::vector<double> find_t, full_t, steady_t, full_cpu;
  std::uint64_t full_stats = 0, steady_stats = 0, full_dirs = 0, steady_dirs = 0;
  std::size_t checkpoints = 0;
  for (int i = 0; i < runs; ++i) {
    find_t.push_back(time_find(tree));
    ckptmon::TierScanner scanner(cfg, false);  // fresh: a full walk
    const double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    auto cat = std::make_shared<ckptmon::TierCatalog>();  // as the daemon merges into
    auto full = scanner.scan(now, nullptr, cat);
    auto t1 = std::chrono::steady_clock::now();
    full_cpu.push_back(cpu_seconds() - c0);
    ckptmon::merge_scan(*cat, full, now);
    const auto t1b = std::chrono::steady_clock::now();
    auto steady = scanner.scan(now, nullptr, cat);  // nothing changed since
    auto t2 = std::chrono::steady_clock::now();
    full_t.push_back(std::chrono::duration<double>(t1 - t0).count());
    steady_t.push_back(std::chrono::duration<double>(t2 - t1b).count());
    full_stats = full.stat_calls;
    steady_stats = steady.stat_calls;
    full_dirs = full.dirs_listed;
    steady_dirs = steady.dirs_listed;
    checkpoints = full.checkpoints.size();
  }
  const double f = median(find_t), full = median(full_t), steady = median(steady_t);
  std::printf("tree: %s, %d runs, medians, %zu checkpoints\n", tree.c_str(), runs, checkpoints);
  std::printf("%-34s %10s %12s %12s %10s\n", "what", "seconds", "stat calls", "dirs listed",
              "ratio");
  std::printf("%-34s %10.3f %12s %12s %10s\n", "find -printf '%s %T@'", f, "-", "-", "1.00");
  std::printf("%-34s %10.3f %12llu %12llu %10.2f\n", "ckptmon full scan (vs find)", full,
              static_cast<unsigned long long>(full_stats),
              static_cast<unsigned long long>(full_dirs), full / f);
  std::printf("%-34s %10.3f %12llu %12llu %9.2f%%\n", "ckptmon steady rescan (vs full)", steady,
              static_cast<unsigned long long>(steady_stats),
              static_cast<unsigned long long>(steady_dirs), 100.0 * steady / full);
  std::printf("full scan CPU: %.3f s (%.2f threads busy on average)\n", median(full_cpu),
              median(full_cpu) / full);
  std::printf("steady/full stat calls: %.2f%%\n",
              100.0 * static_cast<double>(steady_stats) / static_cast<double>(full_stats));
  return 0;
}
