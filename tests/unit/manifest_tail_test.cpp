// The event-log tailer on real files in a temporary directory: partial last
// lines, restarts, rename rotation, truncation, deletion, inode reuse, files
// that are not regular, over-long lines, and two readers of one log.

#include "collectors/manifest_tail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "store/event_journal.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;

std::string event(const std::string& job, int step, int seq) {
  // `seq` is an unknown field: it makes every line (and every file's first
  // bytes) distinct, as real timestamps would.
  return "{\"v\":1,\"ts\":" + std::to_string(1714564800 + step) +
         ",\"event\":\"checkpoint_start\",\"job\":\"" + job +
         "\",\"step\":" + std::to_string(step) + ",\"seq\":" + std::to_string(seq) + "}\n";
}

void append(const fs::path& p, const std::string& text) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << p;
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
}

std::string lines(int from, int n, const std::string& job = "llama") {
  std::string out;
  for (int i = from; i < from + n; ++i) out += event(job, 100 + i, i);
  return out;
}

// The real journal, whose next `fail_batches` batches fail before anything of
// them is written, as on a full disk: the one failing port these tests need.
class FailingJournal final : public EventJournal {
 public:
  explicit FailingJournal(std::shared_ptr<EventJournal> real) : real_(std::move(real)) {}
  std::atomic<int> fail_batches{0};

  void post(std::function<void(Writer&)> task) override {
    real_->post([this, task = std::move(task)](Writer& w) {
      Failing f(w, fail_batches);
      task(f);
    });
  }

 private:
  class Failing final : public Writer {
   public:
    Failing(Writer& w, std::atomic<int>& n) : w_(w), n_(n) {}
    JournalState load() override { return w_.load(); }
    void commit_batch(std::optional<FileId> replaced, const CursorRow& to, const EventCatalog& cat,
                      const EventAggregator& agg) override {
      if (n_ > 0) {
        --n_;
        throw std::runtime_error("database or disk is full");
      }
      w_.commit_batch(replaced, to, cat, agg);
    }
    void forget_before(double cutoff) override { w_.forget_before(cutoff); }
    void fold_steps(std::span<const StepKey> folded, const EventCatalog& cat) override {
      w_.fold_steps(folded, cat);
    }

   private:
    Writer& w_;
    std::atomic<int>& n_;
  };
  std::shared_ptr<EventJournal> real_;
};

class TailerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logs_ = dir_.path() / "logs";
    fs::create_directories(logs_);
    open_store();
  }

  void open_store() {
    std::string error;
    store_ = Store::open((dir_.path() / "state").string(), &error);
    ASSERT_TRUE(store_) << error;
    ingest_ = std::make_shared<EventIngest>(make_event_journal(store_));
  }

  // Everything a restart forgets: descriptors, the catalog in memory.
  void restart() {
    tailer_.reset();
    ingest_.reset();
    store_.reset();
    open_store();
  }

  LogTailer& tailer() {
    if (!tailer_) {
      ManifestConfig m;
      m.glob = (logs_ / "*.jsonl").string();
      m.tier = "rapid";
      tailer_ =
          std::make_unique<LogTailer>(m, std::vector<std::string>{}, options_, ingest_, clock_);
    }
    return *tailer_;
  }

  const ManifestTotals& totals() {
    snap_ = ingest_->snapshot();
    return snap_->totals;
  }
  std::uint64_t ok() { return totals().lines[static_cast<std::size_t>(LineStatus::kOk)]; }
  std::uint64_t changes(FileChange c) { return totals().file_changes[static_cast<std::size_t>(c)]; }
  const TailStatus& status() {
    snap_ = ingest_->snapshot();
    return snap_->tails.at((logs_ / "*.jsonl").string());
  }

  testing::TempDir dir_;
  fs::path logs_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<Store> store_;
  std::shared_ptr<EventIngest> ingest_;
  TailerOptions options_;
  std::unique_ptr<LogTailer> tailer_;
  std::shared_ptr<const EventCatalog> snap_;
};

TEST_F(TailerTest, ReadsCompleteLinesOnlyAndResumesAfterARestart) {
  const fs::path log = logs_ / "events.jsonl";
  const std::string third = event("llama", 103, 3);
  append(log, lines(0, 2) + third.substr(0, 20));  // the third line is still being written
  tailer().run();
  EXPECT_EQ(ok(), 2u);
  append(log, third.substr(20));
  tailer().run();
  EXPECT_EQ(ok(), 3u);
  tailer().run();
  EXPECT_EQ(ok(), 3u);

  restart();
  tailer().run();
  EXPECT_EQ(ok(), 3u) << "a restart must not read a line again";
  append(log, lines(10, 2));
  tailer().run();
  EXPECT_EQ(ok(), 5u);
  EXPECT_EQ(totals().bytes, fs::file_size(log));
  EXPECT_EQ(ingest_->snapshot()->steps.size(), 5u);
}

TEST_F(TailerTest, ABatchTheJournalCannotCommitIsReadAgainNeitherLostNorCountedTwice) {
  auto journal = std::make_shared<FailingJournal>(make_event_journal(store_));
  ingest_ = std::make_shared<EventIngest>(journal);
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 3));
  journal->fail_batches = 1;
  EXPECT_THROW(tailer().run(), std::runtime_error);
  EXPECT_EQ(ok(), 0u) << "the catalog is read back from the journal: nothing of the failed batch";
  EXPECT_EQ(totals().bytes, 0u);
  tailer().run();
  EXPECT_EQ(ok(), 3u);
  EXPECT_EQ(totals().bytes, fs::file_size(log));
  restart();
  tailer().run();
  EXPECT_EQ(ok(), 3u) << "what the journal committed is what a restart finds";
  EXPECT_EQ(totals().bytes, fs::file_size(log));
}

TEST_F(TailerTest, RenameRotationReadsTheOldFileToItsEndThenTheNewOneFromZero) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2));
  tailer().run();
  EXPECT_EQ(ok(), 2u);
  append(log, lines(2, 1));                   // written just before the rotation, not read yet
  fs::rename(log, logs_ / "events.jsonl.1");  // out of the glob
  append(log, lines(3, 2));
  tailer().run();
  EXPECT_EQ(ok(), 5u);
  EXPECT_EQ(changes(FileChange::kRotated), 1u);
  EXPECT_EQ(status().files, 1u);
  tailer().run();
  EXPECT_EQ(ok(), 5u);
  EXPECT_EQ(changes(FileChange::kRotated), 1u);
}

TEST_F(TailerTest, ALogRotatedWhileStoppedIsFoundBesideItsOldName) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2));
  tailer().run();
  restart();
  append(log, lines(2, 1));
  fs::rename(log, logs_ / "events.jsonl.1");
  append(log, lines(3, 1));
  tailer().run();
  EXPECT_EQ(ok(), 4u);
  EXPECT_EQ(changes(FileChange::kRotated), 1u);
  restart();
  tailer().run();
  EXPECT_EQ(ok(), 4u);
  EXPECT_EQ(changes(FileChange::kRotated), 1u) << "a drained log is not searched for again";
}

TEST_F(TailerTest, RenamedWithinTheGlobIsTheSameLog) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2));
  tailer().run();
  fs::rename(log, logs_ / "events-1.jsonl");
  append(logs_ / "events-1.jsonl", lines(2, 1));
  tailer().run();
  EXPECT_EQ(ok(), 3u);
  EXPECT_EQ(changes(FileChange::kRotated), 0u);
  restart();
  tailer().run();
  EXPECT_EQ(ok(), 3u);
}

TEST_F(TailerTest, TruncationRestartsAtZeroAndIsCounted) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 3));
  tailer().run();
  fs::resize_file(log, 0);
  append(log, lines(3, 2));  // shorter than before
  tailer().run();
  EXPECT_EQ(ok(), 5u);
  EXPECT_EQ(changes(FileChange::kTruncated), 1u);
}

TEST_F(TailerTest, TruncatedAndRegrownPastThePositionIsNoticedByTheBytesBeforeIt) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2));
  tailer().run();
  const auto before = fs::file_size(log);
  fs::resize_file(log, 0);  // copytruncate, then a burst of writes before the next pass
  append(log, lines(100, 5, "a-longer-job-name"));
  ASSERT_GT(fs::file_size(log), before);
  tailer().run();
  EXPECT_EQ(ok(), 7u);
  EXPECT_EQ(changes(FileChange::kTruncated), 1u);
}

TEST_F(TailerTest, SameInodeWithOtherFirstBytesAfterARestartIsANewFile) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2));
  tailer().run();
  restart();
  struct stat before {};
  ASSERT_EQ(::stat(log.c_str(), &before), 0);
  {
    // The inode now holds another log (what inode reuse looks like from here).
    const int fd = ::open(log.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  append(log, lines(50, 4, "other-job"));
  struct stat after {};
  ASSERT_EQ(::stat(log.c_str(), &after), 0);
  ASSERT_EQ(before.st_ino, after.st_ino);
  tailer().run();
  EXPECT_EQ(ok(), 6u);
  EXPECT_EQ(changes(FileChange::kReplaced), 1u);
}

TEST_F(TailerTest, ANewFileOnTheInodeOfALogThatLeftIsNotCountedTwice) {
  // The log left the glob (counted as rotated); later its inode holds other
  // content back inside the glob, as when a deleted log's inode is reused.
  const fs::path log = logs_ / "events.jsonl";
  const fs::path away = logs_ / "events.jsonl.old";
  append(log, lines(0, 2));
  tailer().run();
  fs::rename(log, away);
  tailer().run();
  EXPECT_EQ(changes(FileChange::kRotated), 1u);
  {
    const int fd = ::open(away.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  append(away, lines(10, 3, "another-job"));
  fs::rename(away, logs_ / "events-new.jsonl");
  restart();
  tailer().run();
  EXPECT_EQ(ok(), 5u);
  EXPECT_EQ(changes(FileChange::kRotated), 1u);
  EXPECT_EQ(changes(FileChange::kReplaced), 0u);
  EXPECT_EQ(changes(FileChange::kTruncated), 0u);
}

TEST_F(TailerTest, DeletedLogIsReadToItsEndThroughTheOpenDescriptor) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2));
  tailer().run();
  append(log, lines(2, 1));
  fs::remove(log);
  append(log, lines(3, 2));  // re-created under the same name
  tailer().run();
  EXPECT_EQ(ok(), 5u);
  EXPECT_EQ(changes(FileChange::kDeleted), 1u);
}

TEST_F(TailerTest, FifoSymlinkAndDirectoryAreRefusedWithoutBlocking) {
  const fs::path fifo = logs_ / "events-fifo.jsonl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_directories(dir_.path() / "elsewhere");
  append(dir_.path() / "elsewhere" / "target.jsonl", lines(0, 3));
  fs::create_symlink(dir_.path() / "elsewhere" / "target.jsonl", logs_ / "link.jsonl");
  fs::create_directories(logs_ / "dir.jsonl");
  append(logs_ / "real.jsonl", lines(10, 1));
  // A FIFO without a writer blocks an open(O_RDONLY) forever; the pass must return.
  auto pass = std::async(std::launch::async, [&] { return tailer().run(); });
  if (pass.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // unblock it, then fail
    pass.wait();
    if (w >= 0) ::close(w);
    FAIL() << "the pass blocked on the FIFO";
  }
  pass.get();
  EXPECT_EQ(ok(), 1u) << "only the regular file is read, not the symlink's target";
  const TailStatus& s = status();
  EXPECT_EQ(s.files, 1u);
  EXPECT_EQ(s.refused.at("fifo"), 1u);
  EXPECT_EQ(s.refused.at("symlink"), 1u);
  EXPECT_EQ(s.refused.at("directory"), 1u);
}

TEST_F(TailerTest, OverLongLinesAreSkippedAndCountedOnceAcrossARestart) {
  options_.max_line_bytes = 1024;
  const fs::path log = logs_ / "events.jsonl";
  append(log, std::string(5000, 'x') + "\n" + lines(0, 1));
  // An over-long line still being written: reported once, the rest skipped later.
  append(log, std::string(3000, 'y'));
  tailer().run();
  const auto too_long = [&] {
    return totals().errors[static_cast<std::size_t>(RejectReason::kTooLong)];
  };
  EXPECT_EQ(too_long(), 2u);
  EXPECT_EQ(ok(), 1u);
  restart();
  append(log, std::string(2000, 'y') + "\n" + lines(1, 1));
  tailer().run();
  EXPECT_EQ(too_long(), 2u);
  EXPECT_EQ(ok(), 2u);
  EXPECT_EQ(totals().lines[static_cast<std::size_t>(LineStatus::kRejected)], 2u);
}

TEST_F(TailerTest, RejectedAndUnknownLinesAreCountedByReason) {
  const fs::path log = logs_ / "events.jsonl";
  append(log,
         "not json\n"
         "\n"
         "{\"v\":1,\"ts\":1714564800,\"event\":\"something_new\",\"job\":\"j\"}\n"
         "{\"v\":2,\"ts\":1714564800,\"event\":\"checkpoint_start\",\"job\":\"j\",\"step\":1}\n" +
             lines(0, 1));
  tailer().run();
  const ManifestTotals& t = totals();
  EXPECT_EQ(t.lines[static_cast<std::size_t>(LineStatus::kOk)], 1u);
  EXPECT_EQ(t.lines[static_cast<std::size_t>(LineStatus::kBlank)], 1u);
  EXPECT_EQ(t.lines[static_cast<std::size_t>(LineStatus::kUnknownEvent)], 1u);
  EXPECT_EQ(t.lines[static_cast<std::size_t>(LineStatus::kRejected)], 2u);
  EXPECT_EQ(t.errors[static_cast<std::size_t>(RejectReason::kInvalidJson)], 1u);
  EXPECT_EQ(t.errors[static_cast<std::size_t>(RejectReason::kBadVersion)], 1u);
}

TEST_F(TailerTest, TwoReadersOfOneLogCountEachLineOnce) {
  // Two tailers that both claim the same files (as during a reload that
  // reorders globs) race on every batch; the position check lets one win.
  options_.read_bytes = 4096;  // many small batches
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2000));
  ManifestConfig m;
  m.glob = (logs_ / "*.jsonl").string();
  LogTailer a(m, {}, options_, ingest_, clock_);
  LogTailer b(m, {}, options_, ingest_, clock_);
  auto ra = std::async(std::launch::async, [&] { a.run(); });
  auto rb = std::async(std::launch::async, [&] { b.run(); });
  ra.get();
  rb.get();
  a.run();
  b.run();
  EXPECT_EQ(ok(), 2000u);
  EXPECT_EQ(totals().bytes, fs::file_size(log));
}

TEST_F(TailerTest, ALogTwoGlobsMatchBelongsToTheFirst) {
  append(logs_ / "events.jsonl", lines(0, 3));
  ManifestConfig second;
  second.glob = (logs_ / "events*").string();
  LogTailer b(second, {(logs_ / "*.jsonl").string()}, options_, ingest_, clock_);
  b.run();
  tailer().run();
  EXPECT_EQ(ok(), 3u);
  EXPECT_EQ(ingest_->snapshot()->tails.at(second.glob).files, 0u);
}

TEST_F(TailerTest, EventsWithoutATierGetTheGlobsTier) {
  append(logs_ / "events.jsonl",
         lines(0, 1) +
             "{\"v\":1,\"ts\":1714564900,\"event\":\"checkpoint_start\",\"job\":\"llama\","
             "\"step\":7,\"tier\":\"staging\"}\n");
  tailer().run();
  auto snap = ingest_->snapshot();
  EXPECT_NE(snap->find("rapid", "llama", 100), nullptr);
  EXPECT_NE(snap->find("staging", "llama", 7), nullptr);
  EXPECT_EQ(snap->find("rapid", "llama", 7), nullptr);
}

TEST_F(TailerTest, IdleJobsAreFoldedIntoTheirJobFigures) {
  append(logs_ / "events.jsonl", lines(0, 3, "old-job"));
  tailer().run();
  EXPECT_EQ(ingest_->snapshot()->steps.size(), 3u);
  EXPECT_EQ(ingest_->fold_idle_jobs(1714564800.0), 0u) << "events after the cutoff stay";
  EXPECT_EQ(ingest_->fold_idle_jobs(1800000000.0), 3u);
  auto snap = ingest_->snapshot();
  EXPECT_TRUE(snap->steps.empty());
  EXPECT_EQ(snap->jobs.at({"rapid", "old-job"}).evicted_through, 102);
  restart();
  tailer().run();
  EXPECT_TRUE(ingest_->snapshot()->steps.empty()) << "the fold is persisted";
  EXPECT_EQ(ok(), 3u);
}

TEST_F(TailerTest, AStoppedTailerReadsNoFurther) {
  append(logs_ / "events.jsonl", lines(0, 3));
  tailer().stop();
  tailer().run();
  EXPECT_EQ(ok(), 0u);
}

TEST_F(TailerTest, TheCollectorPublishesTheCatalogIntoState) {
  fs::create_directories(logs_ / "a");
  append(logs_ / "a" / "events.jsonl", lines(0, 2));
  Config cfg;
  TierConfig t;
  t.name = "rapid";
  t.path = (dir_.path() / "tier").string();
  cfg.tiers.push_back(t);
  cfg.manifests.push_back(ManifestConfig{(logs_ / "*" / "events*.jsonl").string(), "rapid"});
  cfg.manifests.push_back(ManifestConfig{(logs_ / "*.jsonl").string(), ""});
  cfg.global.tail_interval = std::chrono::milliseconds(250);
  ManifestTailCollector c(clock_, make_event_journal(store_));
  c.configure(cfg);
  EXPECT_EQ(c.interval(), std::chrono::milliseconds(250));
  EXPECT_EQ(c.targets(), (std::vector<std::string>{cfg.manifests[0].glob, cfg.manifests[1].glob}));
  EXPECT_GE(c.wake_fd(), 0);
  State state;
  for (const auto& target : c.targets()) c.prepare(target, state)()(state);
  ASSERT_TRUE(state.events);
  EXPECT_EQ(state.events->totals.lines[static_cast<std::size_t>(LineStatus::kOk)], 2u);
  EXPECT_NE(state.events->find("rapid", "llama", 100), nullptr);
  // An older snapshot arriving late never replaces a newer one.
  auto newer = state.events;
  auto older = std::make_shared<EventCatalog>(*newer);
  older->version = newer->version - 1;
  Update stale = [older](State& s) {
    if (!s.events || older->version > s.events->version) s.events = older;
  };
  stale(state);
  EXPECT_EQ(state.events, newer);
}

// Descriptors open in this process, from /proc/self/fd.
std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Issue 27 item 7: one descriptor per matched log, never released, so 21,000
// per-rank logs under a 20,000 limit killed /metrics for good. With a budget
// of 4, ten logs are all read in one pass and at most 4 are open at once.
TEST_F(TailerTest, ManyLogsAreAllReadWithinTheDescriptorBudget) {
  options_.fd_budget = std::make_shared<LogFdBudget>(4);
  for (int j = 0; j < 10; ++j) {
    append(logs_ / ("rank" + std::to_string(j) + ".jsonl"), lines(0, 2, "j" + std::to_string(j)));
  }
  const std::size_t before = open_fds();
  tailer().run();
  EXPECT_EQ(ok(), 20u);
  EXPECT_LE(open_fds(), before + 4);
  EXPECT_LE(options_.fd_budget->used(), 4u);
  EXPECT_EQ(status().files, 10u);
  EXPECT_LE(status().open, 4u);
  EXPECT_EQ(status().unread, 0u);
  // Closed ones are opened again when they grow, and read from where they were.
  for (int j = 0; j < 10; ++j) {
    append(logs_ / ("rank" + std::to_string(j) + ".jsonl"), lines(2, 1, "j" + std::to_string(j)));
  }
  tailer().run();
  EXPECT_EQ(ok(), 30u);
  EXPECT_LE(open_fds(), before + 4);
  tailer().run();
  EXPECT_EQ(ok(), 30u) << "nothing read twice";
}

TEST_F(TailerTest, AQuietLogIsClosedAndOpenedAgainWhenItGrows) {
  const fs::path log = logs_ / "events.jsonl";
  append(log, lines(0, 2));
  tailer().run();
  EXPECT_EQ(status().open, 1u);
  clock_->advance(options_.close_quiet_after_seconds + 1);
  tailer().run();
  EXPECT_EQ(status().open, 0u) << "read to its end and quiet for long: closed";
  EXPECT_EQ(status().files, 1u) << "still tailed";
  const std::size_t before = open_fds();
  tailer().run();
  EXPECT_EQ(open_fds(), before) << "a quiet log is not opened to find nothing new";
  append(log, lines(2, 3));
  tailer().run();
  EXPECT_EQ(ok(), 5u);
  EXPECT_EQ(status().open, 1u);
  // Truncated while closed: read again from the start, counted once.
  clock_->advance(options_.close_quiet_after_seconds + 1);
  tailer().run();
  ASSERT_EQ(status().open, 0u);
  fs::resize_file(log, 0);
  append(log, lines(10, 1));
  tailer().run();
  EXPECT_EQ(ok(), 6u);
  EXPECT_EQ(changes(FileChange::kTruncated), 1u);
}

// The budget spent elsewhere: new logs are not read, and the status says how
// many; once descriptors are free again they are read, nothing lost.
TEST_F(TailerTest, ASpentBudgetLeavesLogsUnreadAndSaysSo) {
  options_.fd_budget = std::make_shared<LogFdBudget>(2);
  ASSERT_TRUE(options_.fd_budget->try_acquire());
  ASSERT_TRUE(options_.fd_budget->try_acquire());
  for (int j = 0; j < 3; ++j) {
    append(logs_ / ("rank" + std::to_string(j) + ".jsonl"), lines(0, 2, "j" + std::to_string(j)));
  }
  tailer().run();
  EXPECT_EQ(ok(), 0u);
  EXPECT_EQ(status().unread, 3u);
  options_.fd_budget->release();
  options_.fd_budget->release();
  tailer().run();
  EXPECT_EQ(ok(), 6u);
  EXPECT_EQ(status().unread, 0u);
}

TEST(EventTables, AreCreatedInADatabaseThatHasItsVersionButNotThem) {
  // As a database written by a build without the tailer would be.
  testing::TempDir dir;
  std::string error;
  ASSERT_TRUE(Store::open(dir.str(), &error)) << error;
  {
    sql::Db db(dir.str() + "/ckptmon.db");
    db.exec("DROP TABLE manifest_cursors");
  }
  auto store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  const bool present = store->call<bool>([](sql::Db& db) {
    auto st = db.prepare("SELECT COUNT(*) FROM manifest_cursors");
    return st.step();
  });
  EXPECT_TRUE(present);
}

TEST(GlobRoot, StopsAtTheFirstWildcardComponent) {
  EXPECT_EQ(glob_root("/lustre/ckpt/*/events*.jsonl"), "/lustre/ckpt");
  EXPECT_EQ(glob_root("/a/b/events.jsonl"), "/a/b");
  EXPECT_EQ(glob_root("/*/x.jsonl"), "/");
  EXPECT_EQ(glob_root("/a/b[0-9]/c/*.jsonl"), "/a");
}

}  // namespace
}  // namespace ckptmon
