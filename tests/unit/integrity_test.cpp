// Digests against published test vectors, the byte-rate limiter on a fake
// clock, and the integrity verifier end to end: shards queued by the tailer,
// Megatron integrity.json manifests, results kept across a restart.

#include "collectors/integrity.hpp"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/manifest_tail.hpp"
#include "store/event_journal.hpp"
#include "store/store.hpp"
#include "store/verification_ledger.hpp"
#include "temp_dir.hpp"
#include "util/digest.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;

// Published vectors: CRC-32C check value (RFC 3720 / the CRC catalogue),
// SHA-256 of "abc" (FIPS 180-2), XXH64 of "" and "abc" with seed 0 (xxHash's
// sanity checks).
constexpr const char* kCrc32c123456789 = "e3069283";
constexpr const char* kSha256Abc =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kXxh64Abc = "44bc2cf5ad770999";
constexpr const char* kXxh64Empty = "ef46db3751d8e999";

TEST(Digest, MatchesPublishedVectors) {
  EXPECT_EQ(digest_hex(ChecksumAlgo::kCrc32c, "123456789"), kCrc32c123456789);
  EXPECT_EQ(digest_hex(ChecksumAlgo::kSha256, "abc"), kSha256Abc);
  EXPECT_EQ(digest_hex(ChecksumAlgo::kXxh64, "abc"), kXxh64Abc);
  EXPECT_EQ(digest_hex(ChecksumAlgo::kXxh64, ""), kXxh64Empty);
  EXPECT_EQ(digest_hex(ChecksumAlgo::kCrc32c, ""), "00000000");
  EXPECT_EQ(xxh64("abc", 3), 0x44bc2cf5ad770999ull);
}

TEST(Digest, ChunkedEqualsWhole) {
  for (ChecksumAlgo a : {ChecksumAlgo::kCrc32c, ChecksumAlgo::kSha256, ChecksumAlgo::kXxh64}) {
    auto d = Digest::make(a);
    d->update("1234", 4);
    d->update("", 0);
    d->update("56789", 5);
    EXPECT_EQ(d->hex(), digest_hex(a, "123456789")) << checksum_algo_name(a);
  }
}

// Sleeping moves the fake clock: the test never waits for real time.
struct FakeSleep {
  std::shared_ptr<FakeClock> clock;
  void operator()(double seconds) const { clock->advance(seconds); }
};

TEST(ByteRateLimiter, PacesReadsToTheRate) {
  auto clock = std::make_shared<FakeClock>(1000.0);
  ByteRateLimiter lim(2.0 * 1024 * 1024, clock, FakeSleep{clock});
  for (int i = 0; i < 10; ++i) lim.acquire(1024 * 1024);
  // 10 MiB at 2 MiB/s, starting with an empty budget: 5 s.
  EXPECT_NEAR(clock->now() - 1000.0, 5.0, 1e-9);
  EXPECT_NEAR(lim.slept_seconds(), 5.0, 1e-9);
}

TEST(ByteRateLimiter, AnIdleSpellAllowsOneSecondOfBurstOnly) {
  auto clock = std::make_shared<FakeClock>(1000.0);
  ByteRateLimiter lim(1000.0, clock, FakeSleep{clock});
  clock->advance(3600);
  lim.acquire(1000);  // one second's worth was saved up
  EXPECT_EQ(lim.slept_seconds(), 0.0);
  lim.acquire(500);  // nothing left: half a second
  EXPECT_NEAR(lim.slept_seconds(), 0.5, 1e-9);
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

TEST(VerifyFile, OkMismatchMissingAndAFifoWithoutBlocking) {
  testing::TempDir dir;
  auto clock = std::make_shared<FakeClock>();
  ByteRateLimiter lim(1e12, clock, FakeSleep{clock});
  std::vector<char> buf;
  std::uint64_t bytes = 0;
  std::string detail;
  write_file(dir.path() / "a", "abc");
  EXPECT_EQ(
      verify_file((dir.path() / "a").string(), *parse_checksum(std::string("sha256:") + kSha256Abc),
                  lim, buf, &bytes, &detail),
      IntegrityResult::kOk);
  EXPECT_EQ(bytes, 3u);
  EXPECT_EQ(verify_file((dir.path() / "a").string(), *parse_checksum("xxh64:0000000000000000"), lim,
                        buf, &bytes, &detail),
            IntegrityResult::kMismatch);
  EXPECT_EQ(detail, "expected xxh64:0000000000000000, got 44bc2cf5ad770999");
  EXPECT_EQ(verify_file((dir.path() / "gone").string(), *parse_checksum("crc32c:00000000"), lim,
                        buf, &bytes, &detail),
            IntegrityResult::kMissing);
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0644), 0);
  EXPECT_EQ(verify_file((dir.path() / "fifo").string(), *parse_checksum("crc32c:00000000"), lim,
                        buf, &bytes, &detail),
            IntegrityResult::kError);
}

class VerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tier_ = dir_.path() / "tier";
    fs::create_directories(tier_);
    open();
  }
  void open() {
    std::string error;
    store_ = Store::open((dir_.path() / "state").string(), &error);
    ASSERT_TRUE(store_) << error;
    verifier_ = std::make_unique<IntegrityVerifier>(make_verification_ledger(store_), clock_,
                                                    FakeSleep{clock_});
    verifier_->configure(rate_, {{"rapid", tier_.string()}});
  }
  void restart() {
    verifier_.reset();
    store_.reset();
    open();
  }
  // Shards announced by a training job through its event log.
  void tail(const std::string& log_text) {
    write_file(dir_.path() / "logs" / "events.jsonl", log_text);
    auto ingest = std::make_shared<EventIngest>(make_event_journal(store_));
    ManifestConfig m;
    m.glob = (dir_.path() / "logs" / "*.jsonl").string();
    m.tier = "rapid";
    TailerOptions opts;
    opts.tier_roots = {{"rapid", tier_.string()}};
    LogTailer(m, {}, opts, ingest, clock_).run();
  }
  std::uint64_t total(IntegrityResult r) { return verifier_->snapshot()->totals.at("rapid")[r]; }

  testing::TempDir dir_;
  fs::path tier_;
  double rate_ = 1000;  // bytes per second
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<Store> store_;
  std::unique_ptr<IntegrityVerifier> verifier_;
};

std::string shard_line(int rank, const std::string& path, const std::string& checksum) {
  return "{\"v\":1,\"ts\":1714564821,\"event\":\"shard_written\",\"job\":\"j\",\"step\":7,"
         "\"rank\":" +
         std::to_string(rank) + ",\"path\":\"" + path + "\",\"bytes\":3,\"start_ts\":1714564800," +
         "\"checksum\":\"" + checksum + "\"}\n";
}

TEST_F(VerifierTest, ShardsWithChecksumsAreVerifiedAtTheRateAndAMismatchFailsTheCheckpoint) {
  const std::string ckpt = (tier_ / "j" / "step-7").string();
  write_file(ckpt + "/r0", "abc");
  write_file(ckpt + "/r1", "123456789");
  write_file(ckpt + "/r2", "abd");  // corrupted
  write_file(tier_ / "j" / "step-7" / "r4", "abc");
  tail(shard_line(0, ckpt + "/r0", std::string("sha256:") + kSha256Abc) +
       shard_line(1, ckpt + "/r1", std::string("crc32c:") + kCrc32c123456789) +
       shard_line(2, ckpt + "/r2", std::string("xxh64:") + kXxh64Abc) +
       shard_line(3, ckpt + "/r3", std::string("xxh64:") + kXxh64Abc) +   // never written
       shard_line(4, "j/step-7/r4", std::string("xxh64:") + kXxh64Abc));  // relative to the tier
  const double start = clock_->now();
  auto pass = verifier_->run(1e9);
  EXPECT_TRUE(pass.finished);
  EXPECT_EQ(pass.files, 5u);
  EXPECT_EQ(pass.bytes, 3u + 9u + 3u + 3u);
  // 18 bytes at 1000 bytes/s, with no budget saved up: 18 ms of (fake) sleep.
  // (Unix seconds in a double resolve to about 0.2 us.)
  EXPECT_NEAR(clock_->now() - start, 18.0 / 1000.0, 1e-6);
  EXPECT_EQ(total(IntegrityResult::kOk), 3u);
  EXPECT_EQ(total(IntegrityResult::kMismatch), 1u);
  EXPECT_EQ(total(IntegrityResult::kMissing), 1u);
  EXPECT_EQ(total(IntegrityResult::kError), 0u);
  auto snap = verifier_->snapshot();
  EXPECT_TRUE(snap->failed("rapid", "j", 7, "j/step-7"));
  EXPECT_EQ(snap->pending_shards, 0u);

  restart();
  auto again = verifier_->run(1e9);
  EXPECT_EQ(again.files, 0u) << "verified shards are not verified again after a restart";
  EXPECT_EQ(total(IntegrityResult::kOk), 3u);
  EXPECT_TRUE(verifier_->snapshot()->failed("rapid", "j", 7, "j/step-7"));
}

TEST_F(VerifierTest, StopsAtItsBudgetAndResumesWhereItStopped) {
  const std::string ckpt = (tier_ / "j" / "step-7").string();
  std::string log;
  for (int r = 0; r < 4; ++r) {
    write_file(ckpt + "/r" + std::to_string(r), "abc");
    log += shard_line(r, ckpt + "/r" + std::to_string(r), std::string("xxh64:") + kXxh64Abc);
  }
  tail(log);
  // 3 bytes per shard at 1000 B/s: 3 ms each; a 5 ms budget covers two.
  auto first = verifier_->run(0.005);
  EXPECT_FALSE(first.finished);
  EXPECT_EQ(first.files, 2u);
  EXPECT_EQ(verifier_->snapshot()->pending_shards, 2u);
  restart();
  auto second = verifier_->run(1e9);
  EXPECT_EQ(second.files, 2u);
  EXPECT_EQ(total(IntegrityResult::kOk), 4u);
}

TEST_F(VerifierTest, MegatronIntegrityJsonIsVerifiedFileByFile) {
  const fs::path iter = tier_ / "gpt" / "iter_0000100";
  write_file(iter / "__0_0.distcp", "abc");
  write_file(iter / "__1_0.distcp", "abd");
  write_file(iter / "integrity.json",
             std::string("{\"algorithm\":\"sha256\",\"files\":{\"__0_0.distcp\":\"") + kSha256Abc +
                 "\",\"__1_0.distcp\":\"" + kSha256Abc + "\"}}");
  const fs::path plain = tier_ / "gpt" / "iter_0000200";  // no integrity.json
  write_file(plain / "__0_0.distcp", "abc");
  auto ckpt = [&](const std::string& path, std::int64_t step, double first_seen) {
    Checkpoint c;
    c.tier = "rapid";
    c.job = "gpt";
    c.path = path;
    c.step = step;
    c.framework = "megatron_torch_dist";
    c.state = CkptState::kCommitted;
    c.first_seen = first_seen;
    c.last_seen = clock_->now();
    return c;
  };
  store_->save_catalog("rapid",
                       {ckpt("gpt/iter_0000100", 100, clock_->now() - 3600),
                        ckpt("gpt/iter_0000200", 200, clock_->now() - 5)},
                       {}, clock_->now());
  store_->flush();
  auto pass = verifier_->run(1e9);
  EXPECT_EQ(pass.files, 2u);
  EXPECT_EQ(total(IntegrityResult::kOk), 1u);
  EXPECT_EQ(total(IntegrityResult::kMismatch), 1u);
  auto snap = verifier_->snapshot();
  EXPECT_TRUE(snap->failed("rapid", "gpt", 100, "gpt/iter_0000100"));
  EXPECT_FALSE(snap->failed("rapid", "gpt", 200, "gpt/iter_0000200"));
  auto undecided = [&] {
    return store_->call<std::int64_t>([](sql::Db& db) {
      auto st = db.prepare("SELECT COUNT(*) FROM integrity_checkpoints WHERE done=1");
      return st.step() ? st.int64(0) : 0;
    });
  };
  EXPECT_EQ(undecided(), 1) << "a checkpoint seen 5 s ago may still get its integrity.json";
  clock_->advance(3600);
  verifier_->run(1e9);
  EXPECT_EQ(undecided(), 2);
  EXPECT_EQ(total(IntegrityResult::kOk), 1u);
}

// --- paths under a tier (issue 9, failure 5) ----------------------------------------

TEST(TierRelativePath, AbsoluteOnlyUnderTheRootAndNeverDotDot) {
  auto rel = [](std::string_view root, std::string_view path) {
    const TierPath t = tier_relative_path(root, path);
    return t.refused ? "refused:" + std::string(to_string(*t.refused)) : t.rel;
  };
  EXPECT_EQ(rel("/nvme/ckpt", "/nvme/ckpt/llama/step-1/r0"), "llama/step-1/r0");
  EXPECT_EQ(rel("/nvme/ckpt/", "/nvme//ckpt/./llama/r0"), "llama/r0");
  EXPECT_EQ(rel("/nvme/ckpt", "llama/./step-1//r0"), "llama/step-1/r0");
  EXPECT_EQ(rel("/nvme/ckpt", "/etc/passwd"), "refused:outside_tier");
  EXPECT_EQ(rel("/nvme/ckpt", "/nvme/ckpt2/x"), "refused:outside_tier");  // a sibling, not under
  EXPECT_EQ(rel("/nvme/ckpt", "../../../../etc/hostname"), "refused:dotdot");
  EXPECT_EQ(rel("/nvme/ckpt", "/nvme/ckpt/a/../../etc"), "refused:dotdot");
  EXPECT_EQ(rel("/nvme/ckpt", "a/b/.."), "refused:dotdot");
  EXPECT_EQ(rel("/nvme/ckpt", ""), "refused:bad_path");
  EXPECT_EQ(rel("/nvme/ckpt", "/nvme/ckpt"), "refused:bad_path");  // the root itself
  EXPECT_EQ(rel("/nvme/ckpt", std::string_view("a\0b", 3)), "refused:bad_path");
  EXPECT_EQ(rel("/nvme/ckpt", "..a/b.."), "..a/b..");  // names that only start or end with dots
}

// Both resolutions: openat2 where the kernel has it, and the walk.
class OpenBeneath : public ::testing::TestWithParam<BeneathMode> {};

TEST_P(OpenBeneath, OpensPathsUnderTheRootAndRefusesEverySymlink) {
  testing::TempDir dir;
  const fs::path tier = dir.path() / "tier";
  write_file(tier / "j" / "s" / "r0", "abc");
  write_file(dir.path() / "outside" / "secret", "abc");
  fs::create_symlink(dir.path() / "outside" / "secret", tier / "j" / "abs-link");
  fs::create_symlink("../../outside/secret", tier / "j" / "rel-link");
  fs::create_symlink(dir.path() / "outside", tier / "j" / "dir-link");
  fs::create_symlink("s/r0", tier / "j" / "inside-link");  // even one that stays inside
  const int root = ::open(tier.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  auto open = [&](const std::string& rel) {
    std::optional<PathRefusal> why;
    int err = 0;
    const int fd = open_beneath(root, rel, O_RDONLY, &why, &err, GetParam());
    if (fd >= 0) {
      ::close(fd);
      return std::string("open");
    }
    return why ? "refused:" + std::string(to_string(*why)) : "errno:" + std::to_string(err);
  };
  EXPECT_EQ(open("j/s/r0"), "open");
  EXPECT_EQ(open("j/abs-link"), "refused:symlink");
  EXPECT_EQ(open("j/rel-link"), "refused:symlink");
  EXPECT_EQ(open("j/dir-link/secret"), "refused:symlink");
  EXPECT_EQ(open("j/inside-link"), "refused:symlink");
  EXPECT_EQ(open("j/s/gone"), "errno:" + std::to_string(ENOENT));
  EXPECT_EQ(open("j/s/r0/x"), "errno:" + std::to_string(ENOTDIR));
  if (GetParam() == BeneathMode::kWalk) {
    EXPECT_EQ(open("j/../../outside/secret"), "refused:dotdot");
  } else {
    // openat2 itself stops `..` leaving the root (RESOLVE_BENEATH), or the
    // kernel lacks it and the walk refuses the component.
    const std::string r = open("j/../../outside/secret");
    EXPECT_TRUE(r == "refused:escape" || r == "refused:dotdot") << r;
  }
  EXPECT_EQ(open("/etc/hostname"), "refused:bad_path");
  ::close(root);
}

INSTANTIATE_TEST_SUITE_P(Modes, OpenBeneath,
                         ::testing::Values(BeneathMode::kAuto, BeneathMode::kWalk),
                         [](const auto& param_info) {
                           return param_info.param == BeneathMode::kAuto ? "Openat2" : "Walk";
                         });

// Watches `p` for any open or read, so a test can prove a file was never touched.
class TouchWatch {
 public:
  explicit TouchWatch(const fs::path& p) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ >= 0) wd_ = ::inotify_add_watch(fd_, p.c_str(), IN_OPEN | IN_ACCESS);
  }
  ~TouchWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0 && wd_ >= 0; }
  // True when the file was opened or read since the watch began.
  bool touched() const {
    alignas(inotify_event) char buf[4096];
    return ::read(fd_, buf, sizeof buf) > 0;
  }

 private:
  int fd_;
  int wd_ = -1;
};

class VerifierPathTest : public VerifierTest, public ::testing::WithParamInterface<BeneathMode> {};

TEST_P(VerifierPathTest, EventPathsOutsideTheTierAreNeverOpenedNorHashed) {
  verifier_->set_beneath_mode(GetParam());
  // A file outside the tier whose checksum an attacker knows: were it read,
  // "ok" would tell them its contents.
  const fs::path secret = dir_.path() / "outside" / "secret";
  write_file(secret, "abc");
  write_file(tier_ / "j" / "step-7" / "r0", "abc");
  fs::create_symlink(secret, tier_ / "j" / "step-7" / "r1");            // points outside
  fs::create_symlink(dir_.path() / "outside", tier_ / "j" / "escape");  // a directory inside, out
  TouchWatch watch(secret);
  ASSERT_TRUE(watch.ok());
  const std::string sum = std::string("sha256:") + kSha256Abc;
  tail(shard_line(0, secret.string(), sum) +                   // absolute, outside
       shard_line(1, "../outside/secret", sum) +               // `..`
       shard_line(2, "j/step-7/r1", sum) +                     // symlink pointing out
       shard_line(3, "j/escape/secret", sum) +                 // directory symlink inside
       shard_line(4, (tier_ / "j/step-7/r0").string(), sum) +  // absolute, under the tier
       shard_line(5, "j/step-7/r0", sum));                     // relative to the tier
  auto pass = verifier_->run(1e9);
  EXPECT_FALSE(watch.touched()) << "the file outside the tier was opened or read";
  EXPECT_EQ(pass.files, 2u) << "refused paths are not checks";
  EXPECT_EQ(pass.bytes, 6u) << "only the two shards in the tier were read";
  EXPECT_EQ(total(IntegrityResult::kOk), 2u);
  EXPECT_EQ(total(IntegrityResult::kMismatch), 0u);
  EXPECT_EQ(total(IntegrityResult::kMissing), 0u);
  EXPECT_EQ(total(IntegrityResult::kError), 0u);
  auto refused = [&](PathRefusal r) {
    return verifier_->snapshot()->refused.at("rapid")[static_cast<std::size_t>(r)];
  };
  EXPECT_EQ(refused(PathRefusal::kOutsideTier), 1u);
  EXPECT_EQ(refused(PathRefusal::kDotDot), 1u);
  EXPECT_EQ(refused(PathRefusal::kSymlink), 2u);
  EXPECT_EQ(verifier_->snapshot()->pending_shards, 0u);
  EXPECT_EQ(verifier_->progress()->pending.load(), 0u);

  restart();  // the refusals are kept in the state database like the results
  EXPECT_EQ(verifier_->run(1e9).files, 0u);
  EXPECT_EQ(refused(PathRefusal::kSymlink), 2u);
  EXPECT_EQ(refused(PathRefusal::kOutsideTier), 1u);
  EXPECT_FALSE(watch.touched());
}

TEST_P(VerifierPathTest, IntegrityJsonNamesOutsideTheCheckpointAreRefused) {
  verifier_->set_beneath_mode(GetParam());
  const fs::path secret = dir_.path() / "outside" / "secret";
  write_file(secret, "abc");
  const fs::path iter = tier_ / "gpt" / "iter_0000100";
  write_file(iter / "__0_0.distcp", "abc");
  fs::create_symlink(secret, iter / "__1_0.distcp");
  write_file(iter / "integrity.json",
             std::string("{\"files\":{\"__0_0.distcp\":\"") + kSha256Abc +
                 "\",\"__1_0.distcp\":\"" + kSha256Abc + "\",\"../../../outside/secret\":\"" +
                 kSha256Abc + "\",\"" + secret.string() + "\":\"" + kSha256Abc + "\"}}");
  TouchWatch watch(secret);
  ASSERT_TRUE(watch.ok());
  Checkpoint c;
  c.tier = "rapid";
  c.job = "gpt";
  c.path = "gpt/iter_0000100";
  c.step = 100;
  c.framework = "megatron_torch_dist";
  c.state = CkptState::kCommitted;
  c.first_seen = clock_->now() - 3600;
  c.last_seen = clock_->now();
  store_->save_catalog("rapid", {c}, {}, clock_->now());
  store_->flush();
  auto pass = verifier_->run(1e9);
  EXPECT_FALSE(watch.touched());
  EXPECT_EQ(pass.files, 1u);
  EXPECT_EQ(pass.bytes, 3u);
  EXPECT_EQ(total(IntegrityResult::kOk), 1u);
  auto refused = [&](PathRefusal r) {
    return verifier_->snapshot()->refused.at("rapid")[static_cast<std::size_t>(r)];
  };
  EXPECT_EQ(refused(PathRefusal::kSymlink), 1u);
  EXPECT_EQ(refused(PathRefusal::kDotDot), 1u);
  EXPECT_EQ(refused(PathRefusal::kOutsideTier), 1u);
}

INSTANTIATE_TEST_SUITE_P(Modes, VerifierPathTest,
                         ::testing::Values(BeneathMode::kAuto, BeneathMode::kWalk),
                         [](const auto& param_info) {
                           return param_info.param == BeneathMode::kAuto ? "Openat2" : "Walk";
                         });

// A read that hangs (a hung mount) is reported stuck once it has gone
// read_deadline seconds without bytes, on the injected clock; a read waiting
// for the byte budget is not.
TEST_F(VerifierTest, AHungReadIsReportedStuckAfterTheReadDeadline) {
  verifier_->configure(rate_, {{"rapid", tier_.string()}}, 60);
  write_file(tier_ / "j" / "step-7" / "r0", "abc");
  tail(shard_line(0, "j/step-7/r0", std::string("sha256:") + kSha256Abc));
  std::promise<void> entered;
  std::promise<void> release;
  auto released = release.get_future().share();
  bool first = true;
  verifier_->set_read([&](int fd, void* buf, std::size_t n) -> ssize_t {
    if (first) {
      first = false;
      entered.set_value();
      released.wait();  // hangs until the test lets it go
    }
    return ::read(fd, buf, n);
  });
  auto progress = verifier_->progress();
  auto run = std::async(std::launch::async, [&] { return verifier_->run(1e9); });
  entered.get_future().wait();
  EXPECT_EQ(progress->pending.load(), 1u) << "the queued shard counts while it is being read";
  EXPECT_EQ(progress->stuck(clock_->now()), 0u);
  EXPECT_EQ(verifier_->reading_path(), (tier_ / "j/step-7/r0").string());
  clock_->advance(59);
  EXPECT_EQ(progress->stuck(clock_->now()), 0u);
  clock_->advance(1);
  EXPECT_EQ(progress->stuck(clock_->now()), 1u);
  release.set_value();
  auto pass = run.get();
  EXPECT_EQ(pass.files, 1u);
  EXPECT_EQ(total(IntegrityResult::kOk), 1u);
  EXPECT_EQ(progress->stuck(clock_->now() + 3600), 0u) << "no read in progress";
  EXPECT_EQ(progress->pending.load(), 0u);
  EXPECT_EQ(verifier_->reading_path(), "");
}

}  // namespace
}  // namespace ckptmon
