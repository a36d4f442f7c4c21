#pragma once
// How the state database keeps event aggregates (tables event_steps,
// event_jobs, event_restores, column data, schema 7): a binary row per
// aggregate that round-trips every field, internal ones included. A
// persistence format, not the API's: /api/v1 renders steps in api/web.cpp,
// the one JSON form of an event step. Schemas 2 to 6 stored JSON; the
// migration reads it with store/legacy_event_rows.hpp.
//
// A row is a format byte (kEventRowFormat), a byte naming what it holds (1
// a step, 2 a job, 3 a job's restores) and then the fields in declaration
// order (store/bytes.hpp: varints, zigzag, 8-byte doubles bit for bit,
// length-prefixed strings; maps as a count and ascending keys). The encoding
// is canonical: a row decodes only when encoding what it decodes to gives the
// same bytes back, so a row that is cut short, has bytes left over, a flag
// other than 0 or 1, keys out of order or a varint padded with zeros is
// refused, never half-read. A job's restores end with the latest restore's
// phases only when it has some, so rows written before phases existed read
// as they were.

#include <optional>
#include <string>
#include <string_view>

#include "model/events.hpp"

namespace ckptmon {

inline constexpr std::uint8_t kEventRowFormat = 1;

std::string encode_event_row(const EventStep& s);
std::string encode_event_row(const EventJob& j);
std::string encode_event_row(const EventRestores& r);

// nullopt when `row` is not one canonical row of that type.
std::optional<EventStep> decode_event_step(std::string_view row);
std::optional<EventJob> decode_event_job(std::string_view row);
std::optional<EventRestores> decode_event_restores(std::string_view row);

}  // namespace ckptmon
