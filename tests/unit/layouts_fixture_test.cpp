// The fixture generator's oracle (tests/fixtures/gen_layouts.py, expected.json)
// against the recognisers, on real files: the generator writes the trees, the
// scanner's walker reads them back, every job is recognised and every
// checkpoint compared with what the generator says it wrote.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "collectors/layouts/layout.hpp"
#include "collectors/tree_walk.hpp"
#include "temp_dir.hpp"
#include "tests/test_paths.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

// The tree as the scanner's walker reads it (the walker has its own tests).
DirNode read_tree(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st {};
  ::fstat(fd, &st);
  WalkStats stats;
  TreeWalker walker(fd, st.st_dev, nullptr, stats);
  DirNode d;
  walker.build("", d, nullptr);
  ::close(fd);
  return d;
}

class LayoutFixtures : public ::testing::TestWithParam<int> {};

TEST_P(LayoutFixtures, GeneratorOracleAgreesWithTheRecognisers) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  testing::TempDir tmp;
  const std::string out = tmp.file("tier");
  const std::string cmd = "/usr/bin/python3 " + std::string(CKPTMON_SOURCE_DIR) +
                          "/tests/fixtures/gen_layouts.py " + out + " --ranks " +
                          std::to_string(GetParam()) + " --now 1700000000";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out + "/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);

  GenericLayout generic;
  generic.shard_glob = expected["generic_layout"]["shard_glob"];
  generic.marker = expected["generic_layout"]["marker"];
  generic.step_regex = expected["generic_layout"]["step_regex"];
  LayoutContext ctx;
  ctx.now = expected["now"];
  ctx.partial_after = expected["partial_after_seconds"];
  ctx.generic = &generic;

  // Job depth 1: every directory under the tier root is a job.
  std::vector<Checkpoint> found;
  const DirNode tier = read_tree(out);
  for (const auto& job : tier.dirs) {
    for (auto& c : recognise_tree(job, ctx)) {
      c.job = job.name;
      c.path = job.name + "/" + c.path;
      found.push_back(std::move(c));
    }
  }
  ASSERT_EQ(found.size(), expected["checkpoints"].size());
  std::uint64_t jobs_seen = 0;
  for (const auto& e : expected["checkpoints"]) {
    const std::string path = e["path"];
    const Checkpoint* c = testing::find_ckpt(found, path);
    ASSERT_NE(c, nullptr) << path;
    EXPECT_EQ(c->framework, e["framework"].get<std::string>()) << path;
    EXPECT_EQ(c->step, e["step"].get<std::int64_t>()) << path;
    EXPECT_EQ(std::string(to_string(c->state)), e["state"].get<std::string>())
        << path << ": " << c->reason;
    EXPECT_EQ(c->files, e["files"].get<std::uint64_t>()) << path;
    EXPECT_EQ(c->bytes, e["bytes"].get<std::uint64_t>()) << path;
    if (e.contains("reason_contains")) {
      EXPECT_NE(c->reason.find(e["reason_contains"].get<std::string>()), std::string::npos)
          << path << ": " << c->reason;
    } else {
      EXPECT_EQ(c->reason, "") << path;
    }
    ++jobs_seen;
  }
  EXPECT_GT(jobs_seen, 60u);
}

// The smallest rank count the generator takes, and its default.
INSTANTIATE_TEST_SUITE_P(Ranks, LayoutFixtures, ::testing::Values(3, 8));

}  // namespace
}  // namespace ckptmon
