// Catch-up after downtime (issue 4): a 1,000,000-line event-log backlog on
// disk, ingested through the real tailer path (pread, EventParser, the event
// catalog, one SQLite transaction per batch with the read position), against
// a bare simdjson parse_many loop over the same file, measured in the same run.
// Prints a table of lines/s (median of the repetitions) and the ratio.
//   ./build/bench/tail_bench [repetitions] [read_bytes] [tail-only]

#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <simdjson.h>

#include "bench/event_backlog.hpp"
#include "collectors/manifest_tail.hpp"
#include "store/event_journal.hpp"
#include "store/store.hpp"
#include "util/log.hpp"

namespace fs = std::filesystem;
using ckptmon::LineStatus;

namespace {

constexpr std::size_t kLines = ckptmon::bench::kBacklogLines;

// A broken setup (the bench's own, not what it measures) ends the run.
[[noreturn]] void fail(const std::string& what) {
  static_cast<void>(std::fprintf(stderr, "%s\n", what.c_str()));
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the bench's own thread is the only one by then.
  std::exit(1);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of the whole process (the tailer's worker and the store thread).
double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Rate {
  double wall = 0;  // lines per wall-clock second
  double cpu = 0;   // lines per CPU second
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// (a) The floor: load the file, simdjson parse_many, touch each document's `event`.
Rate bare_parse_many(const std::string& file) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  simdjson::padded_string text;
  if (simdjson::padded_string::load(file).get(text)) std::abort();
  simdjson::dom::parser parser;
  simdjson::dom::document_stream stream;
  if (parser.parse_many(text, 1 << 20).get(stream)) std::abort();
  std::size_t lines = 0;
  for (auto doc : stream) {
    std::string_view ev;
    if (!doc["event"].get(ev)) ++lines;
  }
  const double s = seconds_since(t0);
  const double c = cpu_seconds() - c0;
  if (lines != kLines) {
    fail("parse_many saw " + std::to_string(lines) + " lines");
  }
  return Rate{static_cast<double>(lines) / s, static_cast<double>(lines) / c};
}

// (b) The tailer: a fresh state database, one pass over the backlog.
Rate tailer_catch_up(const fs::path& dir, const std::string& glob, std::size_t read_bytes,
                     std::uint64_t* commits) {
  fs::remove_all(dir / "state");
  std::string error;
  std::shared_ptr<ckptmon::Store> store = ckptmon::Store::open((dir / "state").string(), &error);
  if (!store) {
    fail(error);
  }
  auto ingest = std::make_shared<ckptmon::EventIngest>(ckptmon::make_event_journal(store));
  ckptmon::ManifestConfig m;
  m.glob = glob;
  m.tier = "staging";
  ckptmon::TailerOptions opts;
  opts.read_bytes = read_bytes;
  ckptmon::LogTailer tailer(m, {}, opts, ingest, std::make_shared<ckptmon::SystemClock>());
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  tailer.run();
  const double s = seconds_since(t0);
  const double c = cpu_seconds() - c0;
  auto snap = ingest->snapshot();
  const std::uint64_t ok = snap->totals.lines[static_cast<std::size_t>(LineStatus::kOk)];
  if (ok != kLines) {
    fail("the tailer counted " + std::to_string(ok) + " ok lines");
  }
  *commits = ingest->commits();
  return Rate{static_cast<double>(ok) / s, static_cast<double>(ok) / c};
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::size_t read_bytes = argc > 2 ? static_cast<std::size_t>(std::atoll(argv[2]))
                                          : ckptmon::TailerOptions{}.read_bytes;
  ckptmon::log::init(spdlog::level::warn, ckptmon::log::Format::kLogfmt);

  const fs::path dir =
      fs::temp_directory_path() / ("ckptmon-tail-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir / "logs");
  const std::string file = (dir / "logs" / "events.jsonl").string();
  {
    std::ofstream out(file, std::ios::binary);
    const std::string& text = ckptmon::bench::event_backlog();
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  const std::string glob = (dir / "logs" / "*.jsonl").string();

  std::vector<Rate> bare, tail;
  std::uint64_t commits = 0;
  for (int i = 0; i < reps; ++i) {
    // Interleaved, so a busy neighbour on a shared machine hurts both alike.
    if (argc <= 3 || std::string(argv[3]) != "tail-only") bare.push_back(bare_parse_many(file));
    tail.push_back(tailer_catch_up(dir, glob, read_bytes, &commits));
  }
  struct utsname u {};
  ::uname(&u);
  std::printf("machine: %s, %ld CPUs, %s %s\n", cpu_model().c_str(),
              ::sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release);
  std::printf("backlog: %zu lines, %.1f MB in %s; %d repetitions; %zu-byte reads, %llu commits\n",
              kLines, static_cast<double>(fs::file_size(file)) / 1e6, file.c_str(), reps,
              std::max(read_bytes, ckptmon::TailerOptions{}.max_line_bytes + 2),
              static_cast<unsigned long long>(commits));
  auto pick = [](const std::vector<Rate>& v, double Rate::*f) {
    std::vector<double> out;
    out.reserve(v.size());
    for (const auto& r : v) out.push_back(r.*f);
    return out;
  };
  std::printf("%-44s %14s %14s %14s %14s\n", "path", "wall lines/s", "min", "max", "CPU lines/s");
  auto row = [&](const char* name, const std::vector<Rate>& v) {
    const auto w = pick(v, &Rate::wall);
    std::printf("%-44s %14.0f %14.0f %14.0f %14.0f\n", name, median(w),
                *std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()),
                median(pick(v, &Rate::cpu)));
  };
  if (bare.empty()) bare = tail;  // profiling the tailer alone
  row("(a) simdjson parse_many, bare", bare);
  row("(b) tailer: read, parse, aggregate, commit", tail);
  std::printf("ratio (a)/(b): wall %.2f, CPU %.2f (target <= 2.00); (b) target >= 500000 lines/s\n",
              median(pick(bare, &Rate::wall)) / median(pick(tail, &Rate::wall)),
              median(pick(bare, &Rate::cpu)) / median(pick(tail, &Rate::cpu)));
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) > 0) std::printf("load average during the run: %.2f\n", load[0]);
  fs::remove_all(dir);
  return 0;
}
