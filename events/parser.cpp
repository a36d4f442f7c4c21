#include "events/parser.hpp"

#include <cmath>
#include <cstring>

#include <simdjson.h>

#include "util/text.hpp"

namespace ckptmon {
namespace {

// Fields this schema knows. A bit per field in the masks below.
enum Field : std::uint8_t {
  kV,
  kTs,
  kEvent,
  kJob,
  kStep,
  kTier,
  kRank,
  kPath,
  kBytes,
  kStartTs,
  kChecksum,
  kFiles,
  kReason,
  kFromTier,
  kToTier,
  kOk,
  kFieldCount,
  kOther = 0xff,
};

constexpr std::array<std::string_view, kFieldCount> kFieldNames = {
    "v",     "ts",       "event",    "job",   "step",   "tier",      "rank",    "path",
    "bytes", "start_ts", "checksum", "files", "reason", "from_tier", "to_tier", "ok",
};

using FieldMask = std::uint32_t;
constexpr FieldMask bit(Field f) { return FieldMask{1} << f; }

constexpr FieldMask kEnvelope = bit(kV) | bit(kTs) | bit(kEvent) | bit(kJob);

// Fields each type requires besides the envelope, indexed by EventType.
constexpr std::array<FieldMask, 17> kRequired = {
    0,                                                                   // unknown
    bit(kStep),                                                          // checkpoint_start
    bit(kStep) | bit(kRank) | bit(kPath) | bit(kBytes) | bit(kStartTs),  // shard_written
    bit(kStep) | bit(kFiles) | bit(kBytes),                              // checkpoint_commit
    bit(kStep) | bit(kReason),                                           // checkpoint_failed
    bit(kStep),                                                          // pause_start
    bit(kStep),                                                          // pause_end
    bit(kStep),                                                          // drain_start
    bit(kStep) | bit(kFromTier) | bit(kToTier) | bit(kBytes),            // shard_drained
    bit(kStep),                                                          // drain_done
    bit(kStep),                                                          // restore_start
    bit(kStep) | bit(kBytes) | bit(kOk),                                 // restore_done
    bit(kPath) | bit(kBytes),                                            // cleanup
    bit(kStep),                                                          // restore_locate_done
    bit(kStep),                                                          // restore_read_done
    bit(kStep),                                                          // restore_reshard_done
    bit(kStep),                                                          // restore_resume
};

// Compares with constant-size memcmp calls, which compilers turn into one or
// two integer comparisons: this runs for every key of every line.
Field field_id(std::string_view k) {
  const char* p = k.data();
  auto is = [p]<std::size_t N>(const char(&name)[N]) { return std::memcmp(p, name, N - 1) == 0; };
  switch (k.size()) {
    case 1:
      return p[0] == 'v' ? kV : kOther;
    case 2:
      return is("ts") ? kTs : is("ok") ? kOk : kOther;
    case 3:
      return is("job") ? kJob : kOther;
    case 4:
      return is("step")   ? kStep
             : is("tier") ? kTier
             : is("rank") ? kRank
             : is("path") ? kPath
                          : kOther;
    case 5:
      return is("event") ? kEvent : is("bytes") ? kBytes : is("files") ? kFiles : kOther;
    case 6:
      return is("reason") ? kReason : kOther;
    case 7:
      return is("to_tier") ? kToTier : kOther;
    case 8:
      return is("start_ts") ? kStartTs : is("checksum") ? kChecksum : kOther;
    case 9:
      return is("from_tier") ? kFromTier : kOther;
    default:
      return kOther;
  }
}

// Unix seconds at or beyond this are almost certainly milliseconds (it is year 5138).
constexpr double kMaxUnixSeconds = 1e11;
// The largest double below which every integer is exact.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53
constexpr std::uint64_t kMaxRank = 0x7fffffff;

std::string_view json_type_name(simdjson::dom::element_type t) {
  using T = simdjson::dom::element_type;
  switch (t) {
    case T::ARRAY:
      return "an array";
    case T::OBJECT:
      return "an object";
    case T::INT64:
    case T::UINT64:
      return "an integer";
    case T::DOUBLE:
      return "a number";
    case T::STRING:
      return "a string";
    case T::BOOL:
      return "a boolean";
    case T::NULL_VALUE:
      return "null";
  }
  return "something else";
}

bool is_blank(std::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

void reset(Event& e) {
  e.type = EventType::kUnknown;
  e.unknown_type.clear();
  e.ts = 0;
  e.job.clear();
  e.step.reset();
  e.tier.clear();
  e.rank.reset();
  e.path.clear();
  e.bytes.reset();
  e.start_ts.reset();
  e.checksum.algo = ChecksumAlgo::kNone;
  e.checksum.hex.clear();
  e.files.reset();
  e.reason.clear();
  e.from_tier.clear();
  e.to_tier.clear();
  e.ok.reset();
}

// Validates the fields of one parsed object into an Event. Holds references
// to the line's result; lives for one line.
class LineDecoder {
 public:
  explicit LineDecoder(LineResult& out) : out_(out) {}

  LineStatus decode(simdjson::dom::object obj) {
    FieldMask seen = 0;
    FieldMask duplicated = 0;
    for (auto member : obj) {
      Field f = field_id(member.key);
      if (f == kOther) continue;
      if (seen & bit(f)) duplicated |= bit(f);
      seen |= bit(f);
      if (member.value.is_null()) continue;  // null means absent
      present_ |= bit(f);
      values_[f] = member.value;
    }
    // Fixed order, so the reported error does not depend on the writer's key order.
    if (duplicated & kEnvelope) return duplicate(duplicated & kEnvelope);
    if (!(present_ & bit(kV))) return missing(kV, "every event");
    if (!check_version()) return LineStatus::kRejected;
    if (!(present_ & bit(kEvent))) return missing(kEvent, "every event");
    std::string_view name;
    if (!get_string(kEvent, name)) return LineStatus::kRejected;
    Event& e = out_.event;
    e.type = event_type_from_name(name);
    if (!(present_ & bit(kTs))) return missing(kTs, "every event");
    if (!get_timestamp(kTs, e.ts)) return LineStatus::kRejected;
    if (!(present_ & bit(kJob))) return missing(kJob, "every event");
    if (!get_name(kJob, e.job)) return LineStatus::kRejected;
    if (e.type == EventType::kUnknown) {
      // Only the envelope is ours to judge: a newer writer may define its fields.
      e.unknown_type.assign(name);
      return LineStatus::kUnknownEvent;
    }
    if (duplicated) return duplicate(duplicated);
    FieldMask required = kRequired[static_cast<std::size_t>(e.type)];
    if (FieldMask absent = required & ~present_) {
      for (std::uint8_t f = 0; f < kFieldCount; ++f) {
        if (absent & bit(static_cast<Field>(f))) {
          return missing(static_cast<Field>(f), event_type_name(e.type));
        }
      }
    }
    if (has(kStep) && !get_int(kStep, e.step, static_cast<std::uint64_t>(INT64_MAX))) {
      return LineStatus::kRejected;
    }
    if (has(kTier) && !get_name(kTier, e.tier)) return LineStatus::kRejected;
    if (has(kRank) && !get_int(kRank, e.rank, kMaxRank)) return LineStatus::kRejected;
    if (has(kPath) && !get_name(kPath, e.path)) return LineStatus::kRejected;
    if (has(kBytes) && !get_uint(kBytes, e.bytes)) return LineStatus::kRejected;
    if (has(kStartTs)) {
      double t = 0;
      if (!get_timestamp(kStartTs, t)) return LineStatus::kRejected;
      e.start_ts = t;
    }
    if (has(kChecksum) && !get_checksum()) return LineStatus::kRejected;
    if (has(kFiles) && !get_uint(kFiles, e.files)) return LineStatus::kRejected;
    if (has(kReason)) {
      std::string_view s;
      if (!get_string(kReason, s)) return LineStatus::kRejected;
      e.reason.assign(s);
    }
    if (has(kFromTier) && !get_name(kFromTier, e.from_tier)) return LineStatus::kRejected;
    if (has(kToTier) && !get_name(kToTier, e.to_tier)) return LineStatus::kRejected;
    if (has(kOk)) {
      bool b = false;
      if (values_[kOk].get(b) != simdjson::SUCCESS) {
        wrong_type(kOk, "a boolean");
        return LineStatus::kRejected;
      }
      e.ok = b;
    }
    return LineStatus::kOk;
  }

 private:
  bool has(Field f) const { return (present_ & bit(f)) != 0; }

  LineStatus reject(RejectReason reason, Field f, std::string_view what) {
    out_.reason = reason;
    out_.detail.assign(kFieldNames[f]);
    out_.detail += ": ";
    out_.detail += what;
    return LineStatus::kRejected;
  }
  LineStatus missing(Field f, std::string_view who) {
    return reject(RejectReason::kMissingField, f,
                  "required by " + std::string(who) + " (absent or null)");
  }
  LineStatus duplicate(FieldMask fields) {
    for (std::uint8_t f = 0; f < kFieldCount; ++f) {
      if (fields & bit(static_cast<Field>(f))) {
        return reject(RejectReason::kDuplicateField, static_cast<Field>(f),
                      "appears more than once");
      }
    }
    return LineStatus::kRejected;
  }
  bool wrong_type(Field f, std::string_view expected) {
    reject(RejectReason::kWrongType, f,
           "expected " + std::string(expected) + ", got " +
               std::string(json_type_name(values_[f].type())));
    return false;
  }
  bool bad(RejectReason reason, Field f, const std::string& what) {
    reject(reason, f, what);
    return false;
  }

  bool check_version() {
    std::int64_t v = 0;
    auto t = values_[kV].type();
    if (t != simdjson::dom::element_type::INT64 && t != simdjson::dom::element_type::UINT64) {
      return wrong_type(kV, "the integer 1");
    }
    if (values_[kV].get(v) != simdjson::SUCCESS || v != kEventSchemaVersion) {
      return bad(RejectReason::kBadVersion, kV,
                 "schema version " + simdjson::to_string(values_[kV]) +
                     " is not supported (this build reads 1)");
    }
    return true;
  }

  bool get_string(Field f, std::string_view& s) {
    if (values_[f].get(s) != simdjson::SUCCESS) return wrong_type(f, "a string");
    return true;
  }

  // Names (job, tier, path): non-empty strings.
  bool get_name(Field f, std::string& out) {
    std::string_view s;
    if (!get_string(f, s)) return false;
    if (s.empty()) return bad(RejectReason::kBadValue, f, "must not be empty");
    out.assign(s);
    return true;
  }

  // A non-negative integer no larger than `max`. An integral JSON number
  // written with a fraction or exponent (1e9) is accepted while exact.
  bool get_count(Field f, std::uint64_t max, std::uint64_t& out) {
    simdjson::dom::element v = values_[f];
    switch (v.type()) {
      case simdjson::dom::element_type::INT64: {
        std::int64_t i = v.get_int64().value_unsafe();
        if (i < 0) return bad(RejectReason::kBadValue, f, "must not be negative");
        out = static_cast<std::uint64_t>(i);
        break;
      }
      case simdjson::dom::element_type::UINT64:
        out = v.get_uint64().value_unsafe();
        break;
      case simdjson::dom::element_type::DOUBLE: {
        double d = v.get_double().value_unsafe();
        if (d < 0) return bad(RejectReason::kBadValue, f, "must not be negative");
        if (d != std::floor(d) || d > kMaxExactInteger) {
          return wrong_type(f, "a non-negative integer");
        }
        out = static_cast<std::uint64_t>(d);
        break;
      }
      default:
        return wrong_type(f, "a non-negative integer");
    }
    if (out > max) {
      return bad(RejectReason::kBadValue, f, "too large (at most " + std::to_string(max) + ")");
    }
    return true;
  }
  bool get_uint(Field f, std::optional<std::uint64_t>& out) {
    std::uint64_t u = 0;
    if (!get_count(f, UINT64_MAX, u)) return false;
    out = u;
    return true;
  }
  bool get_int(Field f, std::optional<std::int64_t>& out, std::uint64_t max) {
    std::uint64_t u = 0;
    if (!get_count(f, max, u)) return false;
    out = static_cast<std::int64_t>(u);
    return true;
  }

  bool get_timestamp(Field f, double& out) {
    simdjson::dom::element v = values_[f];
    switch (v.type()) {
      case simdjson::dom::element_type::INT64:
      case simdjson::dom::element_type::UINT64:
      case simdjson::dom::element_type::DOUBLE: {
        double d = 0;
        if (v.get(d) != simdjson::SUCCESS || !std::isfinite(d) || d < 0) {
          return bad(RejectReason::kBadTimestamp, f, "unix seconds must not be negative");
        }
        if (d >= kMaxUnixSeconds) {
          return bad(RejectReason::kBadTimestamp, f,
                     "too large for unix seconds (milliseconds?): " + simdjson::to_string(v));
        }
        out = d;
        return true;
      }
      case simdjson::dom::element_type::STRING: {
        std::string_view s = v.get_string().value_unsafe();
        std::string why;
        auto t = parse_rfc3339(s, &why);
        if (!t) return bad(RejectReason::kBadTimestamp, f, why);
        out = *t;
        return true;
      }
      default:
        return wrong_type(f, "unix seconds or an RFC 3339 string");
    }
  }

  bool get_checksum() {
    std::string_view s;
    if (!get_string(kChecksum, s)) return false;
    std::string why;
    if (!parse_checksum(s, out_.event.checksum, &why)) {
      out_.event.checksum = Checksum{};
      return bad(RejectReason::kBadChecksum, kChecksum, why);
    }
    return true;
  }

  LineResult& out_;
  FieldMask present_ = 0;
  std::array<simdjson::dom::element, kFieldCount> values_{};
};

}  // namespace

std::string_view reject_reason_label(RejectReason reason) {
  switch (reason) {
    case RejectReason::kNone:
      return "";
    case RejectReason::kInvalidJson:
      return "invalid_json";
    case RejectReason::kInvalidUtf8:
      return "invalid_utf8";
    case RejectReason::kNotAnObject:
      return "not_an_object";
    case RejectReason::kTooLong:
      return "too_long";
    case RejectReason::kTooDeep:
      return "too_deep";
    case RejectReason::kMissingField:
      return "missing_field";
    case RejectReason::kWrongType:
      return "wrong_type";
    case RejectReason::kBadValue:
      return "bad_value";
    case RejectReason::kBadVersion:
      return "bad_version";
    case RejectReason::kBadTimestamp:
      return "bad_timestamp";
    case RejectReason::kBadChecksum:
      return "bad_checksum";
    case RejectReason::kDuplicateField:
      return "duplicate_field";
    case RejectReason::kTooManyJobs:
      return "too_many_jobs";
    case RejectReason::kUnconfiguredTier:
      return "unconfigured_tier";
  }
  return "";
}

std::string_view line_status_label(LineStatus status) {
  switch (status) {
    case LineStatus::kOk:
      return "ok";
    case LineStatus::kUnknownEvent:
      return "unknown_event";
    case LineStatus::kRejected:
      return "rejected";
    case LineStatus::kBlank:
      return "blank";
  }
  return "";
}

// A complete line inside a chunk: [begin, end) without the newline; `first`
// is its first non-blank byte (== end for a blank line).
struct LineSpan {
  std::size_t begin;
  std::size_t end;
  std::size_t first;
};

// Lines per parse_many batch at most (besides EventParserOptions::batch_bytes).
constexpr std::size_t kMaxBatchLines = 2048;

struct EventParser::Impl {
  explicit Impl(const EventParserOptions& o) : opts(o) {
    json.threaded = false;  // batches are small; never start simdjson's stage-1 thread
    padded = std::make_unique<char[]>(opts.max_line_bytes + simdjson::SIMDJSON_PADDING);
    if (opts.batch_bytes) {
      batch = std::make_unique<char[]>(opts.batch_bytes + opts.max_line_bytes +
                                       simdjson::SIMDJSON_PADDING);
    }
    allocated = json.allocate(opts.max_line_bytes, opts.max_depth) == simdjson::SUCCESS;
    spans = std::make_unique<LineSpan[]>(kMaxBatchLines);
  }

  LineStatus reject(LineResult& out, RejectReason reason, std::string detail) {
    out.reason = reason;
    out.detail = std::move(detail);
    return out.status = LineStatus::kRejected;
  }

  // Clears what a reused result held from its last line.
  static void begin_line(LineResult& out, std::size_t length) {
    out.length = length;
    out.reason = RejectReason::kNone;
    out.detail.clear();
    reset(out.event);
  }
  static std::string too_long_detail(std::size_t length, std::size_t cap) {
    return "line of " + std::to_string(length) + " bytes is over the cap of " + std::to_string(cap);
  }

  LineStatus parse_line(std::string_view line, LineResult& out) {
    begin_line(out, line.size());
    if (line.size() > opts.max_line_bytes) {
      return reject(out, RejectReason::kTooLong, too_long_detail(line.size(), opts.max_line_bytes));
    }
    if (is_blank(line)) return out.status = LineStatus::kBlank;
    if (!allocated) {
      allocated = json.allocate(opts.max_line_bytes, opts.max_depth) == simdjson::SUCCESS;
      if (!allocated) return reject(out, RejectReason::kInvalidJson, "out of memory");
    }
    std::memcpy(padded.get(), line.data(), line.size());
    simdjson::dom::element root;
    auto err = json.parse(padded.get(), line.size(), false).get(root);
    if (err) {
      switch (err) {
        case simdjson::UTF8_ERROR:
          return reject(out, RejectReason::kInvalidUtf8, "not valid UTF-8");
        case simdjson::DEPTH_ERROR:
          return reject(out, RejectReason::kTooDeep,
                        "nested deeper than " + std::to_string(opts.max_depth) + " levels");
        default:
          return reject(out, RejectReason::kInvalidJson, simdjson::error_message(err));
      }
    }
    simdjson::dom::object obj;
    if (root.get(obj) != simdjson::SUCCESS) {
      return reject(
          out, RejectReason::kNotAnObject,
          "the line is " + std::string(json_type_name(root.type())) + ", not a JSON object");
    }
    return out.status = LineDecoder(out).decode(obj);
  }

  // Parses complete lines with one simdjson parse_many over all of them: one
  // stage-1 pass instead of one per line. A document is trusted only when it
  // is an object that starts at its line's first non-blank byte and is
  // followed by nothing but blanks on that line; at the first surprise (any
  // error included) the rest of the lines are parsed one by one, so every
  // result and every error is exactly what parse_line would say.
  template <typename Slot, typename Done>
  void parse_lines(std::string_view chunk, std::uint64_t data_offset, std::uint64_t first_line,
                   Slot& slot, Done& done) {
    const char* data = chunk.data();
    const std::size_t n = n_spans;
    std::size_t k = 0;
    auto emit_line = [&](std::size_t i) {
      LineResult& r = slot();
      r.line = first_line + i;
      r.offset = data_offset + spans[i].begin;
      parse_line(std::string_view(data + spans[i].begin, spans[i].end - spans[i].begin), r);
      done(r);
    };
    if (batch && allocated && n >= 4) {
      const std::size_t base = spans[0].begin;
      const std::size_t len = spans[n - 1].end - base;
      // simdjson only needs SIMDJSON_PADDING readable bytes past the end, whatever
      // they hold: the rest of the chunk serves when it is long enough.
      const char* src = data + base;
      if (chunk.size() - spans[n - 1].end < simdjson::SIMDJSON_PADDING) {
        std::memcpy(batch.get(), src, len);
        src = batch.get();
      }
      simdjson::dom::document_stream stream;
      if (json.parse_many(src, len, len).get(stream) == simdjson::SUCCESS) {
        for (auto it = stream.begin(); it != stream.end(); ++it) {
          while (k < n && spans[k].first == spans[k].end) emit_line(k++);  // blank
          if (k == n) break;
          const LineSpan& span = spans[k];
          simdjson::dom::element root;
          simdjson::dom::object obj;
          if ((*it).get(root) != simdjson::SUCCESS || root.get(obj) != simdjson::SUCCESS ||
              it.current_index() != span.first - base) {
            break;
          }
          std::size_t doc_end = span.first + it.source().size();
          if (doc_end > span.end ||
              !is_blank(std::string_view(data + doc_end, span.end - doc_end))) {
            break;
          }
          LineResult& r = slot();
          r.line = first_line + k;
          r.offset = data_offset + span.begin;
          begin_line(r, span.end - span.begin);
          r.status = LineDecoder(r).decode(obj);
          done(r);
          ++k;
        }
      }
    }
    for (; k < n; ++k) emit_line(k);
  }

  // The bulk walk shared by both parse_chunk forms. `slot()` gives the
  // LineResult to fill next; `done(result)` hands it over.
  template <typename Slot, typename Done>
  std::size_t walk(std::string_view chunk, ParseCursor& cursor, Slot&& slot, Done&& done) {
    const std::size_t cap = opts.max_line_bytes;
    const std::size_t batch_limit = std::max<std::size_t>(opts.batch_bytes, 1);
    const char* data = chunk.data();
    const std::size_t size = chunk.size();
    std::size_t pos = 0;
    while (pos < size) {
      if (cursor.skipping) {
        const void* nl = std::memchr(data + pos, '\n', size - pos);
        if (!nl) {
          pos = size;
          break;
        }
        pos = static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1;
        cursor.skipping = false;
        ++cursor.line;
        continue;
      }
      // Gather a batch of complete lines within the cap. A line within the
      // cap ends at most `cap` bytes after it starts, so the newline search
      // never runs past cap+1 bytes before deciding.
      n_spans = 0;
      const std::size_t batch_start = pos;
      bool stopped_at_newline = true;
      while (pos < size && pos - batch_start < batch_limit && n_spans < kMaxBatchLines) {
        std::size_t window = std::min(size - pos, cap + 1);
        const void* nl = std::memchr(data + pos, '\n', window);
        if (!nl) {
          stopped_at_newline = false;
          break;
        }
        std::size_t end = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
        std::size_t first = pos;
        while (first < end && (data[first] == ' ' || data[first] == '\t' || data[first] == '\r')) {
          ++first;
        }
        spans[n_spans++] = LineSpan{pos, end, first};
        pos = end + 1;
      }
      if (n_spans) {
        parse_lines(chunk, cursor.offset, cursor.line, slot, done);
        cursor.line += n_spans;
      }
      if (stopped_at_newline) continue;
      if (size - pos <= cap) break;  // an incomplete last line: wait for its newline
      // Over the cap: report once, without parsing, and skip to its newline.
      LineResult& r = slot();
      r.line = cursor.line;
      r.offset = cursor.offset + pos;
      r.status = LineStatus::kRejected;
      r.reason = RejectReason::kTooLong;
      reset(r.event);
      const std::size_t window = cap + 1;
      const void* far_nl = std::memchr(data + pos + window, '\n', size - pos - window);
      if (far_nl) {
        std::size_t end = static_cast<std::size_t>(static_cast<const char*>(far_nl) - data);
        r.length = end - pos;
        r.detail = too_long_detail(r.length, cap);
        done(r);
        pos = end + 1;
        ++cursor.line;
      } else {
        r.length = size - pos;
        r.detail = "line is over the cap of " + std::to_string(cap) + " bytes";
        done(r);
        pos = size;
        cursor.skipping = true;
      }
    }
    cursor.offset += pos;
    return pos;
  }

  EventParserOptions opts;
  simdjson::dom::parser json;
  // One line plus simdjson's padding: lines are copied here so the parser
  // never reads past a caller's buffer.
  std::unique_ptr<char[]> padded;
  // A batch of lines plus padding, for parse_many.
  std::unique_ptr<char[]> batch;
  bool allocated = false;
  std::unique_ptr<LineSpan[]> spans;
  std::size_t n_spans = 0;
  LineResult scratch;
};

namespace {

EventParserOptions sanitized(EventParserOptions o) {
  if (o.max_line_bytes == 0) o.max_line_bytes = 1;
  if (o.max_depth == 0) o.max_depth = 1;
  return o;
}

}  // namespace

EventParser::EventParser(EventParserOptions options)
    : impl_(std::make_unique<Impl>(sanitized(options))) {}

EventParser::~EventParser() = default;

LineStatus EventParser::parse_line(std::string_view line, LineResult& out) {
  return impl_->parse_line(line, out);
}

std::size_t EventParser::parse_chunk(std::string_view chunk, ParseCursor& cursor,
                                     const Visitor& visit) {
  LineResult& scratch = impl_->scratch;
  return impl_->walk(
      chunk, cursor, [&]() -> LineResult& { return scratch; },
      [&](const LineResult& r) {
        if (visit) visit(r);
      });
}

std::size_t EventParser::parse_chunk(std::string_view chunk, ParseCursor& cursor,
                                     ChunkResult& result) {
  result.count_ = 0;
  result.consumed = impl_->walk(
      chunk, cursor,
      [&]() -> LineResult& {
        // Reuse earlier results' storage so their strings keep their capacity.
        if (result.count_ == result.storage_.size()) result.storage_.emplace_back();
        return result.storage_[result.count_++];
      },
      [](const LineResult&) {});
  return result.consumed;
}

ChunkResult EventParser::parse_chunk(std::string_view chunk, ParseCursor& cursor) {
  ChunkResult result;
  parse_chunk(chunk, cursor, result);
  return result;
}

namespace {

// Reads exactly `n` decimal digits at s[pos...].
bool read_digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = static_cast<unsigned>((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1);
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

int days_in_month(int y, int m) {
  static constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[static_cast<std::size_t>(m - 1)];
}

}  // namespace

std::optional<double> parse_rfc3339(std::string_view s, std::string* why) {
  auto fail = [&](const char* msg) -> std::optional<double> {
    if (why) *why = std::string(msg) + " in RFC 3339 time " + json_quote(s.substr(0, 64));
    return std::nullopt;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_digits(s, 0, 4, year) || s.size() < 5 || s[4] != '-' || !read_digits(s, 5, 2, month) ||
      s.size() < 8 || s[7] != '-' || !read_digits(s, 8, 2, day)) {
    return fail("expected YYYY-MM-DD");
  }
  if (s.size() < 11 || (s[10] != 'T' && s[10] != 't' && s[10] != ' ')) {
    return fail("expected T between date and time");
  }
  if (!read_digits(s, 11, 2, hour) || s.size() < 14 || s[13] != ':' ||
      !read_digits(s, 14, 2, minute) || s.size() < 17 || s[16] != ':' ||
      !read_digits(s, 17, 2, second)) {
    return fail("expected hh:mm:ss");
  }
  if (month < 1 || month > 12) return fail("month out of range");
  if (day < 1 || day > days_in_month(year, month)) return fail("day out of range");
  if (hour > 23 || minute > 59 || second > 60) return fail("time of day out of range");
  std::size_t pos = 19;
  double fraction = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    double scale = 0.1;
    std::size_t first = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      fraction += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == first) return fail("expected digits after the decimal point");
  }
  if (pos >= s.size()) return fail("expected Z or a +hh:mm offset");
  int offset_seconds = 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh = 0, om = 0;
    if (!read_digits(s, pos + 1, 2, oh) || s.size() < pos + 4 || s[pos + 3] != ':' ||
        !read_digits(s, pos + 4, 2, om)) {
      return fail("expected a +hh:mm offset");
    }
    if (oh > 23 || om > 59) return fail("offset out of range");
    offset_seconds = (s[pos] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return fail("expected Z or a +hh:mm offset");
  }
  if (pos != s.size()) return fail("unexpected text after the offset");
  std::int64_t secs = days_from_civil(year, month, day) * 86400 + std::int64_t{hour} * 3600 +
                      std::int64_t{minute} * 60 + second - offset_seconds;
  if (secs < 0) return fail("before 1970");
  double t = static_cast<double>(secs) + fraction;
  // The same range as numeric timestamps, so a line's validity does not
  // depend on which form its writer chose.
  if (t >= kMaxUnixSeconds) return fail("after the year 5138");
  return t;
}

}  // namespace ckptmon
