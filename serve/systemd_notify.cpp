#include "serve/systemd_notify.hpp"

#include <string>

#include <systemd/sd-daemon.h>

namespace ckptmon::systemd {

void ready() { sd_notify(0, "READY=1"); }
void reloading() { sd_notify(0, "RELOADING=1"); }
void stopping() { sd_notify(0, "STOPPING=1"); }
void watchdog() { sd_notify(0, "WATCHDOG=1"); }
void status(std::string_view text) {
  const std::string msg = "STATUS=" + std::string(text);
  sd_notify(0, msg.c_str());
}

std::optional<std::chrono::microseconds> watchdog_interval() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    return std::chrono::microseconds(static_cast<std::int64_t>(usec));
  }
  return std::nullopt;
}

}  // namespace ckptmon::systemd
