#include "store/audit_log.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "util/clock.hpp"

namespace ckptmon {
namespace {

using nlohmann::json;

std::vector<json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

AuditConfig config_at(const std::string& file) {
  AuditConfig c;
  c.log_file = file;
  return c;
}

TEST(AuditLog, WritesOneJsonLinePerRecordWithTimeAndEvent) {
  testing::TempDir dir;
  auto clock = std::make_shared<FakeClock>(1'700'000'000.0);
  AuditLog log(clock);
  log.configure(config_at(dir.file("audit.log")));
  log.record("config_load", {{"source", "sighup"}, {"outcome", "applied"}});
  clock->set(1'700'000'001.5);
  log.record("finding_opened", {{"tier", "rapid"},
                                {"path",
                                 "a\xff"
                                 "b"}});
  log.flush();

  const auto lines = read_lines(dir.file("audit.log"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["event"], "config_load");
  EXPECT_EQ(lines[0]["source"], "sighup");
  EXPECT_EQ(lines[0]["ts"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(lines[1]["event"], "finding_opened");
  EXPECT_EQ(lines[1]["ts"].get<std::string>().substr(0, 19), "2023-11-14T22:13:21");
  // Not UTF-8: replaced, and the line still parses.
  EXPECT_EQ(lines[1]["path"],
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(log.stats().written, 2u);
  // Its owner only: the log names peers and users.
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("audit.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
}

TEST(AuditLog, DisabledQueuesNothing) {
  testing::TempDir dir;
  AuditLog log(std::make_shared<FakeClock>());
  EXPECT_FALSE(log.enabled());
  log.record("config_load", {});
  log.flush();
  EXPECT_EQ(log.stats().written, 0u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("audit.log")));
}

TEST(AuditLog, AppendsToWhatIsThere) {
  testing::TempDir dir;
  dir.write_text("audit.log", "{\"event\":\"before\"}\n");
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at(dir.file("audit.log")));
  log.record("after", {});
  log.flush();
  const auto lines = read_lines(dir.file("audit.log"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["event"], "before");
  EXPECT_EQ(lines[1]["event"], "after");
}

TEST(AuditLog, RotatesBySizeKeepingMaxFiles) {
  testing::TempDir dir;
  AuditLog log(std::make_shared<FakeClock>());
  AuditConfig c = config_at(dir.file("audit.log"));
  c.max_bytes = 200;
  c.max_files = 2;
  log.configure(c);
  const std::string pad(250, 'x');
  // Each record is over 250 bytes: every batch of one passes max_bytes.
  for (int i = 0; i < 5; ++i) {
    log.record("r", {{"i", i}, {"pad", pad}});
    log.flush();
  }
  EXPECT_EQ(log.stats().rotations, 5u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("audit.log.3")));
  // The newest rotated file holds the last record, the one before it the one before.
  auto newest = read_lines(dir.file("audit.log.1"));
  auto older = read_lines(dir.file("audit.log.2"));
  ASSERT_EQ(newest.size(), 1u);
  ASSERT_EQ(older.size(), 1u);
  EXPECT_EQ(newest[0]["i"], 4);
  EXPECT_EQ(older[0]["i"], 3);
  // The next record opens a new file at the configured path.
  log.record("r", {{"i", 5}});
  log.flush();
  auto current = read_lines(dir.file("audit.log"));
  ASSERT_EQ(current.size(), 1u);
  EXPECT_EQ(current[0]["i"], 5);
}

TEST(AuditLog, FileMovedAwayIsReopenedAtThePath) {
  testing::TempDir dir;
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at(dir.file("audit.log")));
  log.record("one", {});
  log.flush();
  std::filesystem::rename(dir.file("audit.log"), dir.file("audit.log.old"));  // logrotate
  log.record("two", {});
  log.flush();
  ASSERT_EQ(read_lines(dir.file("audit.log.old")).size(), 1u);
  auto now = read_lines(dir.file("audit.log"));
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0]["event"], "two");
}

// /dev/full answers every write with ENOSPC: a full disk, for real.
TEST(AuditLog, FullDiskIsCountedAndNothingBlocks) {
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at("/dev/full"));
  for (int i = 0; i < 3; ++i) log.record("r", {{"i", i}});
  log.flush();  // returns: the writer gave up on them
  const auto s = log.stats();
  EXPECT_EQ(s.written, 0u);
  EXPECT_EQ(s.dropped_write_error, 3u);
  EXPECT_GE(s.write_errors, 1u);
}

TEST(AuditLog, FifoIsRefusedNotWaitedOn) {
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("audit.log").c_str(), 0600), 0);
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at(dir.file("audit.log")));
  log.record("r", {});
  log.flush();  // no reader: the open fails at once (ENXIO) instead of hanging
  EXPECT_EQ(log.stats().dropped_write_error, 1u);
  EXPECT_EQ(log.stats().write_errors, 1u);
}

TEST(AuditLog, SymlinkAtThePathIsNotFollowed) {
  testing::TempDir dir;
  dir.write_text("target", "");
  std::filesystem::create_symlink(dir.file("target"), dir.file("audit.log"));
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at(dir.file("audit.log")));
  log.record("r", {});
  log.flush();
  EXPECT_EQ(log.stats().dropped_write_error, 1u);
  EXPECT_EQ(std::filesystem::file_size(dir.file("target")), 0u);
}

TEST(AuditLog, QueueFullDropsAndCounts) {
  testing::TempDir dir;
  // A queue of 1 byte holds no record at all.
  AuditLog log(std::make_shared<FakeClock>(), 1);
  log.configure(config_at(dir.file("audit.log")));
  log.record("r", {});
  log.record("r", {});
  log.flush();
  EXPECT_EQ(log.stats().dropped_queue_full, 2u);
  EXPECT_EQ(log.stats().written, 0u);
}

TEST(AuditLog, WritesAgainAfterTheFileCanBeOpened) {
  testing::TempDir dir;
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at(dir.file("missing/audit.log")));  // no such directory
  log.record("lost", {});
  log.flush();
  EXPECT_EQ(log.stats().dropped_write_error, 1u);
  std::filesystem::create_directory(dir.file("missing"));
  log.record("kept", {});
  log.flush();
  auto lines = read_lines(dir.file("missing/audit.log"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["event"], "kept");
}

std::shared_ptr<const std::vector<AccessFinding>> findings(std::vector<AccessFinding> v) {
  return std::make_shared<const std::vector<AccessFinding>>(std::move(v));
}

AccessFinding finding(const std::string& path, FindingKind kind) {
  return AccessFinding{"rapid", "job-a", path, kind, "detail of " + path};
}

TEST(FindingsAudit, RecordsEachOpenedAndClosedOnce) {
  testing::TempDir dir;
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at(dir.file("audit.log")));
  FindingsAudit audit;

  auto first = findings({finding("job-a/step-1", FindingKind::kWorldReadable),
                         finding("job-a", FindingKind::kReadableOutsideProject)});
  audit.update({{"rapid", first}}, log);
  audit.update({{"rapid", first}}, log);  // the same list: nothing new
  // step-1 fixed, step-2 world-readable, the project finding still open.
  auto second = findings({finding("job-a", FindingKind::kReadableOutsideProject),
                          finding("job-a/step-2", FindingKind::kWorldReadable)});
  audit.update({{"rapid", second}}, log);
  // Not walked to the end this time: unknown closes nothing.
  audit.update({{"rapid", nullptr}}, log);
  // The tier is no longer configured.
  audit.update({}, log);
  log.flush();

  const auto lines = read_lines(dir.file("audit.log"));
  std::vector<std::string> seen;
  for (const auto& l : lines) {
    seen.push_back(l["event"].get<std::string>() + " " + l["path"].get<std::string>() + " " +
                   l["kind"].get<std::string>());
  }
  const std::vector<std::string> expected = {
      "finding_opened job-a readable_outside_project", "finding_opened job-a/step-1 world_readable",
      "finding_opened job-a/step-2 world_readable",    "finding_closed job-a/step-1 world_readable",
      "finding_closed job-a readable_outside_project", "finding_closed job-a/step-2 world_readable",
  };
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(lines[0]["first_walk"], true);
  EXPECT_FALSE(lines[2].contains("first_walk"));
  EXPECT_EQ(lines[3]["detail"], "detail of job-a/step-1");
  EXPECT_FALSE(lines[3].contains("reason"));
  EXPECT_EQ(lines[4]["reason"], "tier_removed");
}

TEST(FindingsAudit, ManyAtOnceAreCappedAndSummed) {
  testing::TempDir dir;
  AuditLog log(std::make_shared<FakeClock>());
  log.configure(config_at(dir.file("audit.log")));
  FindingsAudit audit;
  std::vector<AccessFinding> many;
  const std::size_t n = FindingsAudit::kMaxRecordsPerUpdate + 7;
  for (std::size_t i = 0; i < n; ++i) {
    many.push_back(finding("job-a/step-" + std::to_string(i), FindingKind::kWorldReadable));
  }
  audit.update({{"rapid", findings(many)}}, log);
  log.flush();
  const auto lines = read_lines(dir.file("audit.log"));
  ASSERT_EQ(lines.size(), FindingsAudit::kMaxRecordsPerUpdate + 1);
  EXPECT_EQ(lines.back()["event"], "findings_truncated");
  EXPECT_EQ(lines.back()["opened_not_recorded"], 7);
  EXPECT_EQ(lines.back()["closed_not_recorded"], 0);
}

}  // namespace
}  // namespace ckptmon
