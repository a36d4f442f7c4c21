#pragma once
// The event-log line parser: one JSON line -> an Event or a rejection with a
// stable reason, and a bulk form for catch-up that walks a chunk of a log
// holding many newline-terminated lines. Built on simdjson's DOM parser, which
// validates the whole line (so a malformed value in an ignored field is still
// caught) and never throws here; the bulk form hands batches of complete lines
// to parse_many and falls back to line-by-line parsing at the first surprise,
// so both give identical results. Schema: docs/events.md.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.hpp"

namespace ckptmon {

// Why a line was rejected. The labels are the values of the `reason` label of
// ckptmon_manifest_errors_total: never rename one, only add.
enum class RejectReason : std::uint8_t {
  kNone,
  kInvalidJson,     // not JSON (syntax, truncated, trailing garbage, control characters)
  kInvalidUtf8,     // bytes that are not UTF-8
  kNotAnObject,     // valid JSON whose top level is not an object
  kTooLong,         // longer than the line cap; skipped without parsing
  kTooDeep,         // nesting deeper than the depth cap
  kMissingField,    // a field the event type requires is absent or null
  kWrongType,       // a known field holds the wrong JSON type
  kBadValue,        // right type, impossible value (negative bytes, empty job, ...)
  kBadVersion,      // `v` is not 1
  kBadTimestamp,    // `ts` or `start_ts` is not unix seconds or RFC 3339
  kBadChecksum,     // `checksum` is not algo:hex with a known algorithm
  kDuplicateField,  // a known field appears twice, so its value is ambiguous
  // Refused when folded in (EventAggregator), not by the parser:
  kTooManyJobs,       // a new job on a tier that has global.max_jobs_per_tier already
  kUnconfiguredTier,  // the event names a tier the configuration does not have
};

inline constexpr std::array<RejectReason, 14> kAllRejectReasons = {
    RejectReason::kInvalidJson,  RejectReason::kInvalidUtf8,      RejectReason::kNotAnObject,
    RejectReason::kTooLong,      RejectReason::kTooDeep,          RejectReason::kMissingField,
    RejectReason::kWrongType,    RejectReason::kBadValue,         RejectReason::kBadVersion,
    RejectReason::kBadTimestamp, RejectReason::kBadChecksum,      RejectReason::kDuplicateField,
    RejectReason::kTooManyJobs,  RejectReason::kUnconfiguredTier,
};

// "invalid_json", "too_long", ...; "" for kNone.
std::string_view reject_reason_label(RejectReason reason);

enum class LineStatus : std::uint8_t {
  kOk,            // a known event, fully validated
  kUnknownEvent,  // a valid envelope (v, ts, event, job) with an unknown `event`
  kRejected,      // see reason and detail
  kBlank,         // empty or only spaces/tabs/CR: ignored, not an error
};

// "ok", "unknown_event", "rejected", "blank": values for ckptmon_manifest_lines_total{result}.
std::string_view line_status_label(LineStatus status);

// The outcome for one line. Reused between lines by the visitor API, so its
// strings keep their capacity. Not synchronised.
struct LineResult {
  std::uint64_t line = 0;    // 1-based line number in the file
  std::uint64_t offset = 0;  // file offset of the line's first byte
  std::uint64_t length = 0;  // bytes without the newline; for a too_long line still being
                             // skipped at the end of a chunk, the bytes seen so far
  LineStatus status = LineStatus::kBlank;
  RejectReason reason = RejectReason::kNone;
  std::string detail;  // for kRejected: what and which field, for humans
  Event event;         // kOk: every field read; kUnknownEvent: the envelope only;
                       // kRejected, kBlank: unspecified
};

struct EventParserOptions {
  std::size_t max_line_bytes =
      std::size_t{64} * 1024;  // longer lines are too_long (newline not counted)
  std::size_t max_depth = 32;  // deeper nesting is too_deep
  // Complete lines are handed to simdjson's parse_many in batches of about
  // this many bytes (one stage-1 pass per batch); 0 parses line by line.
  // Results are identical either way.
  std::size_t batch_bytes = std::size_t{64} * 1024;
};

// Where a bulk parse stands in one file. The tailer persists all three fields
// together with the offset: `skipping` is set while the rest of an over-long
// line (already reported) is being discarded.
struct ParseCursor {
  std::uint64_t offset = 0;  // file offset of the next unconsumed byte
  std::uint64_t line = 1;    // number of the line that starts (or continues) at offset
  bool skipping = false;

  bool operator==(const ParseCursor&) const = default;
};

// Everything one chunk produced, for callers that want values rather than a
// visitor. Reusing one ChunkResult for many chunks keeps its LineResults'
// buffers, which saves most allocations. Not synchronised.
class ChunkResult {
 public:
  std::size_t consumed = 0;  // bytes of the chunk that were consumed (always whole lines)
  std::span<const LineResult> lines() const { return {storage_.data(), count_}; }

 private:
  friend class EventParser;
  std::vector<LineResult> storage_;
  std::size_t count_ = 0;
};

// Parses event lines. Holds simdjson buffers sized for a line and a batch
// (a few MB), so reuse one instance for many lines. Not thread-safe: one per
// thread.
class EventParser {
 public:
  explicit EventParser(EventParserOptions options = {});
  ~EventParser();
  EventParser(const EventParser&) = delete;
  EventParser& operator=(const EventParser&) = delete;

  // Parses one line given without its newline. Fills out.status, reason,
  // detail, length and event; leaves out.line and out.offset alone.
  LineStatus parse_line(std::string_view line, LineResult& out);

  using Visitor = std::function<void(const LineResult&)>;

  // Parses the complete lines at the start of `chunk`, which holds the file's
  // bytes from cursor.offset on, calling `visit` once per line in order (the
  // LineResult is reused between calls). Returns how many bytes were consumed
  // and advances the cursor by as much. A final line without a newline is not
  // consumed unless it is already longer than the cap: then it is reported as
  // too_long once, consumed, and the cursor skips the rest of it in later calls.
  std::size_t parse_chunk(std::string_view chunk, ParseCursor& cursor, const Visitor& visit);

  // The same, collecting the results into `result` (replacing what it held).
  std::size_t parse_chunk(std::string_view chunk, ParseCursor& cursor, ChunkResult& result);
  ChunkResult parse_chunk(std::string_view chunk, ParseCursor& cursor);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses a timestamp: a JSON number of unix seconds is handled by the parser;
// this takes the RFC 3339 form, e.g. 2024-05-01T12:00:00.25Z or
// 2024-05-01T14:00:00+02:00 (a space instead of T, and lower-case t/z, are
// accepted as RFC 3339 allows). Returns unix seconds, or nullopt with `why`.
std::optional<double> parse_rfc3339(std::string_view text, std::string* why = nullptr);

}  // namespace ckptmon
