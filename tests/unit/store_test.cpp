#include "store/store.hpp"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "collectors/event_journal.hpp"
#include "store/event_journal.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

Checkpoint make(const std::string& path, std::int64_t step, CkptState state) {
  Checkpoint c;
  c.tier = "rapid";
  c.job = "llama";
  c.path = path;
  c.step = step;
  c.framework = "pytorch_dcp";
  c.state = state;
  c.reason = state == CkptState::kPartial ? "no .metadata after 30m" : "";
  c.files = 9;
  c.bytes = 123456789012ULL;
  c.allocated_bytes = 123456794624ULL;
  c.first_write = 1700000000.25;
  c.last_write = 1700000042.5;
  c.marker_time = 1700000043.0;
  c.component_bytes = {100, 200, 3, 4, 5, 6, 7, 8};  // scaler 7, dataloader 8 (schema 4)
  c.metadata = "refused: .metadata: global os.system is not on the allow-list";  // schema 8
  c.expected_files = 8;
  c.save_start = 1699999990.0;
  c.save_end = 1700000043.0;
  c.dir_mtime = 1700000043.0;
  c.first_seen = 1700000050.0;
  c.last_seen = 1700000060.0;
  c.skew_observed = true;
  return c;
}

TEST(Store, SavedCheckpointsComeBackAfterReopen) {
  testing::TempDir dir;
  std::string error;
  {
    auto store = Store::open(dir.str() + "/state", &error);
    ASSERT_TRUE(store) << error;
    store->save_catalog("rapid",
                        {make("llama/step-100", 100, CkptState::kCommitted),
                         make("llama/step-200", 200, CkptState::kPartial)},
                        {}, 1700000060.0);
    store->flush();
    EXPECT_EQ(store->transactions(), 1u);
    EXPECT_EQ(store->errors(), 0u);
  }
  auto store = Store::open(dir.str() + "/state", &error);
  ASSERT_TRUE(store) << error;
  auto loaded = store->load_catalog();
  ASSERT_EQ(loaded.size(), 1u);
  ASSERT_EQ(loaded["rapid"].size(), 2u);
  const Checkpoint& a = loaded["rapid"][0];
  const Checkpoint want = make("llama/step-100", 100, CkptState::kCommitted);
  EXPECT_EQ(a.path, want.path);
  EXPECT_EQ(a.step, 100);
  EXPECT_EQ(a.state, CkptState::kCommitted);
  EXPECT_EQ(a.bytes, 123456789012ULL);
  EXPECT_EQ(a.allocated_bytes, 123456794624ULL);
  EXPECT_DOUBLE_EQ(a.first_write, 1700000000.25);
  EXPECT_DOUBLE_EQ(a.last_write, 1700000042.5);
  EXPECT_EQ(a.component_bytes, want.component_bytes);
  EXPECT_EQ(a.metadata, want.metadata);
  EXPECT_EQ(a.expected_files, 8u);
  EXPECT_DOUBLE_EQ(a.first_seen, 1700000050.0);
  EXPECT_TRUE(a.skew_observed);
  EXPECT_EQ(loaded["rapid"][1].state, CkptState::kPartial);
  EXPECT_EQ(loaded["rapid"][1].reason, "no .metadata after 30m");
}

TEST(Store, DeletedIsRememberedAndDistinctFromNeverSeen) {
  testing::TempDir dir;
  std::string error;
  auto store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted)}, {}, 10);
  store->save_catalog("rapid", {}, {"llama/step-100"}, 20);
  store->flush();
  EXPECT_TRUE(store->load_catalog()["rapid"].empty());
  auto deleted = store->deleted("rapid");
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_DOUBLE_EQ(deleted["llama/step-100"], 20);
  EXPECT_FALSE(deleted.contains("llama/step-999"));  // never seen

  // A checkpoint that comes back is present again.
  store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted)}, {}, 30);
  store->flush();
  EXPECT_EQ(store->load_catalog()["rapid"].size(), 1u);
  EXPECT_TRUE(store->deleted("rapid").empty());
}

TEST(Store, UpdateOverwritesFiguresButKeepsOneRow) {
  testing::TempDir dir;
  std::string error;
  auto store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  auto c = make("llama/step-100", 100, CkptState::kInProgress);
  store->save_catalog("rapid", {c}, {}, 10);
  c.state = CkptState::kCommitted;
  c.files = 10;
  store->save_catalog("rapid", {c}, {}, 20);
  store->flush();
  auto loaded = store->load_catalog()["rapid"];
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].state, CkptState::kCommitted);
  EXPECT_EQ(loaded[0].files, 10u);
}

TEST(Store, UnusableStateDirIsAnErrorNotACrash) {
  testing::TempDir dir;
  dir.write("file", 1);
  std::string error;
  auto store = Store::open(dir.str() + "/file/state", &error);
  EXPECT_FALSE(store);
  EXPECT_NE(error.find("cannot create state_dir"), std::string::npos) << error;
}

// A database with garbage pages: quick_check finds it, the file and its -wal
// go aside under a timestamped name, and a new, empty database takes its place.
TEST(Store, ACorruptDatabaseIsMovedAsideAndStartedAgain) {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  std::string error;
  const std::string state = dir.str() + "/state";
  {
    auto store = Store::open(state, &error);
    ASSERT_TRUE(store) << error;
    std::vector<Checkpoint> many;
    for (int i = 0; i < 400; ++i) {
      many.push_back(make("llama/step-" + std::to_string(i), i, CkptState::kCommitted));
    }
    store->save_catalog("rapid", std::move(many), {}, 1700000060.0);
    store->flush();
    EXPECT_EQ(store->rebuilt(), 0u);
    store->post([](sql::Db& db) { db.exec("PRAGMA wal_checkpoint(TRUNCATE)"); });
    store->flush();
  }
  const std::string db = state + "/ckptmon.db";
  const auto size = fs::file_size(db);
  ASSERT_GT(size, 4u * 4096u);  // more than the header page and the schema
  {
    // Pages 3 and 4 (the checkpoint table's) overwritten; page 1 left intact.
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2 * 4096);
    const std::string garbage(2 * 4096, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  std::ofstream(db + "-wal") << "";
  auto store = Store::open(state, &error);
  ASSERT_TRUE(store) << error;
  EXPECT_EQ(store->rebuilt(), 1u);
  const std::string moved = store->moved_aside();
  EXPECT_EQ(moved.rfind(db + ".corrupt-", 0), 0u) << moved;
  EXPECT_EQ(fs::file_size(moved), size);
  EXPECT_TRUE(fs::exists(moved + "-wal"));
  EXPECT_TRUE(store->load_catalog().empty());
  store->save_catalog("rapid", {make("llama/step-1", 1, CkptState::kCommitted)}, {}, 1.0);
  store->flush();
  EXPECT_EQ(store->errors(), 0u);
  EXPECT_EQ(store->load_catalog()["rapid"].size(), 1u);
}

// SQLITE_FULL for real: the database may not grow past its current size.
// Three failed writes in a row make it failing; one that succeeds ends that.
TEST(Store, WritesFailingInARowMakeItFailingUntilOneSucceeds) {
  testing::TempDir dir;
  std::string error;
  auto store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  store->post([](sql::Db& db) { db.exec("PRAGMA max_page_count=1"); });
  auto big_write = [&](int i) {
    std::vector<Checkpoint> many;
    for (int k = 0; k < 200; ++k) {
      many.push_back(
          make("llama/" + std::to_string(i) + "-" + std::to_string(k), k, CkptState::kCommitted));
    }
    store->save_catalog("rapid", std::move(many), {}, 1.0);
    store->flush();
  };
  big_write(1);
  big_write(2);
  EXPECT_EQ(store->consecutive_errors(), 2u);
  EXPECT_FALSE(store->write_failing());
  big_write(3);
  EXPECT_EQ(store->errors(), 3u);
  EXPECT_TRUE(store->write_failing());
  EXPECT_NE(store->last_error().find("full"), std::string::npos) << store->last_error();
  store->post([](sql::Db& db) { db.exec("PRAGMA max_page_count=1073741823"); });
  store->flush();
  EXPECT_FALSE(store->write_failing());
  big_write(4);
  EXPECT_EQ(store->errors(), 3u);
  EXPECT_EQ(store->load_catalog()["rapid"].size(), 200u);
}

// A state disk that stays full: reads keep succeeding, writes keep failing.
// Only writes count: a read between two failed writes neither resets the
// count nor adds to it, so /-/ready and CkptmonStateWriteFailing see it.
// PRAGMA query_only makes every write fail (SQLITE_READONLY) and no read.
TEST(Store, FailingWritesInterleavedWithReadsKeepTheCountGrowing) {
  testing::TempDir dir;
  std::string error;
  std::shared_ptr<Store> store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted)}, {}, 1.0);
  store->flush();
  store->post([](sql::Db& db) { db.exec("PRAGMA query_only=1"); });
  store->flush();
  ASSERT_EQ(store->consecutive_errors(), 0u);
  auto journal = make_event_journal(store);
  for (int i = 1; i <= 5; ++i) {
    store->save_catalog(
        "rapid", {make("llama/step-" + std::to_string(i), i, CkptState::kCommitted)}, {}, 2.0);
    EXPECT_EQ(store->load_catalog()["rapid"].size(), 1u);  // a read, and it succeeds
    EXPECT_TRUE(store->deleted("rapid").empty());
    // The event journal's writer swallows a failed commit into its caller's
    // promise (collectors/event_ingest.cpp) and reads first: still one write
    // that failed, not a task that succeeded.
    journal->post([](EventJournal::Writer& w) {
      (void)w.load();
      EventCatalog cat;
      EventAggregator agg(cat);
      CursorRow row;
      row.dev = 1;
      row.ino = 2;
      try {
        w.commit_batch(std::nullopt, row, cat, agg);
      } catch (const std::exception&) {
      }
    });
    store->flush();
    EXPECT_EQ(store->consecutive_errors(), static_cast<std::uint64_t>(2 * i)) << "round " << i;
  }
  EXPECT_EQ(store->errors(), 10u);
  EXPECT_TRUE(store->write_failing());
  EXPECT_NE(store->last_error().find("readonly"), std::string::npos) << store->last_error();
  // A setting of the connection is no write; one write that succeeds ends it.
  store->post([](sql::Db& db) { db.exec("PRAGMA query_only=0"); }, Store::Access::kRead);
  store->flush();
  EXPECT_EQ(store->consecutive_errors(), 10u);
  store->save_catalog("rapid", {make("llama/step-6", 6, CkptState::kCommitted)}, {}, 3.0);
  store->flush();
  EXPECT_EQ(store->consecutive_errors(), 0u);
  EXPECT_FALSE(store->write_failing());
  EXPECT_EQ(store->load_catalog()["rapid"].size(), 2u);
}

std::set<std::string> names_in(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

std::string bytes_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A stopped daemon's state (no -wal: its last connection checkpointed and
// removed it) read by `report`/`plan --state-dir`: nothing is created or
// changed there. A reader that left a -wal and a -shm of its own (root's,
// say) would break the daemon's next start, and where it cannot write it
// could not read at all ("attempt to write a readonly database").
TEST(Store, ReadingAStoppedDaemonsStateCreatesAndChangesNothingThere) {
  testing::TempDir dir;
  std::string error;
  {
    auto store = Store::open(dir.str(), &error);
    ASSERT_TRUE(store) << error;
    store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted)}, {}, 10);
  }
  const auto db = dir.path() / "ckptmon.db";
  ASSERT_EQ(names_in(dir.path()), (std::set<std::string>{"ckptmon.db"}));
  const std::string before = bytes_of(db);
  struct stat st0 {};
  ASSERT_EQ(::stat(db.c_str(), &st0), 0);
  {
    auto ro = open_state_readonly(dir.str(), &error);
    ASSERT_TRUE(ro) << error;
    EXPECT_EQ(read_catalog(*ro)["rapid"].size(), 1u);
    EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"ckptmon.db"}))
        << "the reader created files beside the database";
  }
  EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"ckptmon.db"}));
  struct stat st1 {};
  ASSERT_EQ(::stat(db.c_str(), &st1), 0);
  EXPECT_EQ(st1.st_mtim.tv_sec, st0.st_mtim.tv_sec);
  EXPECT_EQ(st1.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);
  EXPECT_EQ(bytes_of(db), before);
}

// In a child in its own mount namespace, bind-mounts `dir` read-only over
// itself and runs `fn` there; its exit status comes back. 77 when the
// mount is not allowed (not root, no CAP_SYS_ADMIN, a sandbox).
int in_read_only_mount(const std::string& dir, const std::function<int()>& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, dir.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      ::_exit(77);
    }
    // The mount is read-only even for root: check it is.
    if (::access(dir.c_str(), W_OK) == 0 || errno != EROFS) ::_exit(78);
    ::_exit(fn());
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// `report --state-dir` on a state directory the reader cannot write: a
// read-only mount (root included), for a stopped daemon's database (no
// -wal) and a running one's (its -wal and -shm there, the latest write
// only in the -wal).
TEST(Store, StateOnAReadOnlyMountIsReadWithOrWithoutItsWal) {
  testing::TempDir stopped;
  testing::TempDir running;
  std::string error;
  {
    auto store = Store::open(stopped.str(), &error);
    ASSERT_TRUE(store) << error;
    store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted)}, {}, 10);
  }
  {
    // A running daemon's files, copied as they are while it runs (a child
    // must not share this process's connection to the same file, and the
    // store's thread must be gone before the fork).
    testing::TempDir live;
    auto store = Store::open(live.str(), &error);
    ASSERT_TRUE(store) << error;
    store->save_catalog("rapid",
                        {make("llama/step-100", 100, CkptState::kCommitted),
                         make("llama/step-200", 200, CkptState::kCommitted)},
                        {}, 10);
    store->flush();
    for (const char* f : {"ckptmon.db", "ckptmon.db-wal", "ckptmon.db-shm"}) {
      std::filesystem::copy_file(live.path() / f, running.path() / f);
    }
  }
  auto catalog_size = [](const std::string& dir) {
    std::string e;
    auto ro = open_state_readonly(dir, &e);
    if (!ro) {
      std::fprintf(stderr, "%s\n", e.c_str());
      return 100;
    }
    try {
      return static_cast<int>(read_catalog(*ro)["rapid"].size());
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "%s\n", ex.what());
      return 101;
    }
  };
  const int a = in_read_only_mount(stopped.str(), [&] { return catalog_size(stopped.str()); });
  if (a == 77) GTEST_SKIP() << "a read-only bind mount needs root (CAP_SYS_ADMIN): not tested";
  EXPECT_EQ(a, 1) << "100: not opened, 101: not read (see stderr)";
  EXPECT_EQ(names_in(stopped.path()), (std::set<std::string>{"ckptmon.db"}));
  EXPECT_EQ(in_read_only_mount(running.str(), [&] { return catalog_size(running.str()); }), 2);
}

}  // namespace
}  // namespace ckptmon
