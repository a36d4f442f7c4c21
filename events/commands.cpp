#include "events/commands.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "events/writer.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::size_t kReadChunk = 1 << 20;

// One file's lines by status, and the rejected ones by reason.
struct LineTally {
  std::array<std::uint64_t, 4> lines{};  // by LineStatus
  std::array<std::uint64_t, kAllRejectReasons.size() + 1>
      errors{};  // by RejectReason (kNone unused)
};

// Returns false when the file could not be read to its end.
bool check_one(const std::string& file, EventParser& parser, LineTally& tally, std::ostream& err) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    err << file << ": cannot open: " << errno_text(errno) << "\n";
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    err << file << ": not a regular file\n";
    ::close(fd);
    return false;
  }
  auto visit = [&](const LineResult& r) {
    ++tally.lines[static_cast<std::size_t>(r.status)];
    if (r.status == LineStatus::kRejected) {
      ++tally.errors[static_cast<std::size_t>(r.reason)];
      err << file << ":" << r.line << ": " << reject_reason_label(r.reason) << ": " << r.detail
          << "\n";
    }
  };
  ParseCursor cursor;
  std::string buf;
  bool read_ok = true;
  while (true) {
    std::size_t old = buf.size();
    buf.resize(old + kReadChunk);
    ssize_t n = ::read(fd, buf.data() + old, kReadChunk);
    if (n < 0 && errno == EINTR) {
      buf.resize(old);
      continue;
    }
    if (n < 0) {
      err << file << ": read error: " << errno_text(errno) << "\n";
      read_ok = false;
      buf.resize(old);
      break;
    }
    buf.resize(old + static_cast<std::size_t>(n));
    if (n == 0) break;
    std::size_t consumed = parser.parse_chunk(buf, cursor, visit);
    buf.erase(0, consumed);
  }
  ::close(fd);
  if (read_ok && (!buf.empty() || cursor.skipping)) {
    err << file << ":" << cursor.line
        << ": warning: no newline at end of file; the last line is incomplete "
           "(a writer may still be appending it) and was not checked\n";
  }
  return read_ok;
}

template <typename T>
bool parse_number(const std::string& text, T& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && !text.empty();
}

}  // namespace

int check_event_logs(const std::vector<std::string>& files, std::ostream& out, std::ostream& err,
                     const EventParserOptions& options) {
  EventParser parser(options);
  bool all_good = true;
  for (const auto& file : files) {
    LineTally t;
    if (!check_one(file, parser, t, err)) all_good = false;
    auto count = [&](LineStatus st) { return t.lines[static_cast<std::size_t>(st)]; };
    const std::uint64_t rejected = count(LineStatus::kRejected);
    const std::uint64_t lines = count(LineStatus::kOk) + count(LineStatus::kUnknownEvent) +
                                count(LineStatus::kBlank) + rejected;
    if (rejected) all_good = false;
    out << file << ": " << lines << (lines == 1 ? " line" : " lines") << ", "
        << count(LineStatus::kOk) << " ok, " << count(LineStatus::kUnknownEvent)
        << " unknown event type, " << count(LineStatus::kBlank) << " blank, " << rejected
        << " rejected";
    if (rejected) {
      out << " (";
      bool first = true;
      for (RejectReason r : kAllRejectReasons) {
        const std::uint64_t c = t.errors[static_cast<std::size_t>(r)];
        if (!c) continue;
        out << (first ? "" : ", ") << reject_reason_label(r) << " " << c;
        first = false;
      }
      out << ")";
    }
    out << "\n";
  }
  return all_good ? 0 : 1;
}

int emit_event(const EmitArgs& a, const Clock& clock, std::ostream& err) {
  auto usage = [&](const std::string& msg) {
    err << "ckptmon emit: " << msg << "\n";
    return 2;
  };
  Event e;
  e.type = event_type_from_name(a.event);
  if (e.type == EventType::kUnknown) {
    std::string known;
    for (EventType t : kKnownEventTypes) {
      known += known.empty() ? "" : ", ";
      known += event_type_name(t);
    }
    return usage("unknown event type \"" + a.event + "\"; known types: " + known);
  }
  e.job = a.job;
  auto timestamp = [&](const std::string& flag, const std::string& text, double& out) {
    if (parse_number(text, out)) return true;
    std::string why;
    if (auto t = parse_rfc3339(text, &why)) {
      out = *t;
      return true;
    }
    usage(flag + ": expected unix seconds or an RFC 3339 time, got \"" + text + "\"");
    return false;
  };
  e.ts = clock.now();
  if (a.ts && !timestamp("--ts", *a.ts, e.ts)) return 2;
  if (a.start_ts) {
    double t = 0;
    if (!timestamp("--start-ts", *a.start_ts, t)) return 2;
    e.start_ts = t;
  }
  auto integer = [&](const std::string& flag, const std::optional<std::string>& text, auto& out) {
    if (!text) return true;
    typename std::remove_reference_t<decltype(out)>::value_type v{};
    if (!parse_number(*text, v)) {
      usage(flag + ": expected an integer, got \"" + *text + "\"");
      return false;
    }
    out = v;
    return true;
  };
  if (!integer("--step", a.step, e.step) || !integer("--rank", a.rank, e.rank) ||
      !integer("--bytes", a.bytes, e.bytes) || !integer("--files", a.files, e.files)) {
    return 2;
  }
  if (a.tier) e.tier = *a.tier;
  if (a.path) e.path = *a.path;
  if (a.reason) e.reason = *a.reason;
  if (a.from_tier) e.from_tier = *a.from_tier;
  if (a.to_tier) e.to_tier = *a.to_tier;
  if (a.checksum) {
    std::string why;
    if (!parse_checksum(*a.checksum, e.checksum, &why)) return usage("--checksum: " + why);
  }
  if (a.ok) {
    if (*a.ok == "true") {
      e.ok = true;
    } else if (*a.ok == "false") {
      e.ok = false;
    } else {
      return usage("--ok: expected true or false, got \"" + *a.ok + "\"");
    }
  }
  std::string line = format_event_line(e);
  // The reader's rules decide what is a valid event, so check with the reader.
  EventParser parser;
  LineResult check;
  if (parser.parse_line(std::string_view(line).substr(0, line.size() - 1), check) !=
      LineStatus::kOk) {
    return usage(std::string(reject_reason_label(check.reason)) + ": " + check.detail);
  }
  std::string error;
  if (!append_line(a.log, line, &error)) {
    err << "ckptmon emit: " << error << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ckptmon
