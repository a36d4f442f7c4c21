#include "collectors/tier_io.hpp"

#include <algorithm>

#include "collectors/tier_stats.hpp"
#include "util/log.hpp"

namespace ckptmon {
namespace {

// Distinct messages remembered for "log once"; past this the set is cleared.
constexpr std::size_t kMaxRemembered = 256;

void log_once(std::set<std::string>& logged, const std::string& who, const std::string& what,
              const std::string& msg) {
  if (logged.size() >= kMaxRemembered) logged.clear();
  if (logged.insert(who + "\n" + what + "\n" + msg).second) {
    log::warn(what, {{"target", who}, {"err", msg}});
  }
}

void forget(std::set<std::string>& logged, const std::string& who) {
  std::erase_if(logged, [&](const std::string& k) { return k.starts_with(who + "\n"); });
}

// `unknown`: what the read could not know, not errors (SourceRead::unknown,
// NetRead::unknown, NodeRead::unknown), each logged once.
void account(IoState& io, const IoFold& f, const std::string& who, const std::string& error,
             std::set<std::string>& logged, const std::vector<std::string>& unknown = {}) {
  if (f.error) {
    ++io.read_errors;
    log_once(logged, who, "I/O counters unreadable", error);
  }
  if (f.reset) {
    ++io.counter_resets;
    log_once(logged, who,
             "I/O counter went backwards: counted as a reset, no increase this interval",
             "device replaced, module reloaded or counter wrapped");
  }
  if (f.recovered) {
    log::info("I/O counters readable again", {{"target", who}});
    forget(logged, who);
  }
  if (f.rebaselined) {
    log::info("I/O source changed or came back: new baseline", {{"target", who}});
  }
  for (const std::string& u : unknown) log_once(logged, who, "I/O figure not known", u);
}

std::shared_ptr<IoState> copy_io(const State& state) {
  return state.io ? std::make_shared<IoState>(*state.io) : std::make_shared<IoState>();
}

// Drops tiers and interfaces a reload removed.
void prune(IoState& io, const State& state) {
  std::erase_if(io.tiers, [&](const auto& kv) { return !state.tiers.contains(kv.first); });
  if (state.config) {
    const auto& want = state.config->network.interfaces;
    std::erase_if(io.interfaces, [&](const auto& kv) {
      return std::find(want.begin(), want.end(), kv.first) == want.end();
    });
  }
}

bool backwards(const IoCounters& now, const IoCounters& last) {
  if (now.read_bytes < last.read_bytes || now.written_bytes < last.written_bytes) return true;
  if (now.device_busy_seconds < last.device_busy_seconds ||
      now.device_weighted_seconds < last.device_weighted_seconds) {
    return true;
  }
  for (std::size_t i = 0; i < kMetaOpCount; ++i) {
    if (now.metadata_ops[i] < last.metadata_ops[i]) return true;
    if (now.metadata_seconds[i] < last.metadata_seconds[i]) return true;
  }
  return false;
}

bool backwards(const std::array<double, kMetaOpCount>& now,
               const std::array<double, kMetaOpCount>& last) {
  for (std::size_t i = 0; i < kMetaOpCount; ++i) {
    if (now[i] < last[i]) return true;
  }
  return false;
}

}  // namespace

NodeSample node_sample(const NodeIo& n, double now) {
  NodeSample s;
  s.time = now;
  const auto mem = static_cast<std::size_t>(PressureResource::kMemory);
  const auto io = static_cast<std::size_t>(PressureResource::kIo);
  s.memory_full_seconds = n.pressure_seconds[mem][1];
  s.io_full_seconds = n.pressure_seconds[io][1];
  if (n.memory_dirty_bytes && n.memory_writeback_bytes) {
    s.dirty_bytes = *n.memory_dirty_bytes + *n.memory_writeback_bytes;
  }
  return s;
}

IoFold fold_tier_read(TierIo& t, IoSource source, const SourceRead& r, double now) {
  IoFold f;
  if (!r.ok) {
    f.error = true;
    t.ok = false;
    t.error = r.error;
    ++t.errors;
    t.source = source;
    if (!r.devices.empty()) t.devices = r.devices;
    return f;
  }
  f.recovered = !t.ok && !t.error.empty();
  t.ok = true;
  t.error.clear();
  if (source == IoSource::kNone) {
    t.source = IoSource::kNone;
    t.devices.clear();
    t.has_totals = false;
    t.has_raw = false;
    t.totals = {};
    t.history.samples.clear();
    t.has_metadata_ops = false;
    t.has_metadata_seconds = false;
    return f;
  }
  if (t.has_raw && (source != t.source || r.devices != t.devices)) {
    f.rebaselined = true;
    t.has_raw = false;
  }
  t.source = source;
  t.devices = r.devices;
  t.has_metadata_ops = r.has_metadata_ops;
  if (t.has_raw && r.has_metadata_seconds != t.has_metadata_seconds) {
    f.rebaselined = true;
    t.has_raw = false;
  }
  t.has_metadata_seconds = r.has_metadata_seconds;
  if (t.has_raw && r.has_device_times != t.has_device_times) {
    f.rebaselined = true;  // a member without the time fields came or went
    t.has_raw = false;
  }
  t.has_device_times = r.has_device_times;
  t.device_in_flight =
      r.has_device_times ? std::optional<double>(r.device_in_flight) : std::nullopt;
  if (!t.has_raw) {
    if (!t.has_totals) {
      t.totals = r.raw;
      t.metadata_rtt_seconds = r.rtt_seconds;
      t.metadata_retransmissions = r.retransmissions;
      t.has_totals = true;
    }
    t.last_raw = r.raw;
    t.last_raw_rtt = r.rtt_seconds;
    t.last_raw_retransmissions = r.retransmissions;
    t.has_raw = true;
    t.history.add({now, t.totals});
    return f;
  }
  if (backwards(r.raw, t.last_raw) || backwards(r.rtt_seconds, t.last_raw_rtt) ||
      backwards(r.retransmissions, t.last_raw_retransmissions)) {
    f.reset = true;
    ++t.resets;
    t.last_raw = r.raw;
    t.last_raw_rtt = r.rtt_seconds;
    t.last_raw_retransmissions = r.retransmissions;
    t.history.add({now, t.totals});
    return f;
  }
  const bool have_prev = !t.history.samples.empty();
  const IoSample prev = have_prev ? t.history.samples.back() : IoSample{};
  t.totals.read_bytes += r.raw.read_bytes - t.last_raw.read_bytes;
  t.totals.written_bytes += r.raw.written_bytes - t.last_raw.written_bytes;
  t.totals.device_busy_seconds += r.raw.device_busy_seconds - t.last_raw.device_busy_seconds;
  t.totals.device_weighted_seconds +=
      r.raw.device_weighted_seconds - t.last_raw.device_weighted_seconds;
  for (std::size_t i = 0; i < kMetaOpCount; ++i) {
    t.totals.metadata_ops[i] += r.raw.metadata_ops[i] - t.last_raw.metadata_ops[i];
    t.totals.metadata_seconds[i] += r.raw.metadata_seconds[i] - t.last_raw.metadata_seconds[i];
    t.metadata_rtt_seconds[i] += r.rtt_seconds[i] - t.last_raw_rtt[i];
    t.metadata_retransmissions[i] += r.retransmissions[i] - t.last_raw_retransmissions[i];
  }
  t.last_raw = r.raw;
  t.last_raw_rtt = r.rtt_seconds;
  t.last_raw_retransmissions = r.retransmissions;
  if (have_prev && now > prev.time) {
    const double dt = now - prev.time;
    t.best_read_bytes_per_second = std::max(t.best_read_bytes_per_second,
                                            (t.totals.read_bytes - prev.counters.read_bytes) / dt);
    t.best_written_bytes_per_second =
        std::max(t.best_written_bytes_per_second,
                 (t.totals.written_bytes - prev.counters.written_bytes) / dt);
  }
  t.history.add({now, t.totals});
  return f;
}

IoFold fold_net_read(NetInterfaceIo& n, const NetRead& r, double now) {
  IoFold f;
  if (!r.ok) {
    f.error = true;
    n.ok = false;
    n.error = r.error;
    ++n.errors;
    n.has_raw = false;  // when it comes back, its counters start over
    return f;
  }
  f.recovered = !n.ok && !n.error.empty();
  n.ok = true;
  n.error.clear();
  n.infiniband = r.infiniband;
  n.link_speed_bytes_per_second = r.link_speed_bytes_per_second;
  if (r.counters_unsupported) {
    // No counters to fold: no totals (absent, not 0) and no history.
    n.has_totals = false;
    n.has_raw = false;
    n.history.clear();
    return f;
  }
  const auto rx = static_cast<double>(r.receive_bytes);
  const auto tx = static_cast<double>(r.transmit_bytes);
  if (!n.has_raw) {
    if (n.has_totals) {
      f.rebaselined = true;
    } else {
      n.receive_bytes = rx;
      n.transmit_bytes = tx;
      n.has_totals = true;
    }
  } else if (rx < n.last_raw_receive || tx < n.last_raw_transmit) {
    f.reset = true;
    ++n.resets;
  } else {
    n.receive_bytes += rx - n.last_raw_receive;
    n.transmit_bytes += tx - n.last_raw_transmit;
  }
  n.has_raw = true;
  n.last_raw_receive = rx;
  n.last_raw_transmit = tx;
  if (n.history.empty() || now > n.history.back().time) {
    n.history.push_back({now, n.receive_bytes, n.transmit_bytes});
    while (n.history.size() > n.capacity) n.history.pop_front();
  }
  return f;
}

void update_shared_with(IoState& io) {
  for (auto& [name, t] : io.tiers) {
    t.shared_with.clear();
    if (t.source == IoSource::kNone || t.devices.empty()) continue;
    for (const auto& [other, o] : io.tiers) {
      if (other != name && o.source == t.source && o.devices == t.devices) {
        t.shared_with.push_back(other);
      }
    }
  }
}

void TierIoCollector::configure(const Config& cfg) {
  tiers_ = cfg.tiers;
  interfaces_ = cfg.network.interfaces;
  proc_path_ = cfg.global.proc_path;
  sys_path_ = cfg.global.sys_path;
  timeout_ = cfg.global.probe_timeout;
  interval_ = cfg.global.scan_interval;
}

std::vector<std::string> TierIoCollector::targets() const {
  std::vector<std::string> out;
  out.reserve(tiers_.size() + 1);
  for (const auto& t : tiers_) out.push_back(t.name);
  if (!interfaces_.empty()) out.push_back(kNetworkTarget);
  out.push_back(kNodeTarget);
  return out;
}

Job TierIoCollector::prepare(const std::string& target, const State& /*state*/) {
  if (target == kNodeTarget) {
    return [proc = proc_path_, clock = clock_, logged = logged_]() -> Update {
      NodeRead r = read_node_pressure(proc);
      const double now = clock->now();
      return [r = std::move(r), now, logged](State& state) {
        auto next = copy_io(state);
        // What was read stands; what was not is unknown (nullopt), not the
        // last value. The samples carry on.
        std::deque<NodeSample> history = std::move(next->node.history);
        next->node = r.node;
        next->node.history = std::move(history);
        if (r.ok) next->node.add(node_sample(r.node, now));
        IoFold f;
        f.error = !r.ok;
        account(*next, f, "node", r.error, *logged, r.unknown);
        state.io = std::move(next);
      };
    };
  }
  if (target == kNetworkTarget) {
    return [ifs = interfaces_, sys = sys_path_, clock = clock_, logged = logged_]() -> Update {
      std::vector<NetRead> reads;
      reads.reserve(ifs.size());
      for (const std::string& name : ifs) reads.push_back(read_net_interface(sys, name));
      const double now = clock->now();
      return [ifs, reads = std::move(reads), now, logged](State& state) {
        auto next = copy_io(state);
        for (std::size_t i = 0; i < ifs.size(); ++i) {
          if (state.config && std::find(state.config->network.interfaces.begin(),
                                        state.config->network.interfaces.end(),
                                        ifs[i]) == state.config->network.interfaces.end()) {
            continue;  // removed by a reload meanwhile
          }
          NetInterfaceIo& n = next->interfaces[ifs[i]];
          n.name = ifs[i];
          const IoFold f = fold_net_read(n, reads[i], now);
          account(*next, f, "interface " + ifs[i], reads[i].error, *logged, reads[i].unknown);
        }
        prune(*next, state);
        state.io = std::move(next);
      };
    };
  }
  std::string path;
  std::uint64_t generation = 0;
  for (const auto& t : tiers_) {
    if (t.name == target) {
      path = t.path;
      generation = t.generation;
    }
  }
  return [path, generation, target, proc = proc_path_, sys = sys_path_, clock = clock_,
          logged = logged_]() -> Update {
    const TierMount tm = resolve_tier_mount(path, proc);
    IoSource source = IoSource::kNone;
    SourceRead r;
    if (tm.ok) {
      source = io_source_for(tm.mount);
      switch (source) {
        case IoSource::kBlock:
          r = read_block_source(proc, sys, tm.mount);
          break;
        case IoSource::kNfs:
          r = read_nfs_source(proc, tm.mount);
          break;
        case IoSource::kLustre:
          r = read_lustre_source(proc, sys, tm.mount);
          break;
        case IoSource::kNone:
          r.ok = true;  // not an error: nothing to read
          break;
      }
    }
    const double now = clock->now();
    return [tm, source, r = std::move(r), path, generation, target, now, logged](State& state) {
      // The tier may have been removed or re-pointed by a reload meanwhile.
      if (!state.current_tier("tier_io", target, generation)) return;
      auto next = copy_io(state);
      TierIo& t = next->tiers[target];
      if (!tm.ok) {
        // The tier root is down (tier_stats says why): the source is unknown
        // now, which is not a read error of the source.
        t.ok = false;
        t.error = "tier root: " + tm.error;
      } else {
        const IoFold f = fold_tier_read(t, source, r, now);
        account(*next, f, "tier " + target, r.error, *logged, r.unknown);
      }
      prune(*next, state);
      update_shared_with(*next);
      state.io = std::move(next);
    };
  };
}

void TierIoCollector::fail(const std::string& target, const std::string& error, State& state) {
  auto next = copy_io(state);
  if (target == kNodeTarget) {
    std::deque<NodeSample> history = std::move(next->node.history);
    next->node = {};  // not read this interval: unknown
    next->node.history = std::move(history);
    IoFold f;
    f.error = true;
    account(*next, f, "node", error, *logged_);
  } else if (target == kNetworkTarget) {
    for (const std::string& name : interfaces_) {
      NetInterfaceIo& n = next->interfaces[name];
      n.name = name;
      NetRead r;
      r.error = error;
      account(*next, fold_net_read(n, r, clock_->now()), "interface " + name, error, *logged_);
    }
  } else {
    if (!state.tiers.contains(target)) return;
    TierIo& t = next->tiers[target];
    t.ok = false;
    t.error = error;
    ++t.errors;
    IoFold f;
    f.error = true;
    account(*next, f, "tier " + target, error, *logged_);
  }
  prune(*next, state);
  state.io = std::move(next);
}

void TierIoCollector::on_deadline(const std::string& target, State& state) {
  fail(target, "I/O counters not read within " + format_duration(timeout_), state);
}

void TierIoCollector::on_failure(const std::string& target, const std::string& error,
                                 State& state) {
  fail(target, error, state);
}

}  // namespace ckptmon
