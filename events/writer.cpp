#include "events/writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "util/text.hpp"

namespace ckptmon {
namespace {

// Shortest round-trip text of a number (integers exactly).
template <typename Number>
void append_number(std::string& out, Number v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec == std::errc()) out.append(buf, end);
}

void key(std::string& out, std::string_view name) {
  out += ",\"";
  out += name;
  out += "\":";
}

void string_field(std::string& out, std::string_view name, const std::string& value) {
  if (value.empty()) return;
  key(out, name);
  out += json_quote(value);
}

}  // namespace

std::string format_event_line(const Event& e) {
  std::string out = "{\"v\":1,\"ts\":";
  append_number(out, e.ts);
  key(out, "event");
  out += json_quote(e.type == EventType::kUnknown ? std::string_view(e.unknown_type)
                                                  : event_type_name(e.type));
  key(out, "job");
  out += json_quote(e.job);
  if (e.step) {
    key(out, "step");
    append_number(out, *e.step);
  }
  string_field(out, "tier", e.tier);
  if (e.rank) {
    key(out, "rank");
    append_number(out, *e.rank);
  }
  string_field(out, "path", e.path);
  if (e.bytes) {
    key(out, "bytes");
    append_number(out, *e.bytes);
  }
  if (e.start_ts) {
    key(out, "start_ts");
    append_number(out, *e.start_ts);
  }
  if (!e.checksum.empty()) {
    key(out, "checksum");
    out += json_quote(e.checksum.to_string());
  }
  if (e.files) {
    key(out, "files");
    append_number(out, *e.files);
  }
  if (!e.reason.empty() || e.type == EventType::kCheckpointFailed) {
    key(out, "reason");
    out += json_quote(e.reason);
  }
  string_field(out, "from_tier", e.from_tier);
  string_field(out, "to_tier", e.to_tier);
  if (e.ok) {
    key(out, "ok");
    out += *e.ok ? "true" : "false";
  }
  out += "}\n";
  return out;
}

bool append_line(const std::string& path, std::string_view line, std::string* error) {
  auto fail = [&](const std::string& what, int err) {
    if (error) *error = path + ": " + what + (err ? std::string(": ") + errno_text(err) : "");
    return false;
  };
  // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader.
  int fd =
      ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
  if (fd < 0) return fail("cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail("cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file", 0);
  }
  ssize_t n = -1;
  do {
    n = ::write(fd, line.data(), line.size());
  } while (n < 0 && errno == EINTR);  // nothing was written: retrying cannot split the line
  int write_err = errno;
  // NFS reports deferred write errors at close.
  int close_rc = ::close(fd);
  int close_err = errno;
  if (n < 0) return fail("cannot write", write_err);
  if (static_cast<std::size_t>(n) != line.size()) {
    return fail("short write (" + std::to_string(n) + " of " + std::to_string(line.size()) +
                    " bytes); the log now ends in a partial line",
                0);
  }
  if (close_rc != 0 && close_err != EINTR) return fail("error at close", close_err);
  return true;
}

}  // namespace ckptmon
