#include "tools/burst/burst_command.hpp"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/burst/burst.hpp"
#include "tools/burst/burst_expect.hpp"
#include "util/columns.hpp"
#include "util/duration.hpp"
#include "util/text.hpp"

namespace ckptmon {

namespace fs = std::filesystem;

CLI::App* add_burst_command(CLI::App& app, BurstArgs& a) {
  auto* b = app.add_subcommand(
      "burst", "Write production-like checkpoint bursts to a tier (docs/validating-a-tier.md)");
  b->add_option("--target", a.target, "Existing, empty directory on the tier to validate")
      ->required();
  b->add_option("--layout", a.layout, "dcp, deepspeed, megatron, hf or orbax")
      ->capture_default_str();
  b->add_option("--jobs", a.jobs, "Jobs checkpointing at once")->capture_default_str();
  b->add_option("--ranks", a.ranks, "Ranks (writers) per checkpoint")->capture_default_str();
  b->add_option("--shard-size", a.shard_size, "Bytes per rank shard, e.g. 64MiB, 1GiB")
      ->capture_default_str();
  b->add_option("--checkpoints", a.checkpoints, "Checkpoints per job")->capture_default_str();
  b->add_option("--interval", a.interval,
                "From one save's start to the next one's (0s: back to back)")
      ->capture_default_str();
  b->add_option("--writers", a.writers, "Writer threads at once (0: jobs x ranks)")
      ->capture_default_str();
  b->add_flag("--no-fsync", a.no_fsync, "Do not fsync shards and markers");
  b->add_option(
       "--fail-writer", a.fail_writer,
       "Kill writer R of checkpoint C (R@C; alone: the last rank of the middle checkpoint) "
       "mid-shard; repeatable")
      ->expected(0, 1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->default_str("");
  b->add_option("--fill-to", a.fill_to, "Stop when the file system is this full, e.g. 95%");
  b->add_option("--drain-to", a.drain_to, "Copy committed checkpoints to this directory");
  b->add_option("--drain-rate", a.drain_rate,
                "Drain bandwidth, e.g. 200MiB/s (default: unlimited)");
  b->add_flag("--restore", a.restore, "Read the newest committed checkpoint back at the end");
  b->add_option("--restore-ranks", a.restore_ranks,
                "Readers of the restore (default: --ranks); with dcp or megatron, another count "
                "reads the byte ranges DCP plans for that topology")
      ->check(CLI::Range(1, 4096));
  b->add_option("--events", a.events, "Append the schema-v1 event log here (docs/events.md)");
  b->add_flag("--sparse", a.sparse, "Metadata only: shards are sparse files");
  b->add_option("--window", a.window,
                "Time a checkpoint may take, e.g. 2m (reported as met or not)");
  b->add_option("--format", a.format, "table, plain or json (default: table on a terminal)")
      ->check(CLI::IsMember({"table", "plain", "json"}));
  b->add_flag("--force", a.force,
              "Write into a non-empty target (never into what burst did not create)");
  b->add_flag("--cleanup", a.cleanup,
              "Remove what earlier bursts created in --target (and --drain-to), then exit");
  b->add_option("--expect-detection", a.expect_detection,
                "URL of a ckptmon watching the target: check it saw the failure, fill and backlog");
  b->add_option("--detect-timeout", a.detect_timeout,
                "Give up waiting for the daemon after this long (default 2m)")
      ->capture_default_str();
  b->add_option("--tier", a.tier, "Tier name in events (default: the target's base name)");
  b->add_option("--drain-tier", a.drain_tier, "Drain tier name in events (default: base name)");
  b->add_option("--key-file", a.key_file,
                "Key of the manifests' digests (default: $XDG_STATE_HOME/ckptmon/burst.key, else "
                "~/.local/state/ckptmon/burst.key; created 0600 when missing)");
  return b;
}

namespace {

struct Bad {
  std::string msg;
};

std::string pct(double f) {
  char buf[32];
  static_cast<void>(std::snprintf(buf, sizeof buf, "%.1f%%", f * 100));
  return buf;
}

std::string secs(double s) {
  char buf[32];
  if (s < 10) {
    static_cast<void>(std::snprintf(buf, sizeof buf, "%.3fs", s));
  } else {
    static_cast<void>(std::snprintf(buf, sizeof buf, "%.1fs", s));
  }
  return buf;
}

std::string rate(double bps) { return human_bytes(bps) + "/s"; }

// A directory we may write into, or why not.
std::optional<std::string> writable_dir(const std::string& flag, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return flag + " " + path + ": " + errno_text(errno) +
           " (burst writes only into an existing directory)";
  }
  if (!S_ISDIR(st.st_mode)) return flag + " " + path + ": not a directory";
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
    return flag + " " + path + ": on a read-only mount";
  }
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    return flag + " " + path + ": not writable: " + errno_text(errno);
  }
  return std::nullopt;
}

bool empty_but_manifest(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return false;
  bool empty = true;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n == "." || n == ".." || n == burst::kManifestName) continue;
    empty = false;
    break;
  }
  ::closedir(d);
  return empty;
}

std::string absolute(const std::string& p) {
  std::string s = fs::absolute(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Flags to engine options; throws Bad with the message for exit 2.
burst::Options parse(const BurstArgs& a) {
  burst::Options o;
  if (auto why = writable_dir("--target", a.target)) throw Bad{*why};
  o.target = absolute(a.target);
  auto layout = burst::layout_from_name(a.layout);
  if (!layout) {
    throw Bad{"--layout: expected dcp, deepspeed, megatron, hf or orbax, got \"" + a.layout + "\""};
  }
  o.layout = *layout;
  auto positive = [](const char* flag, int v) {
    if (v < 1) throw Bad{std::string(flag) + ": must be at least 1, got " + std::to_string(v)};
  };
  positive("--jobs", a.jobs);
  positive("--ranks", a.ranks);
  positive("--checkpoints", a.checkpoints);
  if (a.ranks > 100000) throw Bad{"--ranks: at most 100000"};
  if (a.jobs > 1000) throw Bad{"--jobs: at most 1000"};
  if (a.writers < 0) throw Bad{"--writers: must be 0 (jobs x ranks) or more"};
  o.jobs = a.jobs;
  o.ranks = a.ranks;
  o.checkpoints = a.checkpoints;
  o.writers = a.writers;
  auto size = parse_byte_size(a.shard_size);
  if (!size || *size == 0) {
    throw Bad{"--shard-size: expected a size such as 64MiB or 1GiB, got \"" + a.shard_size + "\""};
  }
  o.shard_size = *size;
  auto duration = [](const char* flag, const std::string& text) {
    if (text == "0") return 0.0;
    auto d = parse_duration(text);
    if (!d)
      throw Bad{std::string(flag) + ": expected a duration such as 10s, got \"" + text + "\""};
    return to_seconds(*d);
  };
  o.interval = duration("--interval", a.interval);
  if (!a.window.empty()) o.window = duration("--window", a.window);
  o.fsync = !a.no_fsync;
  o.sparse = a.sparse;
  o.restore = a.restore;
  if (a.restore_ranks > 0 && !a.restore) throw Bad{"--restore-ranks needs --restore"};
  o.restore_ranks = a.restore_ranks;
  for (const std::string& spec : a.fail_writer) {
    burst::FailPoint f;
    if (spec.empty()) {
      f.rank = a.ranks - 1;
      f.checkpoint = (a.checkpoints + 1) / 2;
    } else {
      const auto at = spec.find('@');
      int r = -1, c = -1;
      char tail = 0;
      if (at == std::string::npos || std::sscanf(spec.c_str(), "%d@%d%c", &r, &c, &tail) != 2 ||
          r < 0 || c < 1) {
        throw Bad{
            "--fail-writer: expected RANK@CHECKPOINT such as 2@3 (rank from 0, checkpoint "
            "from 1), got \"" +
            spec + "\""};
      }
      f.rank = r;
      f.checkpoint = c;
    }
    if (f.rank >= a.ranks) {
      throw Bad{"--fail-writer: rank " + std::to_string(f.rank) + " does not exist (--ranks " +
                std::to_string(a.ranks) + ")"};
    }
    if (f.checkpoint > a.checkpoints) {
      throw Bad{"--fail-writer: checkpoint " + std::to_string(f.checkpoint) +
                " is past --checkpoints " + std::to_string(a.checkpoints)};
    }
    o.fail.push_back(f);
  }
  if (!a.fill_to.empty()) {
    std::string t = a.fill_to;
    double v = -1;
    char tail = 0;
    if (!t.empty() && t.back() == '%') t.pop_back();
    if (std::sscanf(t.c_str(), "%lf%c", &v, &tail) != 1 || !std::isfinite(v) || v <= 0 ||
        v >= 100) {
      throw Bad{"--fill-to: expected a percentage above 0% and below 100% such as 95%, got \"" +
                a.fill_to + "\""};
    }
    o.fill_to = v / 100;
    std::string why;
    auto level = burst::fill_level(o.target, &why);
    if (!level) throw Bad{"--fill-to: " + why};
    if (*level >= *o.fill_to) {
      throw Bad{"--fill-to " + a.fill_to + ": the file system of " + o.target + " is already " +
                pct(*level) + " full"};
    }
  }
  if (!a.drain_to.empty()) {
    if (auto why = writable_dir("--drain-to", a.drain_to)) throw Bad{*why};
    o.drain_to = absolute(a.drain_to);
    if (o.drain_to == o.target || o.drain_to.starts_with(o.target + "/") ||
        o.target.starts_with(o.drain_to + "/")) {
      throw Bad{"--drain-to " + o.drain_to + ": must not be inside the target or contain it"};
    }
    if (!a.force && !empty_but_manifest(o.drain_to)) {
      throw Bad{"--drain-to " + o.drain_to +
                ": not empty (use --force to write next to what is there)"};
    }
  }
  if (!a.drain_rate.empty()) {
    if (o.drain_to.empty()) throw Bad{"--drain-rate needs --drain-to"};
    std::string t = a.drain_rate;
    if (t.ends_with("/s")) t.resize(t.size() - 2);
    auto r = parse_byte_size(t);
    if (!r || *r == 0) {
      throw Bad{"--drain-rate: expected a rate such as 200MiB/s, got \"" + a.drain_rate + "\""};
    }
    o.drain_rate = *r;
  }
  if (!a.events.empty()) {
    o.events = absolute(a.events);
    struct stat st {};
    if (::lstat(o.events.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      throw Bad{"--events " + o.events + ": not a regular file"};
    }
    if (auto why = writable_dir("--events", fs::path(o.events).parent_path().string())) {
      throw Bad{*why};
    }
  }
  if (!a.force && !empty_but_manifest(o.target)) {
    throw Bad{"--target " + o.target +
              ": not empty; burst refuses to write next to data it did not create (use --force, "
              "or --cleanup to remove an earlier burst)"};
  }
  o.tier = a.tier;
  o.drain_tier = a.drain_tier;
  o.key_file = a.key_file.empty() ? std::string() : absolute(a.key_file);
  return o;
}

nlohmann::json to_json(const burst::CheckpointResult& c) {
  nlohmann::json j;
  j["job"] = c.job;
  j["index"] = c.index;
  j["step"] = c.step;
  j["path"] = c.path;
  j["state"] = std::string(burst::outcome_name(c.outcome));
  j["reason"] = c.reason;
  j["failed_rank"] = c.failed_rank >= 0 ? nlohmann::json(c.failed_rank) : nlohmann::json();
  j["files"] = c.files;
  j["bytes"] = c.bytes;
  j["start_ts"] = c.start_ts;
  j["end_ts"] = c.end_ts;
  j["duration_seconds"] = c.duration;
  j["write_seconds"] = c.write_seconds;
  j["skew_seconds"] = c.skew_seconds;
  j["throughput_bytes_per_second"] = c.throughput();
  j["creates"] = c.creates;
  j["renames"] = c.renames;
  j["fsyncs"] = c.fsyncs;
  j["metadata_ops_per_second"] = c.metadata_ops_per_second();
  j["window_met"] = c.window_met ? nlohmann::json(*c.window_met) : nlohmann::json();
  return j;
}

std::string plain_line(const burst::CheckpointResult& c) {
  std::string s = "checkpoint " + c.path + " " + std::string(burst::outcome_name(c.outcome)) +
                  " files=" + std::to_string(c.files) + " bytes=" + std::to_string(c.bytes) +
                  " time=" + secs(c.duration) + " write=" + secs(c.write_seconds) +
                  " skew=" + secs(c.skew_seconds) + " throughput=" + rate(c.throughput());
  char ops[32];
  static_cast<void>(std::snprintf(ops, sizeof ops, "%.1f", c.metadata_ops_per_second()));
  s += " metadata_ops_per_second=" + std::string(ops);
  if (c.window_met) s += std::string(" window=") + (*c.window_met ? "met" : "missed");
  if (!c.reason.empty()) s += " reason=" + logfmt_value(c.reason);
  return s;
}

int do_cleanup(const BurstArgs& a, std::ostream& out, std::ostream& err) {
  int rc = 0;
  for (const std::string& dir : {a.target, a.drain_to}) {
    if (dir.empty()) continue;
    burst::CleanupReport r;
    const bool ok = burst::cleanup(absolute(dir), a.key_file, &r);
    for (const auto& p : r.problems) err << "ckptmon burst --cleanup: " << p << "\n";
    for (const auto& n : r.notes) err << "ckptmon burst --cleanup: " << n << "\n";
    if (!r.trusted) {
      out << absolute(dir) << ": manifest not trusted; deleted nothing\n";
    } else {
      out << absolute(dir) << ": removed " << r.removed << " paths burst created"
          << (r.kept ? ", kept " + std::to_string(r.kept) : std::string())
          << (r.refused ? ", refused " + std::to_string(r.refused) : std::string())
          << (r.outside ? ", left " + std::to_string(r.outside) + " outside it" : std::string())
          << "\n";
    }
    if (!ok) rc = 1;
  }
  return rc;
}

// SIGINT and SIGTERM stop the burst instead of killing it, so that every
// file it made is in the manifest (and --cleanup finds it). The signals are
// blocked in every thread and taken by one sigwait thread.
class StopOnSignal {
 public:
  explicit StopOnSignal(burst::Pacer& pacer) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGUSR1);  // our own wake-up at the end
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    thread_ = std::thread([this, &pacer] {
      int sig = 0;
      while (sigwait(&set_, &sig) == 0) {
        if (sig == SIGUSR1 && done_) return;
        if (sig == SIGINT || sig == SIGTERM) {
          got_ = sig;
          pacer.stop();
        }
      }
    });
  }
  ~StopOnSignal() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  int signal() const { return got_; }

 private:
  sigset_t set_{};
  sigset_t old_{};
  std::atomic<bool> done_{false};
  std::atomic<int> got_{0};
  std::thread thread_;
};

}  // namespace

int run_burst_command(const BurstArgs& a, const Clock& clock, bool tty, std::ostream& out,
                      std::ostream& err) {
  if (a.cleanup) return do_cleanup(a, out, err);
  burst::Options o;
  std::optional<ExpectTarget> expect;
  try {
    o = parse(a);
    if (!a.expect_detection.empty()) {
      std::string why;
      expect = prepare_expect(a.expect_detection, a.detect_timeout, &why);
      if (!expect) throw Bad{"--expect-detection: " + why};
    }
  } catch (const Bad& b) {
    err << "ckptmon burst: " << b.msg << "\n";
    return 2;
  }
  const std::string format = !a.format.empty() ? a.format : (tty ? "table" : "plain");
  burst::RealPacer pacer;
  StopOnSignal signals(pacer);  // before any thread starts: they inherit the mask
  burst::Burst engine(o, clock, pacer);
  std::mutex out_mu;
  if (format == "plain") {
    engine.on_checkpoint([&](const burst::CheckpointResult& c) {
      std::lock_guard lock(out_mu);
      out << plain_line(c) << std::endl;
    });
  }
  if (format == "table" && tty) {
    auto last = std::make_shared<double>(0);
    engine.on_progress([&, last](std::uint64_t done, std::uint64_t planned, std::uint64_t bytes) {
      std::lock_guard lock(out_mu);
      const double now = pacer.mono();
      if (done != planned && now - *last < 0.1) return;
      *last = now;
      const int width = 30;
      const int filled =
          planned
              ? static_cast<int>(width * static_cast<double>(done) / static_cast<double>(planned))
              : 0;
      err << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
          << std::string(static_cast<std::size_t>(width - filled), ' ') << "] " << done << "/"
          << planned << " shards, " << human_bytes(static_cast<double>(bytes)) << "   "
          << std::flush;
    });
  }
  burst::Result r;
  std::vector<ExpectCheck> results;
  if (expect) {
    // The checks watch the daemon while the drain still runs.
    engine.on_writes_done([&](const burst::Result& sofar) {
      if (format == "table" && tty) err << "\nchecking " << a.expect_detection << " ...\n";
      results = run_expect(*expect, o, sofar, engine, clock);
    });
  }
  const bool ok = engine.run(r);
  if (format == "table" && tty) err << "\n";
  if (signals.signal() != 0) {
    err << "ckptmon burst: interrupted (" << (signals.signal() == SIGINT ? "SIGINT" : "SIGTERM")
        << "); what was written is listed in " << o.target << "/" << burst::kManifestName
        << "; `ckptmon burst --target " << o.target
        << (o.drain_to.empty() ? "" : " --drain-to " + o.drain_to) << " --cleanup` removes it\n";
  }
  if (!ok) {
    err << "ckptmon burst: " << r.error << "\n"
        << "ckptmon burst: what was written is listed in " << o.target << "/"
        << burst::kManifestName << "; `ckptmon burst --target " << o.target
        << (o.drain_to.empty() ? "" : " --drain-to " + o.drain_to) << " --cleanup` removes it\n";
    return 2;
  }

  std::size_t committed = 0, partial = 0, in_progress = 0;
  std::uint64_t bytes = 0;
  for (const auto& c : r.checkpoints) {
    bytes += c.bytes;
    switch (c.outcome) {
      case burst::CkptOutcome::kCommitted:
        ++committed;
        break;
      case burst::CkptOutcome::kPartial:
        ++partial;
        break;
      case burst::CkptOutcome::kInProgress:
        ++in_progress;
        break;
    }
  }
  const double throughput = r.seconds > 0 ? static_cast<double>(bytes) / r.seconds : 0;
  bool checks_ok = true;
  for (const auto& c : results) checks_ok = checks_ok && c.ok;

  if (format == "json") {
    nlohmann::json j;
    j["target"] = o.target;
    j["layout"] = std::string(burst::layout_name(o.layout));
    j["jobs"] = o.jobs;
    j["ranks"] = o.ranks;
    j["shard_size"] = o.shard_size;
    j["fsync"] = o.fsync;
    j["sparse"] = o.sparse;
    nlohmann::json cks = nlohmann::json::array();
    for (const auto& c : r.checkpoints) cks.push_back(to_json(c));
    j["checkpoints"] = cks;
    nlohmann::json dr = nlohmann::json::array();
    for (const auto& d : r.drains) {
      dr.push_back({{"job", d.job},
                    {"path", d.path},
                    {"step", d.step},
                    {"files", d.files},
                    {"bytes", d.bytes},
                    {"seconds", d.seconds},
                    {"ok", d.ok}});
    }
    j["drains"] = dr;
    j["drain_backlog_max_bytes"] = r.drain_backlog_max;
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& x : r.restores) {
      rs.push_back({{"job", x.job},
                    {"path", x.path},
                    {"step", x.step},
                    {"files", x.files},
                    {"bytes", x.bytes},
                    {"ranks", x.ranks},
                    {"resharded", x.resharded},
                    {"locate_seconds", x.locate_seconds},
                    {"read_seconds", x.read_seconds},
                    {"total_seconds", x.total_seconds},
                    {"throughput_bytes_per_second", x.throughput()},
                    {"ok", x.ok}});
    }
    j["restores"] = rs;
    if (o.fill_to) {
      j["fill"] = {{"threshold", *o.fill_to}, {"reached", r.fill_reached}, {"level", r.fill_level}};
    }
    j["totals"] = {{"committed", committed},     {"partial", partial},
                   {"in_progress", in_progress}, {"bytes", bytes},
                   {"seconds", r.seconds},       {"throughput_bytes_per_second", throughput}};
    if (expect) {
      nlohmann::json cs = nlohmann::json::array();
      for (const auto& c : results)
        cs.push_back({{"check", c.name}, {"ok", c.ok}, {"detail", c.detail}});
      j["detection"] = cs;
    }
    out << j.dump(2) << "\n";
  } else {
    if (format == "table") {
      std::vector<std::vector<std::string>> rows;
      rows.push_back({"CHECKPOINT", "STATE", "FILES", "SIZE", "TIME", "WRITE", "SKEW", "THROUGHPUT",
                      "META-OPS/S", "WINDOW"});
      for (const auto& c : r.checkpoints) {
        char ops[32];
        static_cast<void>(std::snprintf(ops, sizeof ops, "%.1f", c.metadata_ops_per_second()));
        rows.push_back({c.path, std::string(burst::outcome_name(c.outcome)),
                        std::to_string(c.files), human_bytes(static_cast<double>(c.bytes)),
                        secs(c.duration), secs(c.write_seconds), secs(c.skew_seconds),
                        rate(c.throughput()), ops,
                        c.window_met ? (*c.window_met ? "met" : "missed") : "-"});
      }
      out << text_columns(rows);
      for (const auto& c : r.checkpoints) {
        if (!c.reason.empty()) out << "  " << c.path << ": " << c.reason << "\n";
      }
      if (!r.restores.empty()) {
        std::vector<std::vector<std::string>> rr;
        rr.push_back({"RESTORE", "FILES", "SIZE", "LOCATE", "READ", "TOTAL", "THROUGHPUT"});
        for (const auto& x : r.restores) {
          rr.push_back({x.path, std::to_string(x.files), human_bytes(static_cast<double>(x.bytes)),
                        secs(x.locate_seconds), secs(x.read_seconds), secs(x.total_seconds),
                        rate(x.throughput())});
        }
        out << text_columns(rr);
      }
    } else {
      for (const auto& x : r.restores) {
        out << "restore " << x.path << " files=" << x.files << " bytes=" << x.bytes
            << " locate=" << secs(x.locate_seconds) << " read=" << secs(x.read_seconds)
            << " total=" << secs(x.total_seconds) << " throughput=" << rate(x.throughput())
            << (x.ok ? "" : " FAILED") << "\n";
      }
    }
    for (const auto& d : r.drains) {
      if (!d.ok) out << "drain of " << d.path << " failed\n";
    }
    if (!o.drain_to.empty()) {
      out << "drain: " << r.drains.size() << " checkpoints to " << o.drain_to
          << ", backlog peaked at " << human_bytes(static_cast<double>(r.drain_backlog_max))
          << "\n";
    }
    if (o.fill_to) {
      out << "fill: " << (r.fill_reached ? "stopped at " : "did not reach ") << pct(*o.fill_to)
          << ", file system now " << pct(r.fill_level) << "\n";
    }
    out << "total: " << committed << " committed, " << partial << " partial, " << in_progress
        << " in progress; " << human_bytes(static_cast<double>(bytes)) << " written in "
        << secs(r.seconds) << " (" << rate(throughput) << ")\n";
    for (const auto& c : results) {
      out << "check " << (c.ok ? "ok     " : "MISSING") << " " << c.name << ": " << c.detail
          << "\n";
    }
  }
  if (signals.signal() != 0) return 128 + signals.signal();
  return checks_ok ? 0 : 1;
}

}  // namespace ckptmon
