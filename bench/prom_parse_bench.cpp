// Memory and time of parsing one big, valid Prometheus range-query answer
// (issue 27 item 11): parse_prometheus_response (simdjson On-Demand,
// prom/prometheus_api.cpp) against its peer, nlohmann::json's document
// tree (what it replaced), one parser per process so each peak is its own.
//
//   prom_parse_bench ckptmon|nlohmann [MiB]
//
// Prints: parser, body bytes, samples (0 when refused over the cap),
// seconds, and the peak RSS (VmHWM) minus the RSS before parsing (the body
// already built), in MiB.
// bench/prom_parse_bench.sh runs both and prints the ratio.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "prom/prometheus_api.hpp"

namespace {

long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  }
  return -1;
}

std::string matrix(double mib) {
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  const auto target = static_cast<std::size_t>(mib * 1024 * 1024);
  for (int s = 0; body.size() < target; ++s) {
    body += (s ? "," : "") +
            std::string(R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":")") +
            std::to_string(s % 8) + R"(","Hostname":"node)" + std::to_string(s / 8) +
            R"(","hpc_job":"train-)" + std::to_string(s) + R"("},"values":[)";
    for (int i = 0; i < 4000; ++i) {
      body += (i ? "," : "") + std::string("[") + std::to_string(1700000000 + i * 15) + ".5,\"" +
              std::to_string(i % 100) + "\"]";
    }
    body += "]}";
  }
  return body + "]}}";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "ckptmon";
  const double mib = argc > 2 ? std::stod(argv[2]) : 15;
  const std::string body = matrix(mib);
  // The peak so far (building the body) is not the parser's: start from now.
  { std::ofstream("/proc/self/clear_refs") << "5"; }
  const long before = status_kib("VmRSS");
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t samples = 0;
  if (which == "nlohmann") {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    for (const auto& s : j["data"]["result"]) samples += s["values"].size();
  } else {
    const ckptmon::PromResponse r = ckptmon::parse_prometheus_response(body);
    // Refused (over the sample cap): the peak until the refusal is the figure.
    if (!r.ok) static_cast<void>(std::fprintf(stderr, "refused: %s\n", r.error.c_str()));
    for (const auto& s : r.series) samples += s.values.size();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long peak = status_kib("VmHWM");
  std::printf("%s %zu %zu %.3f %.1f\n", which.c_str(), body.size(), samples, secs,
              static_cast<double>(peak - before) / 1024.0);
  return 0;
}
