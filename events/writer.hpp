#pragma once
// Writing event lines: the canonical JSON form of an Event, and appending one
// line to a log with a single write(2) on an O_APPEND descriptor, which the
// local kernel applies atomically with respect to other appenders on the same
// host (not across clients of a network file system: one log per rank or node).

#include <string>
#include <string_view>

#include "events/event.hpp"

namespace ckptmon {

// One schema-v1 line ending in '\n': v, ts, event, job, then the fields that
// are set, in documentation order. Does not validate; callers parse the line
// back when they need to know it is acceptable.
std::string format_event_line(const Event& event);

// Appends `line` (which should end in '\n') to `path`, creating it 0644 if
// needed, with exactly one write(2). Refuses anything but a regular file, and
// never blocks on a FIFO. Returns false with `error` set on failure; a short
// write is reported as such, never completed by a second write that another
// appender could interleave with.
bool append_line(const std::string& path, std::string_view line, std::string* error);

}  // namespace ckptmon
