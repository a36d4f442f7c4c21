#pragma once
// The 1,000,000-line event-log backlog the catch-up benchmarks share
// (event_parse_bench, tail_bench): generated in memory, deterministic.

#include <cstdio>
#include <random>
#include <string>

namespace ckptmon::bench {

// A realistic log: jobs of 256 ranks saving every few minutes. Per checkpoint:
// start, pause, one shard_written per rank (with a checksum), pause end,
// commit, drain start, one shard_drained per rank, drain done, a cleanup.
// Built once, on the first call.
inline constexpr std::size_t kBacklogLines = 1'000'000;
inline const std::string& event_backlog() {
  static const std::string kText = [n_lines = kBacklogLines] {
    std::mt19937_64 rng(42);
    std::string out;
    out.reserve(n_lines * 260);
    std::size_t lines = 0;
    double ts = 1714564800.0;
    const int ranks = 256;
    const char* algos[] = {"sha256", "crc32c", "xxh64"};
    const int hex_len[] = {64, 8, 16};
    char buf[1024];
    auto emit = [&](int n) {
      out.append(buf, static_cast<std::size_t>(n));
      ++lines;
    };
    auto hex = [&](int len) {
      std::string h;
      for (int i = 0; i < len; ++i) h += "0123456789abcdef"[rng() & 15];
      return h;
    };
    for (int step = 1000; lines < n_lines; step += 1000) {
      const char* job = (step / 1000) % 2 ? "llama-70b-pretrain" : "mixtral-8x7b-sft";
      ts += 300;
      auto line = [&](const char* fmt, auto... args) {
        if (lines < n_lines) emit(std::snprintf(buf, sizeof buf, fmt, args...));
      };
      line(
          "{\"v\":1,\"ts\":%.6f,\"event\":\"checkpoint_start\",\"job\":\"%s\",\"step\":%d,"
          "\"tier\":\"staging\"}\n",
          ts, job, step);
      line("{\"v\":1,\"ts\":%.6f,\"event\":\"pause_start\",\"job\":\"%s\",\"step\":%d}\n", ts, job,
           step);
      for (int r = 0; r < ranks; ++r) {
        int a = static_cast<int>(rng() % 3);
        double end = ts + 20 + static_cast<double>(rng() % 4000) / 1000.0;
        line(
            "{\"v\":1,\"ts\":%.6f,\"event\":\"shard_written\",\"job\":\"%s\",\"step\":%d,"
            "\"tier\":\"staging\",\"rank\":%d,\"path\":\"/nvme/ckpt/%s/step-%07d/__%d_0.distcp\","
            "\"bytes\":%llu,\"start_ts\":%.6f,\"checksum\":\"%s:%s\"}\n",
            end, job, step, r, job, step, r,
            static_cast<unsigned long long>(2'000'000'000ull + rng() % 100'000'000ull), ts,
            algos[a], hex(hex_len[a]).c_str());
      }
      line("{\"v\":1,\"ts\":%.6f,\"event\":\"pause_end\",\"job\":\"%s\",\"step\":%d}\n", ts + 25,
           job, step);
      line(
          "{\"v\":1,\"ts\":%.6f,\"event\":\"checkpoint_commit\",\"job\":\"%s\",\"step\":%d,"
          "\"tier\":\"staging\",\"files\":%d,\"bytes\":%llu}\n",
          ts + 25, job, step, ranks + 1, 530'000'000'000ull);
      line(
          "{\"v\":1,\"ts\":%.6f,\"event\":\"drain_start\",\"job\":\"%s\",\"step\":%d,"
          "\"from_tier\":\"staging\",\"to_tier\":\"rapid\"}\n",
          ts + 26, job, step);
      for (int r = 0; r < ranks; ++r) {
        line(
            "{\"v\":1,\"ts\":%.6f,\"event\":\"shard_drained\",\"job\":\"%s\",\"step\":%d,"
            "\"from_tier\":\"staging\",\"to_tier\":\"rapid\",\"rank\":%d,"
            "\"path\":\"/nvme/ckpt/%s/step-%07d/__%d_0.distcp\",\"bytes\":%llu}\n",
            ts + 30 + r * 0.5, job, step, r, job, step, r,
            static_cast<unsigned long long>(2'000'000'000ull + rng() % 100'000'000ull));
      }
      line(
          "{\"v\":1,\"ts\":%.6f,\"event\":\"drain_done\",\"job\":\"%s\",\"step\":%d,\"ok\":true}\n",
          ts + 160, job, step);
      if (step > 3000)
        line(
            "{\"v\":1,\"ts\":%.6f,\"event\":\"cleanup\",\"job\":\"%s\",\"step\":%d,"
            "\"path\":\"/nvme/ckpt/%s/step-%07d\",\"bytes\":%llu}\n",
            ts + 161, job, step - 3000, job, step - 3000, 530'000'000'000ull);
    }
    return out;
  }();
  return kText;
}

}  // namespace ckptmon::bench
