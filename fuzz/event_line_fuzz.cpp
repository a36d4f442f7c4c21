// libFuzzer target for the event-log line parser (events/parser.hpp).
// Beyond "never crash" (ASan + UBSan), it checks properties that must hold for
// every input:
//  - a line is rejected exactly when it has a reason;
//  - an accepted event, written back with format_event_line, parses to itself;
//  - a buffer parsed at once, in two pieces split anywhere (as a tailer reads
//    it), and line by line without parse_many batching gives the same lines,
//    offsets, results and cursor.
// Any input that breaks one of them aborts, and becomes a unit test.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "events/parser.hpp"
#include "events/writer.hpp"

namespace {

using ckptmon::ChunkResult;
using ckptmon::EventParser;
using ckptmon::EventParserOptions;
using ckptmon::LineResult;
using ckptmon::LineStatus;
using ckptmon::ParseCursor;
using ckptmon::RejectReason;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "event_line_fuzz: property violated: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

void check_result(const LineResult& r) {
  check((r.status == LineStatus::kRejected) == (r.reason != RejectReason::kNone),
        "rejected exactly when there is a reason");
  check(r.status != LineStatus::kRejected || !r.detail.empty(), "a rejection has a detail");
}

struct Collected {
  std::vector<LineResult> lines;
  ParseCursor cursor;
  std::size_t consumed = 0;
};

// Feeds `data` in two pieces the way a tailer does: parse what is there, keep
// the unconsumed tail, append the next read.
Collected feed(EventParser& parser, std::string_view data, std::size_t split) {
  Collected out;
  std::string pending;
  auto visit = [&](const LineResult& r) { out.lines.push_back(r); };
  for (std::string_view piece : {data.substr(0, split), data.substr(split)}) {
    pending.append(piece);
    std::size_t consumed = parser.parse_chunk(pending, out.cursor, visit);
    check(consumed <= pending.size(), "consumed no more than given");
    check(consumed == 0 || pending[consumed - 1] == '\n' || out.cursor.skipping,
          "consumption ends at a newline unless skipping an overlong line");
    out.consumed += consumed;
    pending.erase(0, consumed);
  }
  return out;
}

bool same(const Collected& a, const Collected& b) {
  if (a.lines.size() != b.lines.size() || !(a.cursor == b.cursor) || a.consumed != b.consumed) {
    return false;
  }
  for (std::size_t i = 0; i < a.lines.size(); ++i) {
    const LineResult& x = a.lines[i];
    const LineResult& y = b.lines[i];
    if (x.line != y.line || x.offset != y.offset || x.status != y.status || x.reason != y.reason ||
        !(x.event == y.event)) {
      return false;
    }
    // An overlong line's length and detail depend on how much of it was seen.
    if (x.reason != RejectReason::kTooLong && (x.length != y.length || x.detail != y.detail)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // One line, default options.
  static EventParser line_parser;
  static EventParser roomy_parser(EventParserOptions{1 << 20, 32, 64 * 1024});
  LineResult r;
  LineStatus status = line_parser.parse_line(input, r);
  check(status == r.status, "parse_line returns the status it stores");
  check_result(r);
  if (status == LineStatus::kOk) {
    std::string line = ckptmon::format_event_line(r.event);
    check(!line.empty() && line.back() == '\n' && line.find('\n') == line.size() - 1,
          "a formatted event is exactly one line");
    LineResult again;
    // A roomier cap: formatting may lengthen a line (1e9 becomes 1000000000).
    check(roomy_parser.parse_line(std::string_view(line).substr(0, line.size() - 1), again) ==
              LineStatus::kOk,
          "a formatted event parses");
    check(again.event == r.event, "a formatted event parses to itself");
  }

  // Many lines: a small cap so overlong lines and skipping are exercised.
  EventParserOptions batched{96, 8, 128};
  EventParserOptions unbatched{96, 8, 0};
  EventParser a(batched), b(batched), c(unbatched);
  std::size_t split = size ? data[0] % (size + 1) : 0;
  Collected whole = feed(a, input, size);
  Collected pieces = feed(b, input, split);
  Collected plain = feed(c, input, split);
  for (const auto& l : whole.lines) check_result(l);
  check(same(whole, pieces), "results do not depend on where reads split the buffer");
  check(same(whole, plain), "batched and line-by-line parsing agree");
  return 0;
}
