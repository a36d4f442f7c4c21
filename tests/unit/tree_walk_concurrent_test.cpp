// The concurrent walk: the same trees, counters and catalogs at any
// concurrency; a call stuck on one tier leaves another tier's walk alone;
// directories whose mtime did not change are not listed again (issue 9.9);
// entries that vanish or move mid-walk and symlink loops are handled as in a
// serial walk.

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/tree_scan.hpp"
#include "collectors/tree_walk.hpp"
#include "config/config.hpp"
#include "exporter/metrics.hpp"
#include "model/walk_live.hpp"
#include "temp_dir.hpp"
#include "tests/test_paths.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;

// Field-by-field equality of two trees, with the first difference named.
::testing::AssertionResult same_tree(const DirNode& a, const DirNode& b, const std::string& at) {
  auto fail = [&](const std::string& what) {
    return ::testing::AssertionFailure() << at << ": " << what;
  };
  if (a.name != b.name || a.mtime != b.mtime || a.mode != b.mode || a.uid != b.uid ||
      a.gid != b.gid) {
    return fail("directory attributes differ");
  }
  if (a.reused != b.reused) return fail("reused differs");
  if (a.files.size() != b.files.size()) {
    return fail("file count " + std::to_string(a.files.size()) + " vs " +
                std::to_string(b.files.size()));
  }
  for (std::size_t i = 0; i < a.files.size(); ++i) {
    const FileEntry& x = a.files[i];
    const FileEntry& y = b.files[i];
    if (x.name != y.name || x.type != y.type || x.size != y.size || x.allocated != y.allocated ||
        x.mtime != y.mtime || x.mode != y.mode || x.uid != y.uid || x.gid != y.gid ||
        x.link_target != y.link_target || x.content != y.content) {
      return fail("file " + x.name + " / " + y.name + " differs");
    }
  }
  if (a.dirs.size() != b.dirs.size()) return fail("directory count differs");
  for (std::size_t i = 0; i < a.dirs.size(); ++i) {
    auto r = same_tree(a.dirs[i], b.dirs[i], at + "/" + a.dirs[i].name);
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

void expect_same_stats(const WalkStats& a, const WalkStats& b) {
  EXPECT_EQ(a.dirs_listed, b.dirs_listed);
  EXPECT_EQ(a.stat_calls, b.stat_calls);
  EXPECT_EQ(a.permission_errors, b.permission_errors);
  EXPECT_EQ(a.vanished, b.vanished);
  EXPECT_EQ(a.reused, b.reused);
  EXPECT_EQ(a.listings_reused, b.listings_reused);
}

// The fixture generator's tree: every layout the recognisers know.
std::string make_layouts_tree(const testing::TempDir& tmp) {
  const std::string out = tmp.file("tier");
  const std::string cmd = "/usr/bin/python3 " + std::string(CKPTMON_SOURCE_DIR) +
                          "/tests/fixtures/gen_layouts.py " + out +
                          " --ranks 3 --now 1700000000 > /dev/null";
  if (std::system(cmd.c_str()) != 0) return "";
  // Symlink loops and a link out of the tier: entries, never followed.
  fs::create_directory_symlink(".", out + "/loop-self");
  fs::create_symlink("l2", out + "/l1");
  fs::create_symlink("l1", out + "/l2");
  fs::create_directory_symlink("/etc", out + "/outside");
  return out;
}

TEST(TreeWalkConcurrent, SameTreeAndCountersAtConcurrency1And16) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  testing::TempDir tmp;
  const std::string tier = make_layouts_tree(tmp);
  ASSERT_FALSE(tier.empty());
  testing::RootDir root(tier);

  WalkStats serial_stats;
  DirNode serial;
  {
    TreeWalker w(root.fd, root.dev, nullptr, serial_stats);  // no slots: the calling thread
    ASSERT_TRUE(w.build("", serial, nullptr));
  }
  for (int c : {1, 16}) {
    WalkSlots slots(c);
    WalkOptions o;
    o.slots = &slots;
    WalkStats stats;
    DirNode tree;
    TreeWalker w(root.fd, root.dev, nullptr, stats, o);
    ASSERT_TRUE(w.build("", tree, nullptr));
    EXPECT_TRUE(same_tree(serial, tree, "")) << "concurrency " << c;
    expect_same_stats(serial_stats, stats);
    // Every call went through the slots and none is left in flight.
    EXPECT_GE(slots.live()->calls(), stats.stat_calls);
    EXPECT_EQ(slots.live()->inflight.load(), 0);
  }
  // The loops are entries; nothing of /etc was read.
  const FileEntry* self = serial.file("loop-self");
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->type, FileEntry::Type::kSymlink);
  EXPECT_EQ(serial.dir("outside"), nullptr);
  EXPECT_EQ(serial.file("l1")->link_target, "l2");
}

Config config_of(const std::string& yaml) {
  auto r = parse_config(yaml, "test.yml");
  if (!r.config) throw std::runtime_error(r.errors.at(0).to_string());
  return *r.config;
}

TierConfig tier_config(const std::string& path, const std::string& extra = "") {
  return config_of("tiers:\n  - {name: t, path: " + path + ", role: rapid" + extra + "}\n")
      .tiers.at(0);
}

TEST(TreeWalkConcurrent, SameCatalogAtConcurrency1And16IncludingRescans) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  testing::TempDir tmp;
  const std::string tier = make_layouts_tree(tmp);
  ASSERT_FALSE(tier.empty());
  // The generator's in-house layout (expected.json says so), partial_after 30m.
  const std::string layout =
      ", layout: {shard_glob: 'rank*.bin', marker: COMMITTED, step_regex: '^save_(\\d+)$'}";
  TierScanner one(tier_config(tier, layout + ", walk_concurrency: 1"), true);
  TierScanner sixteen(tier_config(tier, layout + ", walk_concurrency: 16"), true);
  const double now = 1700000000;
  for (int pass = 0; pass < 3; ++pass) {  // a full walk, then incremental ones
    if (pass == 2) {
      // Something changes between walks: a new checkpoint appears.
      tmp.write("tier/new-job/step-5/__0_0.distcp", 10);
      tmp.write("tier/new-job/step-5/.metadata", 10);
    }
    ScanOutcome a = one.scan(now);
    ScanOutcome b = sixteen.scan(now);
    ASSERT_TRUE(a.root_ok) << a.error;
    ASSERT_TRUE(b.root_ok) << b.error;
    // The generator wrote 65 checkpoints at --ranks 3 (expected.json), one more later.
    ASSERT_EQ(a.checkpoints.size(), pass == 2 ? 66u : 65u);
    ASSERT_EQ(a.checkpoints.size(), b.checkpoints.size()) << "pass " << pass;
    for (std::size_t i = 0; i < a.checkpoints.size(); ++i) {
      EXPECT_TRUE(same_record(a.checkpoints[i], b.checkpoints[i]))
          << "pass " << pass << ": " << a.checkpoints[i].path;
      ASSERT_EQ(a.checkpoints[i].shard_files != nullptr, b.checkpoints[i].shard_files != nullptr);
      if (a.checkpoints[i].shard_files) {
        EXPECT_EQ(a.checkpoints[i].shard_files->size(), b.checkpoints[i].shard_files->size());
      }
    }
    EXPECT_EQ(a.jobs, b.jobs);
    ASSERT_TRUE(a.findings && b.findings);
    EXPECT_EQ(a.findings->size(), b.findings->size());
    EXPECT_EQ(a.dirs_listed, b.dirs_listed) << "pass " << pass;
    EXPECT_EQ(a.stat_calls, b.stat_calls) << "pass " << pass;
    EXPECT_EQ(a.vanished, b.vanished);
    EXPECT_EQ(a.permission_errors, b.permission_errors);
    if (pass == 2) {
      EXPECT_NE(testing::find_ckpt(a.checkpoints, "new-job/step-5"), nullptr);
    }
  }
}

// A latch the hook of one tier waits on, like a call into a hung mount.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool open = false;
  void block() {
    std::unique_lock lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  void wait_entered() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

TEST(TreeWalkConcurrent, CallStuckOnOneTierLeavesAnotherTiersWalkUnaffected) {
  testing::TempDir hung;
  testing::TempDir healthy;
  for (int r = 0; r < 8; ++r) {
    hung.write("job/step-1/__" + std::to_string(r) + "_0.distcp", 10);
    healthy.write("job/step-1/__" + std::to_string(r) + "_0.distcp", 10);
  }
  hung.write("job/step-1/.metadata", 10);
  healthy.write("job/step-1/.metadata", 10);
  hung.write("job/step-1/stuck", 1);

  auto gate = std::make_shared<Gate>();
  TierScanner a(tier_config(hung.str(), ", jobs: {depth: 1}, walk_concurrency: 4"), false);
  a.set_call_hook([gate](std::string_view op, const std::string& rel) {
    if (op == "stat" && rel == "job/step-1/stuck") gate->block();
  });
  TierScanner b(tier_config(healthy.str(), ", jobs: {depth: 1}, walk_concurrency: 4"), false);

  ScanOutcome stuck_outcome;
  std::thread t([&] { stuck_outcome = a.scan(1700000000); });
  gate->wait_entered();
  // Tier A has a call in flight that does not return... (with
  // walk_concurrency 4, stats of the other files of the directory may still
  // be in flight beside it: they return, the stuck one does not. The cap
  // only turns a bug into a failure instead of a hang.)
  ASSERT_NE(a.live(), nullptr);
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (a.live()->inflight.load() > 1 && std::chrono::steady_clock::now() < cap) {
    std::this_thread::yield();
  }
  EXPECT_EQ(a.live()->inflight.load(), 1);
  // ...and tier B walks completely meanwhile, with the right catalog.
  ScanOutcome ok = b.scan(1700000000);
  ASSERT_TRUE(ok.root_ok) << ok.error;
  ASSERT_EQ(ok.checkpoints.size(), 1u);
  EXPECT_EQ(ok.checkpoints[0].path, "job/step-1");
  EXPECT_EQ(ok.checkpoints[0].files, 9u);
  EXPECT_EQ(b.live()->inflight.load(), 0);
  gate->release();
  t.join();
  ASSERT_TRUE(stuck_outcome.root_ok) << stuck_outcome.error;
  EXPECT_EQ(stuck_outcome.checkpoints.size(), 1u);
  EXPECT_EQ(a.live()->inflight.load(), 0);
}

TEST(TreeWalkConcurrent, AWalkWhoseCallsStopReturningIsGivenUpAndTheSlotStaysHeld) {
  testing::TempDir hung;
  hung.write("job/step-1/__0_0.distcp", 10);
  hung.write("job/step-1/.metadata", 10);
  auto gate = std::make_shared<Gate>();
  TierScanner a(tier_config(hung.str(), ", jobs: {depth: 1}, walk_concurrency: 2"), false);
  ScanOutcome first = a.scan(1700000000);
  ASSERT_TRUE(first.root_ok) << first.error;
  a.set_call_hook([gate](std::string_view op, const std::string& rel) {
    if (op == "list" && rel == "job/step-1") gate->block();
  });
  // The stall timeout counts on the scanner's clock: the walk gives up once
  // the test has moved it 50 ms past the last call that returned, and
  // reports why. Nothing waits on real time.
  auto clock = std::make_shared<FakeClock>();
  a.set_clock(clock);
  a.set_stall_timeout(std::chrono::milliseconds(50));
  // A change so step-1 is listed again (its mtime moves).
  hung.write("job/step-1/__1_0.distcp", 10);
  auto walk = std::async(std::launch::async, [&a] { return a.scan(1700000000); });
  gate->wait_entered();
  // Every other call of the walk has returned: only the stuck one is in
  // flight. Each call that returns restarts the timeout, so the clock moves
  // 50 ms at a time until the walk gives up (one move, unless a call of the
  // batch was still on its way back). The cap only turns a bug into a
  // failure instead of a hang.
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool capped = false;
  while (a.live()->inflight.load() != 1 && !capped) {
    capped = std::chrono::steady_clock::now() > cap;
    std::this_thread::yield();
  }
  while (walk.wait_for(std::chrono::seconds(0)) != std::future_status::ready && !capped) {
    clock->advance(0.050);
    capped = walk.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready &&
             std::chrono::steady_clock::now() > cap;
  }
  if (capped) gate->release();  // let the walk end so the test fails instead of hanging
  ASSERT_FALSE(capped) << "the walk was not given up";
  ScanOutcome given_up = walk.get();
  EXPECT_FALSE(given_up.root_ok);
  EXPECT_TRUE(given_up.stalled);
  EXPECT_NE(given_up.error.find("no metadata call returned"), std::string::npos) << given_up.error;
  EXPECT_TRUE(given_up.checkpoints.empty());
  // The stuck call holds its slot and shows in flight.
  EXPECT_EQ(a.live()->inflight.load(), 1);
  // A stale catalog stays stale when the walk that was given up reports.
  TierCatalog cat;
  cat.stale = true;
  merge_scan(cat, given_up, 1);
  EXPECT_TRUE(cat.stale);
  EXPECT_FALSE(cat.scan.last_error.empty());
  gate->release();
  a.set_call_hook(nullptr);
  a.set_stall_timeout(std::chrono::minutes(10));
  ScanOutcome again = a.scan(1700000000);
  ASSERT_TRUE(again.root_ok) << again.error;
  ASSERT_EQ(again.checkpoints.size(), 1u);
  EXPECT_EQ(again.checkpoints[0].files, 3u);
}

double wall_now() { return static_cast<double>(std::time(nullptr)); }

TEST(TreeWalkConcurrent, JobDirectoryWith20000LooseFilesIsNotStatedAgainWhileItsMtimeHolds) {
  testing::TempDir t;
  fs::create_directories(t.path() / "job");
  for (int i = 0; i < 20000; ++i) {
    const std::string p = t.file("job/loose-" + std::to_string(i) + ".log");
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  t.write("job/step-1/__0_0.distcp", 10);
  t.write("job/step-1/.metadata", 10);
  // A day later every file is settled (partial_after is 30 minutes).
  const double later = wall_now() + 86400;
  for (int c : {8}) {  // the serial path is the same code (see the tests above)
    TierScanner s(
        tier_config(t.str(), ", jobs: {depth: 1}, walk_concurrency: " + std::to_string(c)), false);
    // The catalog the outcomes go into, as in the daemon: the walks reuse
    // its records of the checkpoints that did not change.
    auto cat = std::make_shared<TierCatalog>();
    ScanOutcome first = s.scan(later, nullptr, cat);
    ASSERT_TRUE(first.root_ok) << first.error;
    // Root listing: 1 stat (job); job: its own fstat, 20,000 files + step-1;
    // step-1: its 2 files.
    EXPECT_EQ(first.stat_calls, 1u + 1u + 20001u + 2u);
    EXPECT_EQ(first.dirs_listed, 3u);
    ASSERT_EQ(first.checkpoints.size(), 1u);
    merge_scan(*cat, first, later);

    ScanOutcome second = s.scan(later + 15, nullptr, cat);
    ASSERT_TRUE(second.root_ok) << second.error;
    // Root listing (1 stat: job), job's own fstat, step-1 checked for change
    // (the committed checkpoint is reused): the loose files are not touched.
    EXPECT_EQ(second.stat_calls, 3u);
    EXPECT_EQ(second.dirs_listed, 1u);  // the tier root only
    ASSERT_EQ(second.checkpoints.size(), 1u);
    ASSERT_EQ(cat->checkpoints.size(), 1u);
    EXPECT_TRUE(same_record(cat->checkpoints[0], second.checkpoints[0]));
    merge_scan(*cat, second, later + 15);

    // A new entry changes the job directory's mtime: listed again.
    t.write("job/step-2/__0_0.distcp", 10);
    t.write("job/step-2/.metadata", 10);
    ScanOutcome third = s.scan(later + 30, nullptr, cat);
    ASSERT_TRUE(third.root_ok) << third.error;
    EXPECT_EQ(third.checkpoints.size(), 2u);
    EXPECT_GE(third.stat_calls, 20002u);
    fs::remove_all(t.path() / "job/step-2");
  }
}

TEST(TreeWalkConcurrent, RecentlyChangedFilesOfAReusedListingAreStatedAgainWhenDue) {
  testing::TempDir t;
  t.write("job/step-1/__0_0.distcp", 10);
  t.write("job/step-1/__1_0.distcp", 10);
  testing::RootDir root(t.str());
  // The listing is taken 5 s after both files changed: they are not settled,
  // and a reuse of the listing stats them again once their recheck is due,
  // half their quiet time later (2.5 s; recheck_due).
  WalkMemory memory;
  const double now = wall_now() + 5;  // past the directory's racy window
  const auto walk_at = [&](double at, WalkStats& s, bool remember) {
    WalkOptions o;
    o.now = at;
    TreeWalker w(root.fd, root.dev, &memory, s, o);
    if (remember) w.remember_listings(&memory.listings);
    DirNode job;
    EXPECT_TRUE(w.build("job", job, nullptr));
    const DirNode* ck = find_node(job, "step-1");
    return ck == nullptr ? std::vector<FileEntry>{} : ck->files;
  };
  {
    WalkStats s;
    walk_at(now, s, true);
    ASSERT_TRUE(memory.listings.contains("job/step-1"));
  }
  // Written in place: the size changes, the directory's mtime does not.
  { std::ofstream(t.file("job/step-1/__1_0.distcp"), std::ios::app) << "more"; }
  {
    // 1 s later: not due, what the listing said is reported (bounded staleness).
    WalkStats s;
    const auto files = walk_at(now + 1, s, false);
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[1].size, 10u);
    EXPECT_EQ(s.listings_reused, 2u);
    EXPECT_EQ(s.stat_calls, 1u + 1u);  // job, step-1
  }
  // 3 s later: due, both stat'ed again, the growth seen.
  WalkStats s;
  const auto files = walk_at(now + 3, s, false);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[1].size, 14u);
  EXPECT_EQ(s.dirs_listed, 0u);
  EXPECT_EQ(s.listings_reused, 2u);
  EXPECT_EQ(s.stat_calls, 1u + 1u + 2u);  // job, step-1, both hot files
}

// Issue 27 (degraded): young files in one directory were stat'ed again at
// every walk for the whole settle time (30 minutes). Now each is stat'ed
// again when its recheck is due: at most every kRecheckMaxSeconds once quiet,
// a few times more while it was fresh. 1,000 such files, a walk every 2 s for
// 30 minutes: 895,000 stat calls before; by the rule (each recheck due at
// 1.5x the quiet time of the last, on a 2 s walk grid), per file the checks
// at 5, 9, 15, 23, 35, 53, 81, 123 s after the write, then one a minute to
// 1,795 s: 8 + 27 = 35 a file, give or take one for where the write fell in
// its second.
TEST(TreeWalkConcurrent, QuietYoungFilesAreStatedAgainAtMostOnceAMinute) {
  testing::TempDir t;
  constexpr int kFiles = 1000;
  for (int i = 0; i < kFiles; ++i) t.write("job/step-1/f" + std::to_string(i), 10);
  testing::RootDir root(t.str());
  const double written = wall_now();
  WalkMemory memory;
  std::uint64_t file_stats = 0;
  std::uint64_t walks = 0;
  for (double at = written + 5; at < written + 1800 - 5; at += 2) {
    if (at >= written + 1500 && at < written + 1502) {
      // After 25 quiet minutes one file grows in place: seen within a minute.
      std::ofstream(t.file("job/step-1/f7"), std::ios::app) << "more";
    }
    WalkStats s;
    WalkOptions o;
    o.now = at;
    TreeWalker w(root.fd, root.dev, &memory, s, o);
    w.remember_listings(&memory.listings);
    DirNode job;
    ASSERT_TRUE(w.build("job", job, nullptr));
    const DirNode* ck = find_node(job, "step-1");
    ASSERT_NE(ck, nullptr);
    ASSERT_EQ(ck->files.size(), static_cast<std::size_t>(kFiles));
    file_stats += s.stat_calls - 2;  // less job and step-1
    ++walks;
    if (at >= written + 1500 + 62) {
      EXPECT_EQ(ck->file("f7")->size, 14u) << "seen within a minute of the write, at " << at;
    }
  }
  EXPECT_EQ(walks, 895u);
  // Every walk stat'ed every file before: 895,000.
  EXPECT_LE(file_stats, static_cast<std::uint64_t>(kFiles) * 38);
  EXPECT_GE(file_stats, static_cast<std::uint64_t>(kFiles) * 30);
}

TEST(TreeWalkConcurrent, EntriesVanishingOrMovingMidWalkAreCountedTheSameAtAnyConcurrency) {
  for (int c : {0, 1, 16}) {  // 0: no slots
    testing::TempDir t;
    for (int r = 0; r < 20; ++r) t.write("job/a/f" + std::to_string(r), 1);
    t.write("job/gone-dir/x", 1);
    t.write("job/moved-dir/x", 1);
    t.write("job/z/f", 1);
    testing::RootDir root(t.str());
    std::unique_ptr<WalkSlots> slots;
    WalkOptions o;
    if (c > 0) {
      slots = std::make_unique<WalkSlots>(c);
      o.slots = slots.get();
    }
    const fs::path base = t.path();
    o.hook = [base](std::string_view op, const std::string& rel) {
      // Between getdents and statx, a file disappears.
      if (op == "stat" && rel == "job/a/f7") fs::remove(base / rel);
      // Between the parent's listing and the directory's open: deleted, renamed.
      if (op == "open" && rel == "job/gone-dir") fs::remove_all(base / rel);
      if (op == "open" && rel == "job/moved-dir") fs::rename(base / rel, base / "job/zz-moved");
    };
    WalkStats s;
    TreeWalker w(root.fd, root.dev, nullptr, s, o);
    DirNode job;
    ASSERT_TRUE(w.build("job", job, nullptr));
    const DirNode* a = job.dir("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->files.size(), 19u) << c;
    EXPECT_EQ(a->file("f7"), nullptr);
    EXPECT_EQ(job.dir("gone-dir"), nullptr) << c;
    EXPECT_EQ(job.dir("moved-dir"), nullptr) << c;
    EXPECT_EQ(job.dir("zz-moved"), nullptr) << c;  // not there when job was listed
    ASSERT_EQ(job.dirs.size(), 2u) << c;
    EXPECT_EQ(job.dirs[0].name, "a");
    EXPECT_EQ(job.dirs[1].name, "z");
    EXPECT_EQ(s.vanished, 3u) << c;
  }
}

TEST(TreeWalkConcurrent, WalkConcurrencyIsReadAndDefaultsFromTheFileSystemType) {
  EXPECT_EQ(tier_config("/t").walk_concurrency, 0);
  EXPECT_EQ(tier_config("/t", ", walk_concurrency: auto").walk_concurrency, 0);
  EXPECT_EQ(tier_config("/t", ", walk_concurrency: 32").walk_concurrency, 32);
  for (const char* bad : {"0", "257", "lots"}) {
    auto r = parse_config(
        std::string("tiers:\n  - {name: t, path: /t, role: rapid, walk_concurrency: ") + bad +
            "}\n",
        "test.yml");
    ASSERT_FALSE(r.config) << bad;
    EXPECT_NE(r.errors.at(0).to_string().find("walk_concurrency"), std::string::npos);
  }
  for (const char* net : {"nfs", "nfs4", "lustre", "gpfs", "cifs", "ceph", "fuse.sshfs", "fuse",
                          "wekafs", "beegfs"}) {
    EXPECT_EQ(TierScanner::default_concurrency(net), 16) << net;
  }
  for (const char* local : {"ext4", "xfs", "btrfs", "tmpfs", "zfs", ""}) {
    EXPECT_EQ(TierScanner::default_concurrency(local), 1) << local;
  }
}

TEST(TreeWalkConcurrent, InflightCallsAndCallDurationsAreExported) {
  auto live = std::make_shared<WalkLive>();
  live->slots = 16;
  live->inflight = 3;
  live->observe(40'000);              // 40 us: first bucket (<= 50 us)
  live->observe(1'500'000);           // 1.5 ms: the 2.5 ms bucket
  live->observe(120'000'000'000ULL);  // 120 s: above every bound
  State state;
  state.catalogs["rapid"].edit().walk_live = live;
  state.catalogs["rapid"].edit().scan.last_calls = 600;
  state.catalogs["rapid"].edit().scan.last_duration_seconds = 2;
  std::vector<prometheus::MetricFamily> fams;
  catalog_families(state, fams);
  const std::string text = serialize(fams);
  EXPECT_NE(text.find("ckptmon_scan_inflight_calls{tier=\"rapid\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("ckptmon_scan_walk_concurrency{tier=\"rapid\"} 16"), std::string::npos);
  EXPECT_NE(text.find("ckptmon_scan_calls_per_second{tier=\"rapid\"} 300"), std::string::npos);
  EXPECT_NE(text.find("ckptmon_scan_call_duration_seconds_bucket{tier=\"rapid\",le=\"5e-05\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ckptmon_scan_call_duration_seconds_bucket{tier=\"rapid\",le=\"0.0025\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("ckptmon_scan_call_duration_seconds_bucket{tier=\"rapid\",le=\"60\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("ckptmon_scan_call_duration_seconds_count{tier=\"rapid\"} 3"),
            std::string::npos);
}

// Walks `job` below `root` as user nobody in a child process (root reads
// everything): "permission_errors dirs_listed files-in-noexec secret-present".
std::string walk_as_nobody(const std::string& root, int concurrency) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string res = "setuid failed";
    if (::setgroups(0, nullptr) == 0 && ::setresgid(65534, 65534, 65534) == 0 &&
        ::setresuid(65534, 65534, 65534) == 0) {
      testing::RootDir r(root);
      std::unique_ptr<WalkSlots> slots;
      WalkOptions o;
      if (concurrency > 0) {
        slots = std::make_unique<WalkSlots>(concurrency);
        o.slots = slots.get();
      }
      WalkStats s;
      TreeWalker w(r.fd, r.dev, nullptr, s, o);
      DirNode job;
      if (!w.build("job", job, nullptr)) {
        res = "build failed";
      } else {
        const DirNode* noexec = job.dir("noexec");
        res = std::to_string(s.permission_errors) + " " + std::to_string(s.dirs_listed) + " " +
              (noexec ? std::to_string(noexec->files.size()) : "none") + " " +
              (job.dir("secret") != nullptr ? "secret" : "no-secret");
      }
    }
    (void)!::write(fds[1], res.data(), res.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

TEST(TreeWalkConcurrent, PermissionDeniedSubtreesAreCountedTheSameAtAnyConcurrency) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to user nobody";
  testing::TempDir t;
  ::chmod(t.str().c_str(), 0755);
  t.write("job/ok/f", 1);
  t.write("job/secret/a", 1);  // directory mode 000: cannot be opened
  t.write("job/noexec/a", 1);  // directory mode 644: listed, its entries cannot be stat'ed
  t.write("job/noexec/b", 1);
  t.write("job/noexec/c", 1);
  for (const char* d : {"", "/job", "/job/ok"}) ::chmod((t.str() + d).c_str(), 0755);
  ::chmod(t.file("job/secret").c_str(), 0);
  ::chmod(t.file("job/noexec").c_str(), 0644);
  // Computed by hand: 1 (secret's open) + 3 (noexec's entries); job, ok and
  // noexec listed; the unreadable directories stay in the tree.
  EXPECT_EQ(walk_as_nobody(t.str(), 0), "4 3 0 secret");
  EXPECT_EQ(walk_as_nobody(t.str(), 16), "4 3 0 secret");
  ::chmod(t.file("job/secret").c_str(), 0755);
  ::chmod(t.file("job/noexec").c_str(), 0755);
}

}  // namespace
}  // namespace ckptmon
