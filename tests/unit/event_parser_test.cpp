#include "events/parser.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "events/commands.hpp"
#include "events/writer.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

constexpr const char* kSha =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

LineResult parse(std::string_view line, EventParserOptions opts = {}) {
  EventParser p(opts);
  LineResult r;
  p.parse_line(line, r);
  return r;
}

std::string describe(const LineResult& r) {
  return std::string(line_status_label(r.status)) + " " +
         std::string(reject_reason_label(r.reason)) + ": " + r.detail;
}

// A valid line of each type with every field that type requires, and the
// Event it must produce (written out by hand, not by the code under test).
struct Sample {
  std::string line;
  Event event;
};

std::vector<Sample> samples() {
  std::vector<Sample> out;
  auto add = [&](std::string line, auto fill) {
    Event e;
    e.ts = 1714564800.5;
    e.job = "llama";
    fill(e);
    out.push_back({std::move(line), e});
  };
  const std::string head = R"({"v":1,"ts":1714564800.5,"job":"llama",)";
  add(head + R"("event":"checkpoint_start","step":100,"tier":"staging"})", [](Event& e) {
    e.type = EventType::kCheckpointStart;
    e.step = 100;
    e.tier = "staging";
  });
  add(head +
          R"("event":"shard_written","step":100,"rank":7,"path":"/ckpt/step-100/__7_0.distcp",)" +
          R"("bytes":1048576,"start_ts":1714564790.25,"checksum":")" + kSha + R"("})",
      [](Event& e) {
        e.type = EventType::kShardWritten;
        e.step = 100;
        e.rank = 7;
        e.path = "/ckpt/step-100/__7_0.distcp";
        e.bytes = 1048576;
        e.start_ts = 1714564790.25;
        e.checksum = {ChecksumAlgo::kSha256,
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"};
      });
  add(head + R"("event":"checkpoint_commit","step":100,"files":64,"bytes":68719476736})",
      [](Event& e) {
        e.type = EventType::kCheckpointCommit;
        e.step = 100;
        e.files = 64;
        e.bytes = 68719476736ull;
      });
  add(head + R"("event":"checkpoint_failed","step":100,"reason":"ENOSPC on rank 3"})",
      [](Event& e) {
        e.type = EventType::kCheckpointFailed;
        e.step = 100;
        e.reason = "ENOSPC on rank 3";
      });
  add(head + R"("event":"pause_start","step":100,"rank":0})", [](Event& e) {
    e.type = EventType::kPauseStart;
    e.step = 100;
    e.rank = 0;
  });
  add(head + R"("event":"pause_end","step":100})", [](Event& e) {
    e.type = EventType::kPauseEnd;
    e.step = 100;
  });
  add(head + R"("event":"drain_start","step":100,"from_tier":"staging","to_tier":"rapid"})",
      [](Event& e) {
        e.type = EventType::kDrainStart;
        e.step = 100;
        e.from_tier = "staging";
        e.to_tier = "rapid";
      });
  add(head + R"("event":"shard_drained","step":100,"from_tier":"staging","to_tier":"rapid",)" +
          R"("bytes":4096,"path":"/ckpt/step-100/__1_0.distcp"})",
      [](Event& e) {
        e.type = EventType::kShardDrained;
        e.step = 100;
        e.from_tier = "staging";
        e.to_tier = "rapid";
        e.bytes = 4096;
        e.path = "/ckpt/step-100/__1_0.distcp";
      });
  add(head + R"("event":"drain_done","step":100,"ok":true})", [](Event& e) {
    e.type = EventType::kDrainDone;
    e.step = 100;
    e.ok = true;
  });
  add(head + R"("event":"restore_start","step":100,"tier":"rapid"})", [](Event& e) {
    e.type = EventType::kRestoreStart;
    e.step = 100;
    e.tier = "rapid";
  });
  add(head + R"("event":"restore_done","step":100,"bytes":12,"ok":false})", [](Event& e) {
    e.type = EventType::kRestoreDone;
    e.step = 100;
    e.bytes = 12;
    e.ok = false;
  });
  add(head + R"("event":"restore_locate_done","step":100})", [](Event& e) {
    e.type = EventType::kRestoreLocateDone;
    e.step = 100;
  });
  add(head + R"("event":"restore_read_done","step":100,"rank":3,"bytes":7})", [](Event& e) {
    e.type = EventType::kRestoreReadDone;
    e.step = 100;
    e.rank = 3;
    e.bytes = 7;
  });
  add(head + R"("event":"restore_reshard_done","step":100})", [](Event& e) {
    e.type = EventType::kRestoreReshardDone;
    e.step = 100;
  });
  add(head + R"("event":"restore_resume","step":100,"tier":"rapid"})", [](Event& e) {
    e.type = EventType::kRestoreResume;
    e.step = 100;
    e.tier = "rapid";
  });
  add(head + R"("event":"cleanup","path":"/ckpt/step-50","bytes":999})", [](Event& e) {
    e.type = EventType::kCleanup;
    e.path = "/ckpt/step-50";
    e.bytes = 999;
  });
  return out;
}

TEST(EventParser, EveryEventTypeParses) {
  auto all = samples();
  std::set<EventType> covered;
  for (const auto& s : all) {
    LineResult r = parse(s.line);
    ASSERT_EQ(r.status, LineStatus::kOk) << s.line << " -> " << describe(r);
    EXPECT_EQ(r.event, s.event) << s.line;
    covered.insert(r.event.type);
  }
  EXPECT_EQ(covered.size(), kKnownEventTypes.size());
}

TEST(EventParser, NamesRoundTrip) {
  for (EventType t : kKnownEventTypes) {
    std::string name(event_type_name(t));
    EXPECT_EQ(event_type_from_name(name), t);
    // Near misses of the same length, at the first, middle and last byte.
    for (std::size_t i : {std::size_t{0}, name.size() / 2, name.size() - 1}) {
      std::string near = name;
      near[i] = near[i] == 'x' ? 'y' : 'x';
      EXPECT_EQ(event_type_from_name(near), EventType::kUnknown) << near;
    }
  }
  EXPECT_EQ(event_type_from_name("checkpoint_starts"), EventType::kUnknown);
  EXPECT_EQ(event_type_from_name("unknown"), EventType::kUnknown);
  EXPECT_EQ(event_type_from_name(""), EventType::kUnknown);
}

TEST(EventParser, FieldNamesAreMatchedExactly) {
  // Same length as known fields, one byte off: unknown, so ignored.
  LineResult r = parse(R"({"v":1,"ts":5,"event":"pause_end","job":"j","step":1,)"
                       R"("stap":"x","tiEr":3,"joc":1,"ts_":"x","ok ":1,"w":2,"from_tieR":5})");
  ASSERT_EQ(r.status, LineStatus::kOk) << describe(r);
  EXPECT_EQ(r.event.tier, "");
}

// The labels are a metric contract (ckptmon_manifest_errors_total{reason}).
TEST(EventParser, ReasonLabelsAreStable) {
  std::vector<std::string> labels;
  for (RejectReason r : kAllRejectReasons) labels.emplace_back(reject_reason_label(r));
  EXPECT_EQ(labels, (std::vector<std::string>{
                        "invalid_json", "invalid_utf8", "not_an_object", "too_long", "too_deep",
                        "missing_field", "wrong_type", "bad_value", "bad_version", "bad_timestamp",
                        "bad_checksum", "duplicate_field", "too_many_jobs", "unconfigured_tier"}));
  EXPECT_EQ(line_status_label(LineStatus::kOk), "ok");
  EXPECT_EQ(line_status_label(LineStatus::kUnknownEvent), "unknown_event");
  EXPECT_EQ(line_status_label(LineStatus::kRejected), "rejected");
  EXPECT_EQ(line_status_label(LineStatus::kBlank), "blank");
}

// Removes `"key":value,` (or `,"key":value`) from a flat sample line.
std::string without_field(const std::string& line, const std::string& key) {
  std::string needle = "\"" + key + "\":";
  std::size_t at = line.find(needle);
  if (at == std::string::npos) return line;
  std::size_t end = at + needle.size();
  if (line[end] == '"') {
    end = line.find('"', end + 1) + 1;
  } else {
    while (line[end] != ',' && line[end] != '}') ++end;
  }
  if (line[end] == ',') return line.substr(0, at) + line.substr(end + 1);
  return line.substr(0, at - 1) + line.substr(end);  // last field: drop the comma before it
}

TEST(EventParser, EveryRequiredFieldIsRequired) {
  // Required fields per type, from the schema in docs/events.md.
  const std::map<EventType, std::vector<std::string>> required = {
      {EventType::kCheckpointStart, {"step"}},
      {EventType::kShardWritten, {"step", "rank", "path", "bytes", "start_ts"}},
      {EventType::kCheckpointCommit, {"step", "files", "bytes"}},
      {EventType::kCheckpointFailed, {"step", "reason"}},
      {EventType::kPauseStart, {"step"}},
      {EventType::kPauseEnd, {"step"}},
      {EventType::kDrainStart, {"step"}},
      {EventType::kShardDrained, {"step", "from_tier", "to_tier", "bytes"}},
      {EventType::kDrainDone, {"step"}},
      {EventType::kRestoreStart, {"step"}},
      {EventType::kRestoreDone, {"step", "bytes", "ok"}},
      {EventType::kCleanup, {"path", "bytes"}},
      {EventType::kRestoreLocateDone, {"step"}},
      {EventType::kRestoreReadDone, {"step"}},
      {EventType::kRestoreReshardDone, {"step"}},
      {EventType::kRestoreResume, {"step"}},
  };
  for (const auto& s : samples()) {
    std::vector<std::string> fields = required.at(s.event.type);
    for (const char* envelope : {"v", "ts", "job", "event"}) fields.emplace_back(envelope);
    for (const auto& f : fields) {
      std::string line = without_field(s.line, f);
      ASSERT_NE(line, s.line) << f;
      LineResult r = parse(line);
      EXPECT_EQ(r.reason, RejectReason::kMissingField) << line << " -> " << describe(r);
      EXPECT_EQ(r.detail.rfind(f + ": ", 0), 0u) << r.detail;
      // null counts as absent
      std::string nulled = line;
      nulled.insert(1, "\"" + f + "\":null,");
      EXPECT_EQ(parse(nulled).reason, RejectReason::kMissingField) << nulled;
    }
  }
}

TEST(EventParser, OptionalNullIsAbsent) {
  LineResult r =
      parse(R"({"v":1,"ts":5,"event":"pause_start","job":"j","step":1,"rank":null,"tier":null})");
  ASSERT_EQ(r.status, LineStatus::kOk) << describe(r);
  EXPECT_FALSE(r.event.rank);
  EXPECT_EQ(r.event.tier, "");
}

TEST(EventParser, MalformedJson) {
  const char* lines[] = {
      "{",
      R"({"v":1,)",
      R"({"v":1}})",
      R"({"v":1} {"v":1})",
      R"({"v":1} x)",
      R"({'v':1})",
      R"({"v":01})",
      R"({v:1})",
      R"({"v":1,"ts":1,"event":"pause_end","job":"j","step":1,"x":[1,,2]})",  // in an ignored field
      R"({"v":1,"ts":1,"event":"pause_end","job":"j","step":1,"x":tru})",
      R"({"v":1,"ts":1,"event":"pause_end","job":"j","step":1,"x":"a)",
      "{\"v\":1,\"ts\":1,\"event\":\"pause_end\",\"job\":\"a\tb\",\"step\":1}",  // raw tab
      "nul",
  };
  for (const char* line : lines) {
    LineResult r = parse(line);
    EXPECT_EQ(r.status, LineStatus::kRejected) << line;
    EXPECT_EQ(r.reason, RejectReason::kInvalidJson) << line << " -> " << describe(r);
    EXPECT_FALSE(r.detail.empty());
  }
}

TEST(EventParser, NotAnObject) {
  for (const char* line : {"[1,2]", "\"event\"", "42", "null", "true"}) {
    LineResult r = parse(line);
    EXPECT_EQ(r.reason, RejectReason::kNotAnObject) << line << " -> " << describe(r);
  }
}

TEST(EventParser, WrongTypesAndBadValues) {
  const std::string h = R"({"v":1,"ts":5,"job":"j",)";
  struct Case {
    std::string line;
    RejectReason reason;
    std::string field;
  };
  const Case cases[] = {
      {R"({"v":"1","ts":5,"job":"j","event":"pause_end","step":1})", RejectReason::kWrongType, "v"},
      {R"({"v":1.0,"ts":5,"job":"j","event":"pause_end","step":1})", RejectReason::kWrongType, "v"},
      {R"({"v":2,"ts":5,"job":"j","event":"pause_end","step":1})", RejectReason::kBadVersion, "v"},
      {R"({"v":0,"ts":5,"job":"j","event":"pause_end","step":1})", RejectReason::kBadVersion, "v"},
      {R"({"v":1,"ts":5,"job":5,"event":"pause_end","step":1})", RejectReason::kWrongType, "job"},
      {R"({"v":1,"ts":5,"job":"","event":"pause_end","step":1})", RejectReason::kBadValue, "job"},
      {R"({"v":1,"ts":5,"job":"j","event":7,"step":1})", RejectReason::kWrongType, "event"},
      {R"({"v":1,"ts":true,"job":"j","event":"pause_end","step":1})", RejectReason::kWrongType,
       "ts"},
      {h + R"("event":"pause_end","step":"1"})", RejectReason::kWrongType, "step"},
      {h + R"("event":"pause_end","step":-1})", RejectReason::kBadValue, "step"},
      {h + R"("event":"pause_end","step":1.5})", RejectReason::kWrongType, "step"},
      {h + R"("event":"pause_end","step":18446744073709551615})", RejectReason::kBadValue, "step"},
      {h + R"("event":"pause_end","step":1,"rank":2147483648})", RejectReason::kBadValue, "rank"},
      {h + R"("event":"pause_end","step":1,"tier":["a"]})", RejectReason::kWrongType, "tier"},
      {h + R"("event":"cleanup","path":"/p","bytes":-1})", RejectReason::kBadValue, "bytes"},
      {h + R"("event":"cleanup","path":"/p","bytes":{}})", RejectReason::kWrongType, "bytes"},
      {h + R"("event":"cleanup","path":"","bytes":1})", RejectReason::kBadValue, "path"},
      {h + R"("event":"restore_done","step":1,"bytes":1,"ok":"true"})", RejectReason::kWrongType,
       "ok"},
      {h + R"("event":"restore_done","step":1,"bytes":1,"ok":1})", RejectReason::kWrongType, "ok"},
      {h + R"("event":"checkpoint_failed","step":1,"reason":false})", RejectReason::kWrongType,
       "reason"},
      {h + R"("event":"pause_end","step":1,"checksum":5})", RejectReason::kWrongType, "checksum"},
      {h + R"("event":"pause_end","step":1,"step":2})", RejectReason::kDuplicateField, "step"},
      {R"({"v":1,"ts":5,"job":"j","job":"k","event":"pause_end","step":1})",
       RejectReason::kDuplicateField, "job"},
  };
  for (const auto& c : cases) {
    LineResult r = parse(c.line);
    EXPECT_EQ(r.reason, c.reason) << c.line << " -> " << describe(r);
    EXPECT_EQ(r.detail.rfind(c.field + ": ", 0), 0u) << c.line << " -> " << r.detail;
  }
}

TEST(EventParser, IntegralNumbersWithExponentAreCounts) {
  LineResult r = parse(R"({"v":1,"ts":5,"job":"j","event":"cleanup","path":"/p","bytes":1e9})");
  ASSERT_EQ(r.status, LineStatus::kOk) << describe(r);
  EXPECT_EQ(r.event.bytes, 1000000000u);
}

TEST(EventParser, Checksums) {
  const std::string h = R"({"v":1,"ts":5,"job":"j","event":"cleanup","path":"/p","bytes":1,)";
  auto checksum_of = [&](const std::string& c) { return parse(h + "\"checksum\":\"" + c + "\"}"); };
  LineResult r = checksum_of("crc32c:DEADBEEF");
  ASSERT_EQ(r.status, LineStatus::kOk) << describe(r);
  EXPECT_EQ(r.event.checksum, (Checksum{ChecksumAlgo::kCrc32c, "deadbeef"}));
  EXPECT_EQ(r.event.checksum.to_string(), "crc32c:deadbeef");
  r = checksum_of("xxh64:0123456789abcdef");
  ASSERT_EQ(r.status, LineStatus::kOk) << describe(r);
  EXPECT_EQ(r.event.checksum.algo, ChecksumAlgo::kXxh64);
  EXPECT_EQ(checksum_of(kSha).event.checksum.algo, ChecksumAlgo::kSha256);
  for (const char* bad :
       {"md5:d41d8cd98f00b204e9800998ecf8427e", "crc32c:deadbee", "crc32c:deadbeef0",
        "xxh64:0123456789abcdeg", "deadbeef", "sha256:", ":",
        "SHA256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
    LineResult b = checksum_of(bad);
    EXPECT_EQ(b.reason, RejectReason::kBadChecksum) << bad << " -> " << describe(b);
    EXPECT_EQ(b.detail.rfind("checksum: ", 0), 0u) << b.detail;
  }
}

TEST(EventParser, Rfc3339Timestamps) {
  // Expected values from Python's datetime(...).timestamp().
  struct Case {
    const char* text;
    double want;
  };
  const Case ok[] = {
      {"2024-05-01T12:00:00Z", 1714564800.0},
      {"2024-05-01T12:00:00.25Z", 1714564800.25},
      {"2024-05-01T14:00:00+02:00", 1714564800.0},
      {"2024-05-01T14:00:00.5+02:00", 1714564800.5},
      {"2024-05-01t12:00:00z", 1714564800.0},
      {"2024-05-01 12:00:00Z", 1714564800.0},
      {"2024-02-29T23:59:59-05:30", 1709270999.0},
      {"2000-01-01T00:00:00Z", 946684800.0},
      {"1970-01-01T01:00:00+01:00", 0.0},
      {"2024-05-01T12:00:00.123456789Z", 1714564800.123456789},
  };
  for (const auto& c : ok) {
    auto t = parse_rfc3339(c.text);
    ASSERT_TRUE(t) << c.text;
    EXPECT_DOUBLE_EQ(*t, c.want) << c.text;
    LineResult r = parse(std::string(R"({"v":1,"job":"j","event":"pause_end","step":1,"ts":")") +
                         c.text + "\"}");
    ASSERT_EQ(r.status, LineStatus::kOk) << c.text << " -> " << describe(r);
    EXPECT_DOUBLE_EQ(r.event.ts, c.want);
  }
  for (const char* bad :
       {"2024-05-01", "2024-05-01T12:00:00", "2024-05-01T12:00Z", "2023-02-29T00:00:00Z",
        "2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z", "2024-05-01T24:00:00Z",
        "2024-05-01T12:60:00Z", "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00+2:00",
        "2024-05-01T12:00:00+24:00", "2024-05-01T12:00:00Zjunk", "1969-12-31T23:59:59Z", "",
        "yesterday", "5138-11-16T09:46:40Z", "7726-05-01T12:00:00.25+02:00"}) {
    std::string why;
    EXPECT_FALSE(parse_rfc3339(bad, &why)) << bad;
    EXPECT_FALSE(why.empty());
    LineResult r =
        parse(std::string(R"({"v":1,"job":"j","event":"pause_end","step":1,"ts":")") + bad + "\"}");
    EXPECT_EQ(r.reason, RejectReason::kBadTimestamp) << bad << " -> " << describe(r);
  }
}

// Found by fuzz/event_line_fuzz: an RFC 3339 time after year 5138 was
// accepted while the same instant in unix seconds was not, so the event could
// not be written back in the canonical (numeric) form.
TEST(EventParser, BothTimestampFormsHaveTheSameRange) {
  // 1e11 seconds is 5138-11-16T09:46:40Z (Python: datetime.fromtimestamp(1e11, timezone.utc)).
  auto ts_line = [](const std::string& ts) {
    return parse(R"({"v":1,"job":"j","event":"pause_end","step":1,"ts":)" + ts + "}");
  };
  EXPECT_EQ(ts_line("100000000000").reason, RejectReason::kBadTimestamp);
  EXPECT_EQ(ts_line("\"5138-11-16T09:46:40Z\"").reason, RejectReason::kBadTimestamp);
  EXPECT_EQ(ts_line("99999999999").status, LineStatus::kOk);
  EXPECT_EQ(ts_line("\"5138-11-16T09:46:39Z\"").status, LineStatus::kOk);
  LineResult r = ts_line("\"5138-11-16T09:46:39Z\"");
  EXPECT_DOUBLE_EQ(r.event.ts, 99999999999.0);
}

TEST(EventParser, NumericTimestamps) {
  auto ts_line = [](const std::string& ts) {
    return parse(R"({"v":1,"job":"j","event":"pause_end","step":1,"ts":)" + ts + "}");
  };
  EXPECT_DOUBLE_EQ(ts_line("1714564800.25").event.ts, 1714564800.25);
  EXPECT_DOUBLE_EQ(ts_line("1714564800").event.ts, 1714564800.0);
  EXPECT_EQ(ts_line("1714564800000").reason, RejectReason::kBadTimestamp);  // milliseconds
  EXPECT_EQ(ts_line("-1").reason, RejectReason::kBadTimestamp);
  LineResult r = parse(R"({"v":1,"job":"j","event":"shard_written","step":1,"ts":5,"rank":0,)"
                       R"("path":"/p","bytes":1,"start_ts":"soon"})");
  EXPECT_EQ(r.reason, RejectReason::kBadTimestamp);
  EXPECT_EQ(r.detail.rfind("start_ts: ", 0), 0u) << r.detail;
}

TEST(EventParser, UnknownFieldsAreIgnored) {
  for (const auto& s : samples()) {
    std::string line = s.line;
    line.insert(1, R"("host":"node-7","extra":{"a":[1,2,{"b":null}]},"Step":"x","pid":42,)");
    LineResult r = parse(line);
    ASSERT_EQ(r.status, LineStatus::kOk) << line << " -> " << describe(r);
    EXPECT_EQ(r.event, s.event);
  }
}

TEST(EventParser, UnknownEventTypesAreReportedNotRejected) {
  LineResult r =
      parse(R"({"v":1,"ts":5,"event":"model_loaded","job":"j","bytes":"lots","bytes":1,"x":1})");
  EXPECT_EQ(r.status, LineStatus::kUnknownEvent) << describe(r);
  EXPECT_EQ(r.reason, RejectReason::kNone);
  EXPECT_EQ(r.event.type, EventType::kUnknown);
  EXPECT_EQ(r.event.unknown_type, "model_loaded");
  EXPECT_EQ(r.event.job, "j");
  // The envelope is still required of unknown types.
  EXPECT_EQ(parse(R"({"v":1,"ts":5,"event":"model_loaded"})").reason, RejectReason::kMissingField);
  EXPECT_EQ(parse(R"({"v":3,"ts":5,"event":"model_loaded","job":"j"})").reason,
            RejectReason::kBadVersion);
}

TEST(EventParser, BlankLines) {
  for (const char* line : {"", " ", "\t", "\r", "  \t \r"}) {
    EXPECT_EQ(parse(line).status, LineStatus::kBlank) << "[" << line << "]";
  }
}

TEST(EventParser, CarriageReturnBeforeNewlineIsAccepted) {
  LineResult r = parse(R"({"v":1,"ts":5,"event":"pause_end","job":"j","step":1})"
                       "\r");
  EXPECT_EQ(r.status, LineStatus::kOk) << describe(r);
}

TEST(EventParser, BinaryGarbageIsRejectedNotFatal) {
  std::mt19937 rng(12345);
  EventParser p;
  LineResult r;
  for (int i = 0; i < 2000; ++i) {
    std::string line(rng() % 300, '\0');
    for (auto& c : line) c = static_cast<char>(rng() & 0xff);
    // Garbage that happens to be blank is not an error; anything else is.
    LineStatus s = p.parse_line(line, r);
    if (s != LineStatus::kBlank) {
      EXPECT_EQ(s, LineStatus::kRejected);
      EXPECT_NE(r.reason, RejectReason::kNone);
    }
  }
  EXPECT_EQ(parse(std::string_view("\x00\x01\x02", 3)).status, LineStatus::kRejected);
}

TEST(EventParser, InvalidUtf8) {
  LineResult r =
      parse("{\"v\":1,\"ts\":5,\"event\":\"pause_end\",\"job\":\"j\xff\xfe\",\"step\":1}");
  EXPECT_EQ(r.reason, RejectReason::kInvalidUtf8) << describe(r);
  // An overlong encoding of '/' and a lone continuation byte.
  EXPECT_EQ(parse("{\"x\":\"\xc0\xaf\"}").reason, RejectReason::kInvalidUtf8);
  EXPECT_EQ(parse("{\"x\":\"\x80\"}").reason, RejectReason::kInvalidUtf8);
  // Valid multi-byte UTF-8 is fine.
  LineResult ok =
      parse("{\"v\":1,\"ts\":5,\"event\":\"pause_end\",\"job\":\"llama-\xc3\xa9\",\"step\":1}");
  ASSERT_EQ(ok.status, LineStatus::kOk) << describe(ok);
  EXPECT_EQ(ok.event.job, "llama-\xc3\xa9");
}

TEST(EventParser, DeepNestingIsRejected) {
  const std::string h = R"({"v":1,"ts":5,"event":"pause_end","job":"j","step":1,"x":)";
  auto nested = [&](int depth) {
    return h + std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']') + "}";
  };
  EXPECT_EQ(parse(nested(2)).status, LineStatus::kOk);
  LineResult r = parse(nested(20000));  // 40 KB: under the length cap
  EXPECT_EQ(r.reason, RejectReason::kTooDeep) << describe(r);
  std::string objects = h;
  for (int i = 0; i < 5000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(5000, '}') + "}";
  EXPECT_EQ(parse(objects).reason, RejectReason::kTooDeep);
  // The depth cap is an option.
  EventParserOptions shallow;
  shallow.max_depth = 4;
  EXPECT_EQ(parse(nested(2), shallow).status, LineStatus::kOk);
  EXPECT_EQ(parse(nested(8), shallow).reason, RejectReason::kTooDeep);
}

TEST(EventParser, LinesOverTheCapAreTooLong) {
  EventParserOptions opts;
  opts.max_line_bytes = 100;
  std::string line = R"({"v":1,"ts":5,"event":"cleanup","job":"j","bytes":1,"path":")";
  line += std::string(100 - line.size() - 2, 'p') + "\"}";
  ASSERT_EQ(line.size(), 100u);
  EXPECT_EQ(parse(line, opts).status, LineStatus::kOk) << describe(parse(line, opts));
  std::string longer = line;
  longer.insert(longer.size() - 2, "p");
  LineResult r = parse(longer, opts);
  EXPECT_EQ(r.reason, RejectReason::kTooLong);
  EXPECT_EQ(r.length, 101u);
}

const std::string kGoodLine = R"({"v":1,"ts":5,"event":"pause_end","job":"j","step":1})";

TEST(EventParser, HundredMegabyteLineIsSkippedAsTooLong) {
  // Valid JSON if it were parsed, so only the cap can reject it.
  std::string big = R"({"v":1,"ts":5,"event":"cleanup","job":"j","bytes":1,"path":")";
  big.append(100u << 20, 'p');
  big += "\"}";
  EventParser p;
  LineResult r;
  EXPECT_EQ(p.parse_line(big, r), LineStatus::kRejected);
  EXPECT_EQ(r.reason, RejectReason::kTooLong);

  std::string buf = big + "\n" + kGoodLine + "\n";
  ParseCursor cursor;
  ChunkResult c = p.parse_chunk(buf, cursor);
  EXPECT_EQ(c.consumed, buf.size());
  ASSERT_EQ(c.lines().size(), 2u);
  EXPECT_EQ(c.lines()[0].reason, RejectReason::kTooLong);
  EXPECT_EQ(c.lines()[0].length, big.size());
  EXPECT_EQ(c.lines()[0].line, 1u);
  EXPECT_EQ(c.lines()[1].status, LineStatus::kOk);
  EXPECT_EQ(c.lines()[1].line, 2u);
  EXPECT_EQ(c.lines()[1].offset, big.size() + 1);
}

// What a tailer does: read fixed-size chunks, keep the unconsumed tail.
std::vector<LineResult> feed(EventParser& p, std::string_view file, std::size_t chunk,
                             ParseCursor& cursor, std::size_t* max_pending = nullptr) {
  std::vector<LineResult> out;
  std::string pending;
  for (std::size_t at = 0; at < file.size(); at += chunk) {
    pending.append(file.substr(at, chunk));
    if (max_pending) *max_pending = std::max(*max_pending, pending.size());
    std::size_t consumed =
        p.parse_chunk(pending, cursor, [&](const LineResult& r) { out.push_back(r); });
    pending.erase(0, consumed);
  }
  return out;
}

TEST(EventParser, OverlongLineAcrossChunksIsReportedOnceAndNotBuffered) {
  std::string file = kGoodLine + "\n" + std::string(10u << 20, 'x') + "\n" + kGoodLine + "\n";
  EventParser p;
  ParseCursor cursor;
  std::size_t max_pending = 0;
  auto lines = feed(p, file, 1 << 16, cursor, &max_pending);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].status, LineStatus::kOk);
  EXPECT_EQ(lines[1].reason, RejectReason::kTooLong);
  EXPECT_EQ(lines[1].line, 2u);
  EXPECT_EQ(lines[1].offset, kGoodLine.size() + 1);
  EXPECT_EQ(lines[2].status, LineStatus::kOk);
  EXPECT_EQ(lines[2].line, 3u);
  EXPECT_EQ(cursor, (ParseCursor{file.size(), 4, false}));
  // Never more than the cap plus one chunk held.
  EXPECT_LE(max_pending, (64u << 10) + (1u << 16) + 1);
}

TEST(EventParser, PartialLastLineIsNotConsumed) {
  std::string buf = kGoodLine + "\n\n{bad\n" + R"({"v":1,"ts":5,"event":"pau)";
  EventParser p;
  ParseCursor cursor{1000, 10, false};
  ChunkResult c = p.parse_chunk(buf, cursor);
  const std::size_t complete = kGoodLine.size() + 1 + 1 + 5;
  EXPECT_EQ(c.consumed, complete);
  ASSERT_EQ(c.lines().size(), 3u);
  EXPECT_EQ(c.lines()[0].status, LineStatus::kOk);
  EXPECT_EQ(c.lines()[0].line, 10u);
  EXPECT_EQ(c.lines()[0].offset, 1000u);
  EXPECT_EQ(c.lines()[1].status, LineStatus::kBlank);
  EXPECT_EQ(c.lines()[1].line, 11u);
  EXPECT_EQ(c.lines()[2].reason, RejectReason::kInvalidJson);
  EXPECT_EQ(c.lines()[2].line, 12u);
  EXPECT_EQ(c.lines()[2].offset, 1000u + kGoodLine.size() + 2);
  EXPECT_EQ(cursor, (ParseCursor{1000 + complete, 13, false}));
  // Nothing more happens until the newline arrives.
  std::string rest = buf.substr(c.consumed);
  EXPECT_EQ(p.parse_chunk(rest, cursor).consumed, 0u);
  rest += R"(se_end","job":"j","step":1})";
  EXPECT_EQ(p.parse_chunk(rest, cursor).consumed, 0u);
  rest += "\n";
  ChunkResult d = p.parse_chunk(rest, cursor);
  EXPECT_EQ(d.consumed, rest.size());
  ASSERT_EQ(d.lines().size(), 1u);
  EXPECT_EQ(d.lines()[0].status, LineStatus::kOk);
  EXPECT_EQ(d.lines()[0].line, 13u);
  EXPECT_EQ(d.lines()[0].offset, 1000u + complete);
}

TEST(EventParser, ErrorLineNumbersAndOffsetsAreExact) {
  auto all = samples();
  std::string buf;
  std::map<std::uint64_t, std::uint64_t> bad_offsets;  // line -> offset, built independently
  std::uint64_t n_lines = 0;
  for (int i = 0; i < 1000; ++i) {
    ++n_lines;
    if (i % 7 == 3) {
      bad_offsets[n_lines] = buf.size();
      buf += "{\"v\":1,\"oops\"\n";
    } else if (i % 11 == 5) {
      bad_offsets[n_lines] = buf.size();
      buf += R"({"v":1,"ts":5,"event":"cleanup","job":"j","bytes":-3,"path":"/p"})"
             "\n";
    } else {
      buf += all[static_cast<std::size_t>(i) % all.size()].line + "\n";
    }
  }
  for (std::size_t chunk : {buf.size(), std::size_t{4096}, std::size_t{97}}) {
    EventParser p;
    ParseCursor cursor;
    auto lines = feed(p, buf, chunk, cursor);
    ASSERT_EQ(lines.size(), n_lines) << chunk;
    std::map<std::uint64_t, std::uint64_t> got;
    for (const auto& r : lines) {
      if (r.status == LineStatus::kRejected)
        got[r.line] = r.offset;
      else
        EXPECT_EQ(r.status, LineStatus::kOk) << r.line << ": " << describe(r);
    }
    EXPECT_EQ(got, bad_offsets) << chunk;
    EXPECT_EQ(cursor, (ParseCursor{buf.size(), n_lines + 1, false}));
  }
}

TEST(EventParser, ChunkBoundariesDoNotChangeResults) {
  std::string buf;
  for (const auto& s : samples()) buf += s.line + "\n";
  buf += "garbage\n\n" + std::string(200, '{') + "\n";
  EventParserOptions opts;
  opts.max_line_bytes = 150;  // some samples are over this
  EventParser whole_parser(opts);
  ParseCursor whole_cursor;
  ChunkResult whole = whole_parser.parse_chunk(buf, whole_cursor);
  ASSERT_EQ(whole.consumed, buf.size());
  for (std::size_t chunk = 1; chunk < 300; chunk += 13) {
    EventParser p(opts);
    ParseCursor cursor;
    auto lines = feed(p, buf, chunk, cursor);
    ASSERT_EQ(lines.size(), whole.lines().size()) << chunk;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].line, whole.lines()[i].line);
      EXPECT_EQ(lines[i].offset, whole.lines()[i].offset);
      EXPECT_EQ(lines[i].status, whole.lines()[i].status);
      EXPECT_EQ(lines[i].reason, whole.lines()[i].reason);
      EXPECT_EQ(lines[i].event, whole.lines()[i].event);
    }
    EXPECT_EQ(cursor, whole_cursor);
  }
}

// Batched parsing (parse_many over many lines) must say exactly what
// line-by-line parsing says, whatever the lines hold.
TEST(EventParser, BatchedAndLineByLineAgree) {
  std::vector<std::string> pool;
  for (const auto& s : samples()) pool.push_back(s.line);
  const std::string g = kGoodLine;
  for (std::string odd : std::initializer_list<std::string>{
           "",
           "   ",
           "\r",
           "  " + g,
           g + "   ",
           g + "\r",
           "\t" + g + " \t",
           g + " " + g,
           g + "}",
           g + " x",
           g + ",",
           g + " 1",
           "1 " + g,
           "[]",
           "\"s\"",
           "17",
           "nul",
           "{\"v\":1,\"oops\"",
           "{\"a\":\"unterminated",
           "{\"a\":\"x\"}\"",
           "{\"a\":\"\x01\"}",
           "{\"a\":\"\xff\"}",
           std::string(50, '[') + std::string(50, ']'),
           "{\"a\":" + std::string(40, '{') + std::string(40, '}') + "}",
           "}{",
           "{}",
           "{} {}",
           R"({"v":1,"ts":5,"event":"pause_end","job":"j","step":1,"step":1})",
           R"({"v":1,"ts":5,"event":"x_y","job":"j"})"}) {
    pool.push_back(odd);
  }
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string buf;
    int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) buf += pool[rng() % pool.size()] + "\n";
    if (rng() % 2) buf += pool[rng() % pool.size()];  // maybe a partial last line
    std::vector<std::vector<LineResult>> results;
    std::vector<std::size_t> consumed;
    for (std::size_t batch :
         {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{65536}}) {
      EventParserOptions opts;
      opts.batch_bytes = batch;
      opts.max_line_bytes = 200;
      EventParser p(opts);
      ParseCursor cursor;
      ChunkResult c = p.parse_chunk(buf, cursor);
      results.emplace_back(c.lines().begin(), c.lines().end());
      consumed.push_back(c.consumed);
    }
    for (std::size_t k = 1; k < results.size(); ++k) {
      ASSERT_EQ(consumed[k], consumed[0]);
      ASSERT_EQ(results[k].size(), results[0].size()) << buf;
      for (std::size_t i = 0; i < results[0].size(); ++i) {
        const LineResult& a = results[0][i];
        const LineResult& b = results[k][i];
        EXPECT_EQ(a.line, b.line);
        EXPECT_EQ(a.offset, b.offset);
        EXPECT_EQ(a.length, b.length);
        EXPECT_EQ(a.status, b.status) << buf.substr(a.offset, a.length);
        EXPECT_EQ(a.reason, b.reason) << buf.substr(a.offset, a.length);
        EXPECT_EQ(a.detail, b.detail);
        EXPECT_EQ(a.event, b.event);
      }
    }
  }
}

TEST(EventWriter, FormatParsesBackToTheSameEvent) {
  EventParser p;
  for (const auto& s : samples()) {
    std::string line = format_event_line(s.event);
    ASSERT_EQ(line.back(), '\n');
    ASSERT_EQ(line.find('\n'), line.size() - 1);
    LineResult r;
    ASSERT_EQ(p.parse_line(std::string_view(line).substr(0, line.size() - 1), r), LineStatus::kOk)
        << line << describe(r);
    EXPECT_EQ(r.event, s.event) << line;
  }
  Event e = samples()[1].event;
  e.path = "/odd \"name\"\n\x01/é";
  e.ts = 1714564800.123456;
  std::string line = format_event_line(e);
  LineResult r;
  ASSERT_EQ(p.parse_line(std::string_view(line).substr(0, line.size() - 1), r), LineStatus::kOk);
  EXPECT_EQ(r.event, e);
}

using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;  // not istreambuf_iterator: g++ 12 -Wnull-dereference
  text << in.rdbuf();
  return text.str();
}

TEST(EventWriter, AppendLineAppendsAndRefusesFifos) {
  TempDir dir;
  std::string log = dir.file("events.jsonl");
  std::string error;
  ASSERT_TRUE(append_line(log, "a\n", &error)) << error;
  ASSERT_TRUE(append_line(log, "b\n", &error)) << error;
  EXPECT_EQ(slurp(log), "a\nb\n");
  std::string fifo = dir.file("fifo.jsonl");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(append_line(fifo, "a\n", &error));  // no reader: must not block
  EXPECT_NE(error.find(fifo), std::string::npos) << error;
  EXPECT_FALSE(append_line(dir.file("no/such/dir.jsonl"), "a\n", &error));
}

TEST(EventCommands, CheckReportsFileLineReasonAndSummary) {
  TempDir dir;
  std::string log = dir.file("e.jsonl");
  {
    std::ofstream f(log, std::ios::binary);
    f << kGoodLine << "\n{\"v\":1}\n\n"
      << R"({"v":1,"ts":5,"event":"new_thing","job":"j"})"
      << "\n[]\n"
      << kGoodLine.substr(0, 9);
  }
  std::ostringstream out, err;
  EXPECT_EQ(check_event_logs({log}, out, err), 1);
  EXPECT_EQ(out.str(), log +
                           ": 5 lines, 1 ok, 1 unknown event type, 1 blank, 2 rejected "
                           "(not_an_object 1, missing_field 1)\n");
  EXPECT_EQ(err.str(),
            log + ":2: missing_field: event: required by every event (absent or null)\n" + log +
                ":5: not_an_object: the line is an array, not a JSON object\n" + log +
                ":6: warning: no newline at end of file; the last line is "
                "incomplete (a writer may still be appending it) and was not "
                "checked\n");
  std::string clean = dir.file("clean.jsonl");
  std::ofstream(clean) << kGoodLine << "\n";
  std::ostringstream out2, err2;
  EXPECT_EQ(check_event_logs({clean}, out2, err2), 0);
  EXPECT_EQ(err2.str(), "");
  std::ostringstream out3, err3;
  EXPECT_EQ(check_event_logs({dir.file("missing.jsonl")}, out3, err3), 1);
  EXPECT_NE(err3.str().find("cannot open"), std::string::npos);
}

TEST(EventCommands, EmitAppendsOneValidatedLine) {
  TempDir dir;
  std::string log = dir.file("e.jsonl");
  FakeClock clock(1714564800.5);
  EmitArgs a;
  a.log = log;
  a.event = "shard_written";
  a.job = "llama";
  a.step = "100";
  a.rank = "7";
  a.path = "/ckpt/step-100/__7_0.distcp";
  a.bytes = "1048576";
  a.start_ts = "2024-05-01T11:59:50.25Z";
  a.checksum = "SHA256:x";  // algorithm names are lower case
  std::ostringstream err;
  EXPECT_EQ(emit_event(a, clock, err), 2);
  EXPECT_NE(err.str().find("--checksum"), std::string::npos) << err.str();
  a.checksum = kSha;
  err.str("");
  ASSERT_EQ(emit_event(a, clock, err), 0) << err.str();
  EXPECT_EQ(slurp(log),
            std::string(R"({"v":1,"ts":1714564800.5,"event":"shard_written",)") +
                R"("job":"llama","step":100,"rank":7,"path":"/ckpt/step-100/__7_0.distcp",)" +
                R"("bytes":1048576,"start_ts":1714564790.25,"checksum":")" + kSha + "\"}\n");
  // A missing required field is refused and nothing is written.
  EmitArgs b;
  b.log = log;
  b.event = "checkpoint_commit";
  b.job = "llama";
  b.step = "100";
  b.files = "3";
  err.str("");
  EXPECT_EQ(emit_event(b, clock, err), 2);
  EXPECT_NE(err.str().find("missing_field: bytes"), std::string::npos) << err.str();
  b.event = "checkpoint_comit";
  EXPECT_EQ(emit_event(b, clock, err), 2);
  b.event = "checkpoint_commit";
  b.bytes = "-5";
  EXPECT_EQ(emit_event(b, clock, err), 2);
  b.bytes = "5";
  b.ok = "yes";
  EXPECT_EQ(emit_event(b, clock, err), 2);
  b.ok = "true";
  b.ts = "2024-05-01T12:00:00Z";
  ASSERT_EQ(emit_event(b, clock, err), 0) << err.str();
  std::string content = slurp(log);
  EXPECT_EQ(std::count(content.begin(), content.end(), '\n'), 2);
  EXPECT_NE(content.find(R"({"v":1,"ts":1714564800,"event":"checkpoint_commit","job":"llama",)"
                         R"("step":100,"bytes":5,"files":3,"ok":true})"
                         "\n"),
            std::string::npos)
      << content;
}

}  // namespace
}  // namespace ckptmon
