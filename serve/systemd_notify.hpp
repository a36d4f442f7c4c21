#pragma once
// sd_notify(3) for Type=notify units: READY, RELOADING, STOPPING and watchdog
// pings. Every call is a no-op when not started by systemd. Thread-safe.

#include <chrono>
#include <optional>
#include <string_view>

namespace ckptmon::systemd {

void ready();
void reloading();
void stopping();
void watchdog();
void status(std::string_view text);
// The interval WatchdogSec= asks for, when it is set for this process.
std::optional<std::chrono::microseconds> watchdog_interval();

}  // namespace ckptmon::systemd
