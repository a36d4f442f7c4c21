// Events folded into the catalog (model/events.cpp), their stored round trip,
// and their merge with the scanner's checkpoints in metrics and the API.

#include "model/events.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "rules/alerts.hpp"
#include "rules/evaluate.hpp"
#include "rules/recovery.hpp"
#include "serve/rules_cycle.hpp"

#include "api/web.hpp"
#include "exporter/metrics.hpp"
#include "store/event_codec.hpp"
#include "store/shard_pack.hpp"

namespace ckptmon {
namespace {

class Feed {
 public:
  explicit Feed(EventCatalog& cat, std::size_t steps_per_job = kEventStepsPerJob)
      : agg_(cat, steps_per_job) {}
  // Parses `text` (lines) as the tailer does and folds every line in.
  void operator()(const std::string& text, std::string_view tier = "rapid") {
    ParseCursor cursor;
    ChunkResult r;
    parser_.parse_chunk(text, cursor, r);
    ASSERT_EQ(r.consumed, text.size()) << "test lines must end in a newline";
    for (const auto& l : r.lines()) agg_.add(l, tier);
  }
  EventAggregator& agg() { return agg_; }

 private:
  EventParser parser_;
  EventAggregator agg_;
};

std::string ev(const std::string& type, double ts, const std::string& extra,
               const std::string& job = "llama") {
  return "{\"v\":1,\"ts\":" + std::to_string(ts) + ",\"event\":\"" + type + "\",\"job\":\"" + job +
         "\"" + extra + "}\n";
}

std::string shard(int step, int rank, double start, double end, std::uint64_t bytes,
                  const std::string& checksum = "") {
  return ev("shard_written", end,
            ",\"step\":" + std::to_string(step) + ",\"rank\":" + std::to_string(rank) +
                ",\"path\":\"/ckpt/s" + std::to_string(step) + "/r" + std::to_string(rank) +
                "\",\"bytes\":" + std::to_string(bytes) + ",\"start_ts\":" + std::to_string(start) +
                (checksum.empty() ? "" : ",\"checksum\":\"" + checksum + "\""));
}

TEST(EventCatalog, OneSaveGivesDurationSkewSlowestRankAndShardTotals) {
  EventCatalog cat;
  Feed feed(cat);
  feed(ev("checkpoint_start", 1000.0, ",\"step\":10,\"rank\":1") +
       ev("checkpoint_start", 999.5, ",\"step\":10,\"rank\":0") +  // the earliest start counts
       shard(10, 0, 1000.0, 1012.0, 100) + shard(10, 2, 1000.0, 1019.5, 300) +
       shard(10, 1, 1000.0, 1015.0, 200, "crc32c:e3069283") +
       ev("checkpoint_commit", 1020.0, ",\"step\":10,\"files\":4,\"bytes\":600"));
  const EventStep* s = cat.find("rapid", "llama", 10);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->shards, 3u);
  EXPECT_EQ(s->shard_bytes, 600u);
  EXPECT_EQ(s->checksummed_shards, 1u);
  EXPECT_EQ(s->last_rank, 2);
  ASSERT_TRUE(s->completion_skew());
  EXPECT_DOUBLE_EQ(*s->completion_skew(), 1019.5 - 1012.0);
  ASSERT_TRUE(s->duration());
  EXPECT_DOUBLE_EQ(*s->duration(), 1020.0 - 999.5);
  const EventJob& j = cat.jobs.at({"rapid", "llama"});
  EXPECT_EQ(j.duration.count, 1u);
  EXPECT_DOUBLE_EQ(j.duration.sum, 20.5);
  ASSERT_EQ(feed.agg().checks().size(), 1u);
  const ShardChecks& shards = feed.agg().checks().at(StepKey{"rapid", "llama", 10});
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0].rank, 1);
  EXPECT_EQ(shards[0].path, "/ckpt/s10/r1");
  EXPECT_EQ(shards[0].bytes, 200u);
  EXPECT_EQ(shards[0].algo, ChecksumAlgo::kCrc32c);
  EXPECT_EQ(shards[0].hex, "e3069283");
  // A repeated commit (a retried writer) is not a second observation.
  feed(ev("checkpoint_commit", 1021.0, ",\"step\":10,\"files\":4,\"bytes\":600"));
  EXPECT_EQ(j.duration.count, 1u);
  EXPECT_DOUBLE_EQ(*cat.find("rapid", "llama", 10)->duration(), 20.5);
}

TEST(ShardPack, RoundTripsAndFrontCodesPaths) {
  ShardPack pack;
  const std::string sha = "sha256:" + std::string(64, 'f');
  pack.add(0, 5, *parse_checksum("crc32c:0A0b0c0D"), "/nvme/ckpt/llama/step-0001000/__0_0.distcp");
  pack.add(-1, 1ull << 40, *parse_checksum(sha), "/nvme/ckpt/llama/step-0001000/__1_0.distcp");
  pack.add(2147483647, 0, *parse_checksum("xxh64:0123456789abcdef"), "x");
  EXPECT_EQ(pack.count(), 3u);
  std::vector<ShardCheck> out;
  ASSERT_TRUE(ShardPack::unpack(pack.data(), out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].rank, 0);
  EXPECT_EQ(out[0].bytes, 5u);
  EXPECT_EQ(out[0].checksum.to_string(), "crc32c:0a0b0c0d");
  EXPECT_EQ(out[1].rank, -1);
  EXPECT_EQ(out[1].bytes, 1ull << 40);
  EXPECT_EQ(out[1].checksum.to_string(), sha);
  EXPECT_EQ(out[1].path, "/nvme/ckpt/llama/step-0001000/__1_0.distcp");
  EXPECT_EQ(out[2].rank, 2147483647);
  EXPECT_EQ(out[2].path, "x");
  // The second path costs only its differing tail.
  EXPECT_LT(pack.data().size(), 2 * 45u + 8 + 32 + 8 + 20);
  for (std::size_t cut = 0; cut < pack.data().size(); ++cut) {
    std::vector<ShardCheck> partial;
    const bool ok = ShardPack::unpack(std::string_view(pack.data()).substr(0, cut), partial);
    EXPECT_TRUE(!ok || partial.size() < 3) << cut;
  }
}

// The aggregator's compact per-checkpoint form packs into the same queue
// bytes as packing each event's own values in the order they were read, also
// when the steps interleave (the arena is per checkpoint, not per run).
TEST(ShardChecks, PackIntoTheQueueBytesOfTheEventsInReadOrder) {
  EventCatalog cat;
  Feed feed(cat);
  const std::string sha = "sha256:" + std::string(62, 'a') + "0f";
  feed(shard(7, 0, 1.0, 2.0, 10, "crc32c:00000001") + shard(8, 0, 1.0, 2.0, 20, sha) +
       shard(7, 1, 1.0, 3.0, 30, "xxh64:0123456789abcdef") + shard(7, 2, 1.0, 4.0, 40) +
       shard(8, 3, 1.0, 5.0, 1ull << 40, "crc32c:ffffffff"));
  ASSERT_EQ(feed.agg().checks().size(), 2u);
  ShardPack got7;
  got7.add(feed.agg().checks().at(StepKey{"rapid", "llama", 7}));
  ShardPack want7;
  want7.add(0, 10, *parse_checksum("crc32c:00000001"), "/ckpt/s7/r0");
  want7.add(1, 30, *parse_checksum("xxh64:0123456789abcdef"), "/ckpt/s7/r1");
  EXPECT_EQ(got7.count(), 2u);
  EXPECT_EQ(got7.data(), want7.data());
  ShardPack got8;
  got8.add(feed.agg().checks().at(StepKey{"rapid", "llama", 8}));
  ShardPack want8;
  want8.add(0, 20, *parse_checksum(sha), "/ckpt/s8/r0");
  want8.add(3, 1ull << 40, *parse_checksum("crc32c:ffffffff"), "/ckpt/s8/r3");
  EXPECT_EQ(got8.data(), want8.data());
  std::vector<ShardCheck> out;
  ASSERT_TRUE(ShardPack::unpack(got8.data(), out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].checksum.to_string(), sha);
  EXPECT_EQ(out[1].path, "/ckpt/s8/r3");
  EXPECT_EQ(out[1].bytes, 1ull << 40);
  feed.agg().clear();
  EXPECT_TRUE(feed.agg().checks().empty());
}

TEST(EventCatalog, CommitReadBeforeStartIsObservedWhenTheStartArrives) {
  EventCatalog cat;
  Feed feed(cat);
  feed(ev("checkpoint_commit", 2050.0, ",\"step\":20,\"files\":1,\"bytes\":1"));
  EXPECT_EQ(cat.jobs.at({"rapid", "llama"}).duration.count, 0u);
  feed(ev("checkpoint_start", 2000.0, ",\"step\":20"));
  EXPECT_EQ(cat.jobs.at({"rapid", "llama"}).duration.count, 1u);
  EXPECT_DOUBLE_EQ(cat.jobs.at({"rapid", "llama"}).duration.sum, 50.0);
}

TEST(EventCatalog, PausesPairPerRankInAnyOrderAndObserveOncePerCheckpoint) {
  EventCatalog cat;
  Feed feed(cat);
  // Rank 1's log is read before rank 0's; rank 1's end arrives before its start.
  feed(ev("pause_end", 1003.0, ",\"step\":5,\"rank\":1") +
       ev("pause_start", 1000.0, ",\"step\":5,\"rank\":1") +
       ev("pause_start", 1000.0, ",\"step\":5,\"rank\":0") +
       ev("pause_end", 1004.5, ",\"step\":5,\"rank\":0"));
  const EventStep* s = cat.find("rapid", "llama", 5);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->pauses, 2u);
  EXPECT_DOUBLE_EQ(s->pause_max, 4.5);
  EXPECT_TRUE(s->pause_starts.empty());
  EXPECT_TRUE(s->pause_ends.empty());
  const HistogramData& h = cat.jobs.at({"rapid", "llama"}).pause;
  EXPECT_EQ(h.count, 1u);
  EXPECT_DOUBLE_EQ(h.sum, 3.0);  // the first pair completed: rank 1's
}

TEST(EventCatalog, FailuresCountOncePerCheckpointAndKeepTheRecentOnes) {
  EventCatalog cat;
  Feed feed(cat);
  for (int step = 1; step <= 12; ++step) {
    feed(ev("checkpoint_failed", 100.0 * step,
            ",\"step\":" + std::to_string(step) + ",\"reason\":\"r" + std::to_string(step) +
                "\",\"rank\":0") +
         ev("checkpoint_failed", 100.0 * step + 1,
            ",\"step\":" + std::to_string(step) + ",\"reason\":\"again\",\"rank\":1"));
  }
  const EventJob& j = cat.jobs.at({"rapid", "llama"});
  EXPECT_EQ(j.failures, 12u);
  ASSERT_EQ(j.recent_failures.size(), kRecentFailures);
  EXPECT_EQ(j.recent_failures.front().step, 3);
  EXPECT_EQ(j.recent_failures.back().step, 12);
  EXPECT_EQ(j.recent_failures.back().reason, "r12");
}

TEST(EventCatalog, RestoresPairInAnyOrderAndOnlySuccessesAreTimed) {
  EventCatalog cat;
  Feed feed(cat);
  feed(ev("restore_done", 5090.0, ",\"step\":100,\"bytes\":42,\"ok\":true,\"tier\":\"capacity\"") +
       ev("restore_start", 5000.0, ",\"step\":100") + ev("restore_start", 6000.0, ",\"step\":100") +
       ev("restore_done", 6010.0, ",\"step\":100,\"bytes\":0,\"ok\":false"));
  const EventRestores& r = cat.restores.at("llama");
  EXPECT_EQ(r.restores, 2u);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.duration.count, 1u);
  EXPECT_DOUBLE_EQ(r.duration.sum, 90.0);
  EXPECT_DOUBLE_EQ(r.last_ok_ts, 5090.0);
  ASSERT_TRUE(r.last);
  EXPECT_FALSE(r.last->ok);
  EXPECT_DOUBLE_EQ(r.last->ts, 6010.0);
  EXPECT_TRUE(r.pending_starts.empty());
  EXPECT_TRUE(r.pending_dones.empty());
  // Restores are per job and never create checkpoint entries.
  EXPECT_EQ(cat.find("rapid", "llama", 100), nullptr);
}

TEST(EventCatalog, RestorePhasesComeFromTheLatestRestoresEventsInAnyOrder) {
  EventCatalog cat;
  Feed feed(cat);
  // An older restore (step 50) first, then step 100's events out of order:
  // rank 1's read lands after rank 0's, the resume before the done.
  feed(ev("restore_start", 10.0, ",\"step\":50") + ev("restore_locate_done", 11.0, ",\"step\":50") +
       ev("restore_read_done", 1081.0, ",\"step\":100,\"rank\":0") +
       ev("restore_resume", 1101.0, ",\"step\":100") +
       ev("restore_start", 1000.0, ",\"step\":100,\"rank\":1") +
       ev("restore_start", 999.5, ",\"step\":100,\"rank\":0") +
       ev("restore_locate_done", 1004.0, ",\"step\":100") +
       ev("restore_read_done", 1088.5, ",\"step\":100,\"rank\":1,\"bytes\":5") +
       ev("restore_done", 1093.5, ",\"step\":100,\"bytes\":10,\"ok\":true") +
       // A late event of the older restore changes nothing.
       ev("restore_reshard_done", 20.0, ",\"step\":50"));
  const EventRestores& r = cat.restores.at("llama");
  ASSERT_TRUE(r.phases);
  EXPECT_EQ(r.phases->step, 100);
  EXPECT_EQ(r.phases->ranks_read, 2u);
  // By hand: locate 1004 - 999.5; read 1088.5 - 1004 (the slower rank);
  // no reshard event; resume 1101 - 1093.5.
  EXPECT_DOUBLE_EQ(*phase_seconds(*r.phases, 0), 4.5);
  EXPECT_DOUBLE_EQ(*phase_seconds(*r.phases, 1), 84.5);
  EXPECT_FALSE(phase_seconds(*r.phases, 2).has_value());
  EXPECT_DOUBLE_EQ(*phase_seconds(*r.phases, 3), 7.5);
  // The phase events are not checkpoints and not restores of their own.
  EXPECT_EQ(r.restores, 1u);
  EXPECT_EQ(cat.find("rapid", "llama", 100), nullptr);
  EXPECT_EQ(cat.find("rapid", "llama", 50), nullptr);

  // The same step restored again after it resumed: a new record.
  feed(ev("restore_start", 2000.0, ",\"step\":100"));
  ASSERT_TRUE(r.phases);
  EXPECT_EQ(r.phases->start, 2000.0);
  EXPECT_FALSE(r.phases->located.has_value());
  EXPECT_FALSE(phase_seconds(*r.phases, 0).has_value());  // unknown, not 0
}

TEST(EventCatalog, APhaseThatEndsBeforeItStartsIsUnknown) {
  RestorePhases p;
  p.start = 100;
  p.located = 90;  // clocks of two nodes disagree
  p.read = 150;
  EXPECT_FALSE(phase_seconds(p, 0).has_value());
  EXPECT_DOUBLE_EQ(*phase_seconds(p, 1), 60.0);  // from the located mark
  EXPECT_FALSE(phase_seconds(p, 4).has_value());
}

TEST(EventCatalog, DrainsAndCleanupsAttachToTheirCheckpoint) {
  EventCatalog cat;
  Feed feed(cat);
  feed(ev("drain_start", 10.0, ",\"step\":3,\"from_tier\":\"staging\",\"to_tier\":\"rapid\"") +
       ev("shard_drained", 11.0,
          ",\"step\":3,\"from_tier\":\"staging\",\"to_tier\":\"rapid\",\"bytes\":70") +
       ev("shard_drained", 12.0,
          ",\"step\":3,\"from_tier\":\"staging\",\"to_tier\":\"rapid\",\"bytes\":30") +
       ev("drain_done", 13.0, ",\"step\":3,\"ok\":true") +  // names no tiers: the one drain
       ev("cleanup", 20.0, ",\"step\":3,\"path\":\"/ckpt/3\",\"bytes\":100") +
       ev("cleanup", 21.0, ",\"step\":99,\"path\":\"/ckpt/99\",\"bytes\":5"));
  const EventStep* s = cat.find("rapid", "llama", 3);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->drains.size(), 1u);
  const DrainProgress& d = s->drains.at("staging>rapid");
  EXPECT_EQ(d.bytes, 100u);
  EXPECT_EQ(d.shards, 2u);
  EXPECT_DOUBLE_EQ(d.start_ts, 10.0);
  EXPECT_DOUBLE_EQ(d.done_ts, 13.0);
  EXPECT_EQ(d.ok, true);
  EXPECT_EQ(s->cleanups, 1u);
  EXPECT_EQ(cat.find("rapid", "llama", 99), nullptr) << "a cleanup creates no checkpoint";
  const EventJob& j = cat.jobs.at({"rapid", "llama"});
  EXPECT_EQ(j.cleanups, 2u);
  EXPECT_EQ(j.cleanup_bytes, 105u);
}

TEST(EventCatalog, OldStepsAreFoldedIntoTheJobAndLateEventsForThemAreStale) {
  EventCatalog cat;
  Feed feed(cat, 3);
  // Steps 1..5; rank (step % 2) finishes last in each.
  for (int step = 1; step <= 5; ++step) {
    feed(shard(step, 0, 0, 10.0 + (step % 2 == 0 ? 5 : 0), 1) +
         shard(step, 1, 0, 10.0 + (step % 2 == 1 ? 5 : 0), 1));
  }
  EXPECT_EQ(cat.steps.size(), 3u);
  EXPECT_EQ(cat.find("rapid", "llama", 2), nullptr);
  EXPECT_NE(cat.find("rapid", "llama", 3), nullptr);
  const EventJob& j = cat.jobs.at({"rapid", "llama"});
  EXPECT_EQ(j.evicted_through, 2);
  // Folded: step 1 (rank 1), step 2 (rank 0). Kept: 3 (1), 4 (0), 5 (1).
  auto top = cat.slow_ranks("rapid", "llama", 5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0], (std::pair<std::int64_t, std::uint64_t>{1, 3}));
  EXPECT_EQ(top[1], (std::pair<std::int64_t, std::uint64_t>{0, 2}));
  EXPECT_EQ(cat.slow_ranks("rapid", "llama", 1).size(), 1u);
  feed(shard(2, 0, 0, 1, 1));
  EXPECT_EQ(cat.totals.stale_events, 1u);
  EXPECT_EQ(cat.find("rapid", "llama", 2), nullptr);
  // Touched steps include the removed ones, so the store deletes their rows.
  EXPECT_TRUE(feed.agg().touched_steps().contains(StepKey{"rapid", "llama", 1}));
}

TEST(EventCatalog, LinesAreCountedWhateverTheirStatus) {
  EventCatalog cat;
  Feed feed(cat);
  feed("{}\n\n[1]\n" + ev("brand_new", 1, "") + ev("checkpoint_start", 1, ",\"step\":1"));
  EXPECT_EQ(cat.totals.lines[static_cast<std::size_t>(LineStatus::kOk)], 1u);
  EXPECT_EQ(cat.totals.lines[static_cast<std::size_t>(LineStatus::kUnknownEvent)], 1u);
  EXPECT_EQ(cat.totals.lines[static_cast<std::size_t>(LineStatus::kBlank)], 1u);
  EXPECT_EQ(cat.totals.lines[static_cast<std::size_t>(LineStatus::kRejected)], 2u);
  EXPECT_EQ(cat.totals.errors[static_cast<std::size_t>(RejectReason::kMissingField)], 1u);
  EXPECT_EQ(cat.totals.errors[static_cast<std::size_t>(RejectReason::kNotAnObject)], 1u);
}

// What the aggregation built, stored and read back (store/event_codec.hpp):
// every field comes back, internal ones (unmatched pause halves, the
// observed flags, pending restore halves) included. The figures checked are
// the ones the lines above say, not the encoder's.
TEST(EventCatalog, StoredRowsRoundTripEverything) {
  EventCatalog cat;
  Feed feed(cat);
  feed(ev("checkpoint_start", 1000.0, ",\"step\":10") + shard(10, 4, 1000.0, 1010.0, 7) +
       ev("pause_start", 1000.0, ",\"step\":10,\"rank\":4") +
       ev("checkpoint_failed", 1011.0, ",\"step\":10,\"reason\":\"disk full\"") +
       ev("drain_start", 1012.0, ",\"step\":10,\"from_tier\":\"a\",\"to_tier\":\"b\"") +
       ev("restore_done", 1100.0, ",\"step\":10,\"bytes\":7,\"ok\":true") +
       ev("checkpoint_commit", 1020.0, ",\"step\":10,\"files\":1,\"bytes\":7"));
  const EventStep& s = *cat.find("rapid", "llama", 10);
  const std::string row = encode_event_row(s);
  const auto s2 = decode_event_step(row);
  ASSERT_TRUE(s2);
  EXPECT_EQ(encode_event_row(*s2), row);
  EXPECT_EQ(s2->start_ts, 1000.0);
  EXPECT_EQ(s2->commit_ts, 1020.0);
  EXPECT_TRUE(s2->committed);
  EXPECT_EQ(s2->commit_bytes, 7u);
  EXPECT_EQ(s2->shards, 1u);
  EXPECT_EQ(s2->last_rank, 4);
  EXPECT_EQ(s2->pause_starts.at(4), 1000.0);
  EXPECT_TRUE(s2->pause_ends.empty());
  EXPECT_TRUE(s2->failed);
  EXPECT_EQ(s2->failure_reason, "disk full");
  EXPECT_TRUE(s2->duration_observed);
  EXPECT_EQ(s2->drains.at("a>b").start_ts, 1012.0);
  EXPECT_FALSE(s2->drains.at("a>b").ok.has_value());
  const EventJob& j = cat.jobs.at({"rapid", "llama"});
  const auto j2 = decode_event_job(encode_event_row(j));
  ASSERT_TRUE(j2);
  EXPECT_EQ(j2->duration.bounds, duration_buckets());
  EXPECT_EQ(j2->duration.buckets, j.duration.buckets);
  EXPECT_EQ(j2->duration.count, 1u);
  EXPECT_EQ(j2->duration.sum, 20.0);
  EXPECT_EQ(j2->failures, 1u);
  EXPECT_EQ(j2->recent_failures.at(0).reason, "disk full");
  EXPECT_EQ(j2->recent_failures.at(0).step, 10);
  EXPECT_EQ(j2->evicted_through, -1);
  const EventRestores& r = cat.restores.at("llama");
  const auto r2 = decode_event_restores(encode_event_row(r));
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->restores, 1u);
  ASSERT_TRUE(r2->last);
  EXPECT_EQ(r2->last->tier, "rapid");
  EXPECT_EQ(r2->last->bytes, 7u);
  EXPECT_FALSE(r2->last->duration.has_value());  // no restore_start was read
  EXPECT_EQ(r2->pending_dones.size(), 1u);
  ASSERT_TRUE(r2->phases);
  EXPECT_EQ(r2->phases->step, 10);
  EXPECT_EQ(r2->phases->done, 1100.0);
  EXPECT_FALSE(r2->phases->start.has_value());
}

// A restores row from before the phases existed (no trailer) still reads,
// and re-encodes to itself; with phases, each mark comes back.
TEST(EventCatalog, RestoresRowsWithAndWithoutPhasesRoundTrip) {
  EventRestores r;
  r.restores = 3;
  r.last_ok_ts = 77;
  const std::string old_row = encode_event_row(r);
  const auto r1 = decode_event_restores(old_row);
  ASSERT_TRUE(r1);
  EXPECT_FALSE(r1->phases.has_value());
  EXPECT_EQ(r1->restores, 3u);

  RestorePhases p;
  p.step = 42;
  p.start = 1.5;
  p.read = 9.25;
  p.resumed = 12;
  p.ranks_read = 8;
  r.phases = p;
  const std::string row = encode_event_row(r);
  ASSERT_GT(row.size(), old_row.size());
  EXPECT_EQ(row.substr(0, old_row.size()), old_row);  // a trailer, nothing else moved
  const auto r2 = decode_event_restores(row);
  ASSERT_TRUE(r2);
  ASSERT_TRUE(r2->phases);
  EXPECT_EQ(*r2->phases, p);
  // Cut inside the trailer: refused, not half-read.
  EXPECT_FALSE(decode_event_restores(row.substr(0, row.size() - 1)).has_value());
  EXPECT_FALSE(decode_event_restores(old_row + '\x01').has_value());
}

// --- the merge with the scanner's catalog ------------------------------------------

Checkpoint scanned(std::int64_t step) {
  Checkpoint c;
  c.tier = "rapid";
  c.job = "llama";
  c.path = "llama/step-" + std::to_string(step);
  c.step = step;
  c.framework = "pytorch_dcp";
  c.state = CkptState::kCommitted;
  c.files = 3;
  c.bytes = 600;
  c.first_write = 1000.0 + static_cast<double>(step);  // mtimes: a coarse skew of 30 s
  c.last_write = c.first_write + 30;
  c.marker_time = c.last_write + 1;
  return c;
}

State state_with_events() {
  State st;
  auto cfg = std::make_shared<Config>();
  TierConfig t;
  t.name = "rapid";
  t.path = "/lustre";
  cfg->tiers.push_back(t);
  st.apply_config(cfg);
  TierCatalog& tc = st.catalogs["rapid"].edit();
  tc.scanned = true;
  tc.jobs = {"llama"};
  tc.checkpoints = {scanned(10), scanned(20)};
  auto cat = std::make_shared<EventCatalog>();
  Feed feed(*cat);
  feed(ev("checkpoint_start", 1995.0, ",\"step\":20") + shard(20, 0, 2000, 2010.0, 1) +
       shard(20, 1, 2000, 2012.5, 1) +
       ev("checkpoint_commit", 2013.0, ",\"step\":20,\"files\":3,\"bytes\":600"));
  st.events = cat;
  return st;
}

bool has_sample(const std::string& text, const std::string& sample) {
  return text.find(sample + "\n") != std::string::npos;
}

TEST(EventMerge, LatestCheckpointFiguresComeFromItsEventsWhenPresent) {
  State st = state_with_events();
  const std::string text = serialize(state_families(st));
  EXPECT_TRUE(has_sample(
      text,
      "ckpt_last_checkpoint_completion_skew_seconds{tier=\"rapid\",training_job=\"llama\"} 2.5"))
      << text;
  EXPECT_TRUE(has_sample(
      text, "ckpt_last_checkpoint_duration_seconds{tier=\"rapid\",training_job=\"llama\"} 18"));
  EXPECT_TRUE(has_sample(
      text, "ckpt_checkpoint_duration_seconds_count{tier=\"rapid\",training_job=\"llama\"} 1"));
  EXPECT_TRUE(has_sample(text,
                         "ckpt_checkpoint_duration_seconds_bucket{tier=\"rapid\",training_job="
                         "\"llama\",le=\"20\"} 1"));
  EXPECT_TRUE(has_sample(text,
                         "ckpt_checkpoint_duration_seconds_bucket{tier=\"rapid\",training_job="
                         "\"llama\",le=\"10\"} 0"));
  EXPECT_TRUE(has_sample(text, "ckptmon_manifest_lines_total{result=\"ok\"} 4"));
  EXPECT_TRUE(has_sample(text, "ckptmon_manifest_errors_total{reason=\"too_long\"} 0"));

  nlohmann::json with = checkpoint_json(scanned(20), &st);
  EXPECT_DOUBLE_EQ(with["completion_skew_seconds"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(with["save_duration_seconds"].get<double>(), 18.0);
  EXPECT_EQ(with["events"]["slowest_rank"], 1);
  EXPECT_EQ(with["restorable"], true);
  nlohmann::json without = checkpoint_json(scanned(10), &st);
  EXPECT_DOUBLE_EQ(without["completion_skew_seconds"].get<double>(), 30.0);
  EXPECT_FALSE(without.contains("events"));
}

TEST(EventMerge, RestorePhasesAreGaugesAndAnUnseenPhaseHasNoSeries) {
  State st = state_with_events();
  auto cat = std::make_shared<EventCatalog>(*st.events);
  Feed feed(*cat);
  feed(ev("restore_start", 3000.0, ",\"step\":20") +
       ev("restore_locate_done", 3002.25, ",\"step\":20") +
       ev("restore_read_done", 3010.0, ",\"step\":20,\"rank\":0"));
  st.events = cat;
  const std::string text = serialize(state_families(st));
  EXPECT_TRUE(has_sample(
      text, "ckpt_last_restore_phase_seconds{training_job=\"llama\",phase=\"locate\"} 2.25"))
      << text;
  EXPECT_TRUE(has_sample(
      text, "ckpt_last_restore_phase_seconds{training_job=\"llama\",phase=\"read\"} 7.75"));
  EXPECT_EQ(text.find("phase=\"reshard\""), std::string::npos);
  EXPECT_EQ(text.find("phase=\"resume\""), std::string::npos);
}

// Step 20's mtimes are 30 s apart, its shards' end times (events) 2.5 s
// (2012.5 - 2010.0): the rule used to judge the mtimes while the gauge and
// the API showed the events' skew. One definition now: the events' where they
// have the shards, the mtimes otherwise.
TEST(EventMerge, SkewAlertGaugeAndApiUseOneDefinition) {
  State st = state_with_events();
  RulesPolicy policy;
  policy.alerting.rules.completion_skew_high.max_skew_seconds = 10;
  policy.alerting.rules.completion_skew_high.clear_skew_seconds = 5;
  const auto& cps = st.catalogs.at("rapid")->checkpoints;
  auto skew_alert = [&](const RuleFigures& f) -> std::optional<AlertCondition> {
    for (const auto& c : alert_conditions(f, st.tiers, policy.alerting)) {
      if (c.labels.alertname == "CheckpointCompletionSkewHigh") return c;
    }
    return std::nullopt;
  };

  RuleFigures with =
      evaluate_rules(st.tiers, cps, RulesHistory{}, {}, policy, 3000, {}, st.events.get());
  ASSERT_EQ(with.job_tiers.size(), 1u);
  EXPECT_DOUBLE_EQ(with.job_tiers[0].last_completion_skew_seconds, 2.5);
  std::optional<AlertCondition> a = skew_alert(with);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->signal, Signal::kClear);  // 2.5 s is under 10 s
  EXPECT_DOUBLE_EQ(a->value, 2.5);
  EXPECT_TRUE(has_sample(
      serialize(state_families(st)),
      "ckpt_last_checkpoint_completion_skew_seconds{tier=\"rapid\",training_job=\"llama\"} 2.5"));
  EXPECT_DOUBLE_EQ(checkpoint_json(scanned(20), &st)["completion_skew_seconds"].get<double>(), 2.5);

  // No event log: the mtimes (30 s) for the rule and the gauge alike.
  st.events = nullptr;
  RuleFigures without =
      evaluate_rules(st.tiers, cps, RulesHistory{}, {}, policy, 3000, {}, st.events.get());
  ASSERT_EQ(without.job_tiers.size(), 1u);
  EXPECT_DOUBLE_EQ(without.job_tiers[0].last_completion_skew_seconds, 30.0);
  a = skew_alert(without);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->signal, Signal::kFire);
  EXPECT_TRUE(has_sample(
      serialize(state_families(st)),
      "ckpt_last_checkpoint_completion_skew_seconds{tier=\"rapid\",training_job=\"llama\"} 30"));
  EXPECT_DOUBLE_EQ(checkpoint_json(scanned(20), &st)["completion_skew_seconds"].get<double>(),
                   30.0);
}

// /api/v1/jobs lists a job the event log names before any checkpoint of it
// is on disk: with what the log knows, zero on disk once the tier was walked,
// unknown (null) before its first walk.
TEST(EventMerge, JobsKnownOnlyFromEventsAreListed) {
  Snapshot snap;
  snap.state = state_with_events();
  auto cat = std::make_shared<EventCatalog>(*snap.state.events);
  Feed feed(*cat);
  feed(ev("checkpoint_start", 2100.0, ",\"step\":5", "gpt") +
       ev("checkpoint_failed", 2140.0, ",\"step\":5,\"reason\":\"oom\"", "gpt") +
       ev("checkpoint_start", 2200.0, ",\"step\":6", "gpt"));
  snap.state.events = cat;

  nlohmann::json jobs = nlohmann::json::parse(render_jobs_json(snap));
  ASSERT_EQ(jobs.size(), 2u) << jobs.dump(2);
  const nlohmann::json& gpt = jobs[0];  // sorted by tier, then job
  EXPECT_EQ(gpt["tier"], "rapid");
  EXPECT_EQ(gpt["job"], "gpt");
  EXPECT_EQ(gpt["on_disk"], false);
  EXPECT_EQ(gpt["checkpoints"], 0);  // rapid was walked: none on disk
  EXPECT_EQ(gpt["committed"], 0);
  EXPECT_EQ(gpt["stored_bytes"], 0);
  EXPECT_TRUE(gpt["latest_committed_step"].is_null());
  EXPECT_EQ(gpt["events"]["steps"], 2);
  EXPECT_EQ(gpt["events"]["committed_steps"], 0);
  EXPECT_EQ(gpt["events"]["latest_step"], 6);
  EXPECT_DOUBLE_EQ(gpt["events"]["last_event_ts"].get<double>(), 2200.0);
  EXPECT_EQ(gpt["events"]["failures"], 1);

  const nlohmann::json& llama = jobs[1];  // on disk (steps 10, 20) and in the log (20)
  EXPECT_EQ(llama["job"], "llama");
  EXPECT_EQ(llama["on_disk"], true);
  EXPECT_EQ(llama["checkpoints"], 2);
  EXPECT_EQ(llama["latest_committed_step"], 20);
  EXPECT_EQ(llama["events"]["steps"], 1);
  EXPECT_EQ(llama["events"]["committed_steps"], 1);
  EXPECT_EQ(llama["events"]["latest_step"], 20);

  // Before the tier's first walk nothing is known about the disk.
  snap.state.catalogs.at("rapid").edit().scanned = false;
  snap.state.catalogs.at("rapid").edit().checkpoints.clear();
  snap.state.catalogs.at("rapid").edit().jobs.clear();
  jobs = nlohmann::json::parse(render_jobs_json(snap));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_TRUE(jobs[0]["checkpoints"].is_null());
  EXPECT_TRUE(jobs[0]["unreadable"].is_null());
  EXPECT_EQ(jobs[1]["job"], "llama");
  EXPECT_TRUE(jobs[1]["checkpoints"].is_null());
  EXPECT_EQ(jobs[1]["events"]["steps"], 1);
}

// The recovery point is the rules' (rules/recovery.hpp); what the verifier
// found reaches them through verifications_of().
std::int64_t recovery_step(const State& st) {
  const auto& cps = st.catalogs.at("rapid")->checkpoints;
  auto points = evaluate_recovery(cps, verifications_of(st, cps), {});
  return points.empty() || !points[0].restorable ? -1 : points[0].step;
}

TEST(EventMerge, ACheckpointThatFailedVerificationIsNotRestorable) {
  State st = state_with_events();
  EXPECT_EQ(recovery_step(st), 20);
  EXPECT_TRUE(verifications_of(st, st.catalogs.at("rapid")->checkpoints).empty());
  auto integ = std::make_shared<IntegrityStatus>();
  integ->steps[StepKey{"rapid", "llama", 20}][IntegrityResult::kOk] = 1;
  integ->steps[StepKey{"rapid", "llama", 20}][IntegrityResult::kMismatch] = 1;
  integ->steps[StepKey{"rapid", "llama", 10}][IntegrityResult::kOk] = 2;
  integ->totals["rapid"][IntegrityResult::kMismatch] = 1;
  integ->totals["rapid"][IntegrityResult::kOk] = 3;
  st.integrity = integ;
  EXPECT_EQ(recovery_step(st), 10);
  const auto v = verifications_of(st, st.catalogs.at("rapid")->checkpoints);
  EXPECT_EQ(v.at(CheckpointKey{"rapid", "llama/step-20"}), false);
  EXPECT_EQ(v.at(CheckpointKey{"rapid", "llama/step-10"}), true);
  const std::string text = serialize(state_families(st));
  EXPECT_TRUE(
      has_sample(text, "ckpt_integrity_checks_total{tier=\"rapid\",result=\"mismatch\"} 1"));
  EXPECT_TRUE(has_sample(text, "ckpt_integrity_checks_total{tier=\"rapid\",result=\"missing\"} 0"));
  EXPECT_EQ(checkpoint_json(scanned(20), &st)["restorable"], false);
  // An integrity.json result on the checkpoint's path counts the same way.
  auto integ2 = std::make_shared<IntegrityStatus>();
  integ2->checkpoints[{"rapid", "llama/step-10"}][IntegrityResult::kMissing] = 1;
  integ2->steps[StepKey{"rapid", "llama", 20}][IntegrityResult::kMismatch] = 1;
  st.integrity = integ2;
  EXPECT_EQ(recovery_step(st), -1);
}

// Verification results are per checkpoint (tier, path): checkpoints that share
// a job and a step (or have none) do not take each other's result.
Checkpoint committed_at(const std::string& path, std::int64_t step, double t) {
  Checkpoint c = scanned(10);
  c.path = path;
  c.step = step;
  c.first_write = t - 30;
  c.last_write = t;
  c.marker_time = t;
  return c;
}

TEST(EventMerge, AFailedUnsteppedCheckpointLeavesItsNeighboursRestorable) {
  const std::vector<Checkpoint> cps{committed_at("llama/ckpt-old", -1, 1000),
                                    committed_at("llama/ckpt-new", -1, 2000)};
  State st;
  auto integ = std::make_shared<IntegrityStatus>();
  integ->checkpoints[{"rapid", "llama/ckpt-new"}][IntegrityResult::kMismatch] = 1;
  st.integrity = integ;
  auto points = evaluate_recovery(cps, verifications_of(st, cps), {});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_TRUE(points[0].restorable);
  EXPECT_EQ(points[0].path, "llama/ckpt-old");
  EXPECT_FALSE(points[0].verified);

  // A passed one does not make its unverified neighbour "verified".
  auto integ2 = std::make_shared<IntegrityStatus>();
  integ2->checkpoints[{"rapid", "llama/ckpt-old"}][IntegrityResult::kOk] = 1;
  st.integrity = integ2;
  points = evaluate_recovery(cps, verifications_of(st, cps), {});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].path, "llama/ckpt-new");
  EXPECT_FALSE(points[0].verified);
}

TEST(EventMerge, OneStepOnTwoPathsIsVerifiedPerPath) {
  const std::vector<Checkpoint> cps{committed_at("llama/a/step-100", 100, 1000),
                                    committed_at("llama/b/step-100", 100, 1100)};
  State st;
  auto integ = std::make_shared<IntegrityStatus>();
  integ->checkpoints[{"rapid", "llama/a/step-100"}][IntegrityResult::kOk] = 1;
  integ->checkpoints[{"rapid", "llama/b/step-100"}][IntegrityResult::kMissing] = 1;
  st.integrity = integ;
  const auto v = verifications_of(st, cps);
  EXPECT_EQ(v.at(CheckpointKey{"rapid", "llama/a/step-100"}), true);
  EXPECT_EQ(v.at(CheckpointKey{"rapid", "llama/b/step-100"}), false);
  auto points = evaluate_recovery(cps, v, {});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_TRUE(points[0].restorable);
  EXPECT_EQ(points[0].step, 100);
  EXPECT_EQ(points[0].path, "llama/a/step-100");
  EXPECT_TRUE(points[0].verified);
}

TEST(EventMerge, DrainedBytesFromEventsReachTheRules) {
  State st = state_with_events();
  auto cat = std::make_shared<EventCatalog>(*st.events);
  cat->steps[StepKey{"staging", "llama", 20}].drains["staging>rapid"].bytes = 700;
  cat->steps[StepKey{"staging", "llama", 30}].drains["staging>rapid"].bytes = 300;
  cat->steps[StepKey{"staging", "bert", 5}].drains["staging>capacity"].bytes = 11;
  st.events = cat;
  const auto totals = drained_totals_of(st);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals.at(DrainKey{"staging", "rapid", "llama"}), 1000);
  EXPECT_EQ(totals.at(DrainKey{"staging", "capacity", "bert"}), 11);
}

}  // namespace
}  // namespace ckptmon
