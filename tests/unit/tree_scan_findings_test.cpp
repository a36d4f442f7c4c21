// The access findings of a walk are held once: the catalog and the walker's
// memory share them, and a checkpoint the next walk does not list again is
// reported with the findings of the walk that listed it.

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/tree_scan.hpp"
#include "model/catalog.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

std::vector<std::string> described(const ScanOutcome& o) {
  std::vector<std::string> out;
  if (!o.findings) return out;
  for (const auto& f : *o.findings) {
    out.push_back(f.tier + "|" + f.job + "|" + f.path + "|" + std::string(to_string(f.kind)) + "|" +
                  f.detail);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TreeScanFindings, ACheckpointNotListedAgainKeepsTheFindingsOfTheWalkThatListedIt) {
  testing::TempDir tier;
  for (const char* ck : {"llama/step-1", "llama/step-2"}) {
    tier.write(std::string(ck) + "/__0_0.distcp", 100);
    tier.write(std::string(ck) + "/.metadata", 10);
  }
  // step-1 is readable by everyone (3 entries: its directory and two files);
  // step-2 by its owner only.
  for (const char* p : {"llama/step-1", "llama/step-1/__0_0.distcp", "llama/step-1/.metadata"}) {
    ASSERT_EQ(::chmod(tier.file(p).c_str(), std::string(p).ends_with("step-1") ? 0755 : 0644), 0);
  }
  for (const char* p : {"llama/step-2", "llama/step-2/__0_0.distcp", "llama/step-2/.metadata"}) {
    ASSERT_EQ(::chmod(tier.file(p).c_str(), std::string(p).ends_with("step-2") ? 0700 : 0600), 0);
  }
  TierConfig cfg;
  cfg.name = "rapid";
  cfg.path = tier.str();
  TierScanner scanner(cfg, false);
  // Past the racy window of the writes above (tree_walk.hpp kRacySeconds):
  // a checkpoint written within it is not frozen.
  const auto now = static_cast<double>(std::time(nullptr)) + 5;

  // The catalog the walks' outcomes go into, as in the daemon: a walk
  // reuses the records of the checkpoints that did not change from it.
  auto cat = std::make_shared<TierCatalog>();
  ScanOutcome first = scanner.scan(now, nullptr, cat);
  ASSERT_EQ(first.checkpoints.size(), 2u);
  const std::vector<std::string> want{
      "rapid|llama|llama/step-1|world_readable|3 of 3 entries readable by everyone"};
  EXPECT_EQ(described(first), want);
  const std::uint64_t listed_first = first.dirs_listed;
  merge_scan(*cat, std::move(first), now);

  // Nothing changed: the checkpoints are not listed again (only the tier
  // root and the job directory are opened), their findings are reported
  // from the first walk's.
  ScanOutcome second = scanner.scan(now + 10, nullptr, cat);
  EXPECT_LT(second.dirs_listed, listed_first);
  EXPECT_EQ(described(second), want);

  // The catalog holds the walk's findings as they are, not a copy.
  const auto* held = second.findings.get();
  merge_scan(*cat, std::move(second), now + 10);
  EXPECT_EQ(cat->findings.get(), held);

  // A third walk, after the second walk's findings were dropped by everyone
  // but the walker's memory, still has them.
  cat->findings.reset();
  ScanOutcome third = scanner.scan(now + 20, nullptr, cat);
  EXPECT_LT(third.dirs_listed, listed_first);
  EXPECT_EQ(described(third), want);
  merge_scan(*cat, std::move(third), now + 20);

  // A changed checkpoint is listed again and audited afresh.
  ASSERT_EQ(::chmod(tier.file("llama/step-2/.metadata").c_str(), 0666), 0);
  tier.write("llama/step-2/extra", 1);  // changes the directory's mtime
  ::chmod(tier.file("llama/step-2/extra").c_str(), 0600);
  const std::vector<std::string> after = described(scanner.scan(now + 30, nullptr, cat));
  const std::vector<std::string> want_after{
      "rapid|llama|llama/step-1|world_readable|3 of 3 entries readable by everyone",
      "rapid|llama|llama/step-2|world_readable|1 of 4 entries readable by everyone",
      "rapid|llama|llama/step-2|world_writable|1 of 4 entries writable by everyone"};
  EXPECT_EQ(after, want_after);
}

}  // namespace
}  // namespace ckptmon
