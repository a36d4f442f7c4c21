// Issue 9.2 at the collector: a job or checkpoint directory that cannot be
// read is reported as unreadable, never as empty or deleted. Root reads
// through any mode, so each test forks a child that becomes nobody (65534)
// on a tree nobody owns and chmods itself; the child reports what differed.

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "collectors/tree_scan.hpp"
#include "model/catalog.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

constexpr uid_t kNobody = 65534;

// Runs `fn` in a child process as nobody; returns what it returned ("" = all
// as expected), or why it could not run.
std::string as_nobody(const std::function<std::string()>& fn) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg;
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) {
      msg = "cannot become nobody";
    } else {
      try {
        msg = fn();
      } catch (const std::exception& e) {
        msg = e.what();
      }
    }
    if (!msg.empty() && ::write(fds[1], msg.data(), msg.size()) < 0) _exit(2);
    _exit(msg.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died";
  return WEXITSTATUS(status) == 0 ? "" : out;
}

class TreeScanUnreadable : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to become nobody";
    for (const char* ck : {"jobA/save_100", "jobA/save_200", "jobB/save_100", "jobB/save_200"}) {
      tier_.write(std::string(ck) + "/rank0.bin", 100);
      tier_.write(std::string(ck) + "/COMMITTED", 0);
    }
    namespace fs = std::filesystem;
    ASSERT_EQ(::chown(tier_.str().c_str(), kNobody, kNobody), 0);
    for (const auto& e : fs::recursive_directory_iterator(tier_.path())) {
      ASSERT_EQ(::lchown(e.path().c_str(), kNobody, kNobody), 0);
    }
    TierConfig cfg;
    cfg.name = "rapid";
    cfg.path = tier_.str();
    cfg.jobs.depth = 1;
    cfg.partial_after = std::chrono::seconds(1);
    cfg.layout = GenericLayoutConfig{"rank*.bin", "COMMITTED", "^save_(\\d+)$"};
    cfg_ = cfg;
  }
  void TearDown() override {
    // Modes back, so the TempDir can be removed.
    for (const char* d : {"jobA", "jobB", "jobB/save_200"}) ::chmod(tier_.file(d).c_str(), 0755);
  }

  testing::TempDir tier_;
  TierConfig cfg_;
};

// "" when `cat` holds exactly the steps `want` of `job`, all with `flag`.
std::string holds(const TierCatalog& cat, const std::string& job, std::vector<std::int64_t> want,
                  bool flag) {
  std::vector<std::int64_t> got;
  for (const auto& c : cat.checkpoints) {
    if (c.job != job) continue;
    if (c.unreadable != flag) return job + " step " + std::to_string(c.step) + " flag wrong";
    if (c.state != CkptState::kCommitted)
      return job + " step " + std::to_string(c.step) + " not committed";
    got.push_back(c.step);
  }
  std::sort(got.begin(), got.end());
  if (got != want) return job + ": wrong steps (" + std::to_string(got.size()) + ")";
  return "";
}

TEST_F(TreeScanUnreadable, JobDirectoryFlappingKeepsItsCheckpoints) {
  const std::string job_a = tier_.file("jobA");
  EXPECT_EQ(as_nobody([&]() -> std::string {
              TierScanner scanner(cfg_, false);
              // The catalog the walks' outcomes go into, as in the daemon: the walks
              // reuse its records of the checkpoints that did not change.
              auto cat = std::make_shared<TierCatalog>();
              double now = 1'000'000'000;
              merge_scan(*cat, scanner.scan(now, nullptr, cat), now);
              if (auto e = holds(*cat, "jobA", {100, 200}, false); !e.empty()) return "start: " + e;
              const std::uint64_t skew = cat->skew_by_job["jobA"].count;
              if (skew != 2) return "start: skew count " + std::to_string(skew);
              for (int flap = 0; flap < 3; ++flap) {
                const std::string at = "flap " + std::to_string(flap) + ": ";
                if (::chmod(job_a.c_str(), 0) != 0) return "chmod failed";
                now += 10;
                ScanOutcome o = scanner.scan(now, nullptr, cat);
                if (o.unreadable.size() != 1 || o.unreadable[0].path != "jobA" ||
                    o.unreadable[0].job != "jobA" || o.unreadable[0].error != EACCES) {
                  return at + "jobA not reported unreadable";
                }
                bool finding = false;
                for (const auto& f : *o.findings) {
                  finding = finding || (f.kind == FindingKind::kUnreadable && f.path == "jobA");
                }
                if (!finding) return at + "no unreadable finding";
                merge_scan(*cat, std::move(o), now);
                if (!cat->removed.empty()) return at + "removed while unreadable";
                if (auto e = holds(*cat, "jobA", {100, 200}, true); !e.empty()) return at + e;
                if (auto e = holds(*cat, "jobB", {100, 200}, false); !e.empty()) return at + e;
                if (!summarize_jobs(*cat)["jobA"].unreadable) return at + "job not flagged";
                if (::chmod(job_a.c_str(), 0755) != 0) return "chmod failed";
                now += 10;
                merge_scan(*cat, scanner.scan(now, nullptr, cat), now);
                if (!cat->removed.empty()) return at + "removed after";
                if (auto e = holds(*cat, "jobA", {100, 200}, false); !e.empty())
                  return at + "back: " + e;
                if (summarize_jobs(*cat)["jobA"].unreadable) return at + "still flagged";
                if (cat->skew_by_job["jobA"].count != 2) return at + "skew counted again";
              }
              return "";
            }),
            "");
}

TEST_F(TreeScanUnreadable, CheckpointUnreadableFromTheStartIsReported) {
  ASSERT_EQ(::chmod(tier_.file("jobB/save_200").c_str(), 0), 0);
  EXPECT_EQ(as_nobody([&]() -> std::string {
              TierScanner scanner(cfg_, false);
              ScanOutcome o = scanner.scan(1'000'000'000);
              if (o.unreadable.size() != 1 || o.unreadable[0].path != "jobB/save_200" ||
                  o.unreadable[0].job != "jobB" || o.unreadable[0].error != EACCES) {
                return "jobB/save_200 not reported unreadable";
              }
              TierCatalog cat;
              merge_scan(cat, std::move(o), 1'000'000'000);
              // Not guessed at (no partial or empty checkpoint for it); the
              // job says part of it is unknown.
              if (auto e = holds(cat, "jobB", {100}, false); !e.empty()) return e;
              if (!summarize_jobs(cat)["jobB"].unreadable) return "jobB not flagged";
              if (summarize_jobs(cat)["jobA"].unreadable) return "jobA flagged";
              return "";
            }),
            "");
}

}  // namespace
}  // namespace ckptmon
