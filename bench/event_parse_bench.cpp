// Catch-up speed of the event-log parser (issue 4): a 1,000,000-line backlog,
// generated in memory, parsed by
//   (a) a bare simdjson parse_many loop touching each document's `event` (the floor),
//   (b) ckptmon's EventParser producing validated Events, chunk by chunk as the tailer reads,
//   (c) nlohmann_json line by line.
// Prints lines/s for each and the ratio (b)/(a). Run:
//   ./build/bench/event_parse_bench --benchmark_repetitions=3

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <simdjson.h>
#include <nlohmann/json.hpp>

#include "bench/event_backlog.hpp"
#include "events/parser.hpp"

namespace {

constexpr std::size_t kLines = 1'000'000;
constexpr std::size_t kTailerChunk = 256 << 10;  // what a tailer reads per call

const std::string& backlog() { return ckptmon::bench::event_backlog(); }

void report(benchmark::State& state, std::size_t lines, std::size_t good) {
  if (lines != kLines || good != kLines) {
    state.SkipWithError("did not see every line as a valid event");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kLines));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * backlog().size()));
}

// (a) The floor: simdjson's own batched parse, touching only `event`.
void BM_SimdjsonParseMany(benchmark::State& state) {
  simdjson::padded_string padded(backlog());
  simdjson::dom::parser parser;
  std::size_t lines = 0, good = 0;
  for (auto _ : state) {
    lines = good = 0;
    simdjson::dom::document_stream stream;
    if (parser.parse_many(padded, 1 << 20).get(stream)) {
      state.SkipWithError("parse_many failed");
      return;
    }
    for (auto doc : stream) {
      ++lines;
      std::string_view ev;
      if (!doc["event"].get(ev)) ++good;
      benchmark::DoNotOptimize(ev);
    }
  }
  report(state, lines, good);
}

// (a') The same floor with the On Demand front end.
void BM_SimdjsonIterateMany(benchmark::State& state) {
  simdjson::padded_string padded(backlog());
  simdjson::ondemand::parser parser;
  std::size_t lines = 0, good = 0;
  for (auto _ : state) {
    lines = good = 0;
    simdjson::ondemand::document_stream stream;
    if (parser.iterate_many(padded, 1 << 20).get(stream)) {
      state.SkipWithError("iterate_many failed");
      return;
    }
    for (auto doc : stream) {
      ++lines;
      std::string_view ev;
      if (!doc["event"].get_string().get(ev)) ++good;
      benchmark::DoNotOptimize(ev);
    }
  }
  report(state, lines, good);
}

// (a'') simdjson DOM one line at a time (what a line-oriented reader pays before validating).
void BM_SimdjsonPerLine(benchmark::State& state) {
  const std::string& text = backlog();
  simdjson::dom::parser parser;
  std::size_t lines = 0, good = 0;
  for (auto _ : state) {
    lines = good = 0;
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t nl = text.find('\n', at);
      // The rest of the buffer serves as padding except near its end.
      bool padded = text.size() - nl >= simdjson::SIMDJSON_PADDING;
      simdjson::dom::element doc;
      ++lines;
      if (!parser.parse(text.data() + at, nl - at, !padded).get(doc)) {
        std::string_view ev;
        if (!doc["event"].get(ev)) ++good;
        benchmark::DoNotOptimize(ev);
      }
      at = nl + 1;
    }
  }
  report(state, lines, good);
}

// (b) ckptmon: validated Events, in tailer-sized chunks, collected per chunk
// into one reused ChunkResult (as a tailer would hold one per parser).
void BM_EventParserChunks(benchmark::State& state) {
  const std::string& text = backlog();
  ckptmon::EventParserOptions opts;
  opts.batch_bytes = static_cast<std::size_t>(state.range(0));
  ckptmon::EventParser parser(opts);
  ckptmon::ChunkResult r;
  std::size_t lines = 0, good = 0;
  for (auto _ : state) {
    lines = good = 0;
    ckptmon::ParseCursor cursor;
    std::size_t at = 0;
    while (at < text.size()) {
      std::string_view chunk(text.data() + at, std::min(kTailerChunk, text.size() - at));
      at += parser.parse_chunk(chunk, cursor, r);
      for (const auto& l : r.lines()) good += l.status == ckptmon::LineStatus::kOk;
      lines += r.lines().size();
      benchmark::DoNotOptimize(r);
    }
  }
  report(state, lines, good);
}

// (b'') The same without reuse: a fresh ChunkResult (and fresh strings) per chunk.
void BM_EventParserChunksFresh(benchmark::State& state) {
  const std::string& text = backlog();
  ckptmon::EventParser parser;
  std::size_t lines = 0, good = 0;
  for (auto _ : state) {
    lines = good = 0;
    ckptmon::ParseCursor cursor;
    std::size_t at = 0;
    while (at < text.size()) {
      std::string_view chunk(text.data() + at, std::min(kTailerChunk, text.size() - at));
      ckptmon::ChunkResult r = parser.parse_chunk(chunk, cursor);
      for (const auto& l : r.lines()) good += l.status == ckptmon::LineStatus::kOk;
      lines += r.lines().size();
      at += r.consumed;
      benchmark::DoNotOptimize(r);
    }
  }
  report(state, lines, good);
}

// (b') ckptmon with the visitor form (one reused LineResult), over the whole buffer.
void BM_EventParserVisitor(benchmark::State& state) {
  const std::string& text = backlog();
  ckptmon::EventParserOptions opts;
  opts.batch_bytes = static_cast<std::size_t>(state.range(0));
  ckptmon::EventParser parser(opts);
  std::size_t lines = 0, good = 0;
  for (auto _ : state) {
    lines = good = 0;
    ckptmon::ParseCursor cursor;
    parser.parse_chunk(text, cursor, [&](const ckptmon::LineResult& r) {
      ++lines;
      good += r.status == ckptmon::LineStatus::kOk;
      benchmark::DoNotOptimize(r.event.bytes);
    });
  }
  report(state, lines, good);
}

// (c) nlohmann_json, line by line, touching `event`.
void BM_NlohmannLines(benchmark::State& state) {
  const std::string& text = backlog();
  std::size_t lines = 0, good = 0;
  for (auto _ : state) {
    lines = good = 0;
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t nl = text.find('\n', at);
      auto j =
          nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(at),
                                text.begin() + static_cast<std::ptrdiff_t>(nl), nullptr, false);
      ++lines;
      if (!j.is_discarded() && j.is_object()) {
        auto it = j.find("event");
        if (it != j.end() && it->is_string()) ++good;
      }
      benchmark::DoNotOptimize(j);
      at = nl + 1;
    }
  }
  report(state, lines, good);
}

BENCHMARK(BM_SimdjsonParseMany)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_SimdjsonIterateMany)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_SimdjsonPerLine)->Unit(benchmark::kMillisecond)->MinTime(2.0);
// Argument: EventParserOptions::batch_bytes (0: one simdjson parse per line).
BENCHMARK(BM_EventParserChunks)->Arg(64 << 10)->Arg(0)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_EventParserChunksFresh)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_EventParserVisitor)
    ->Arg(64 << 10)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);
BENCHMARK(BM_NlohmannLines)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Keeps lines/s per benchmark so main() can print the ratio the issue asks for.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      auto it = run.counters.find("items_per_second");
      if (it != run.counters.end()) {
        std::string name = run.run_name.function_name;
        if (!run.run_name.args.empty()) name += "/" + run.run_name.args;
        rates_[name].push_back(it->second.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double median(const std::string& name) const {
    auto it = rates_.find(name);
    if (it == rates_.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::vector<double>> rates_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  static_cast<void>(std::fprintf(stderr, "backlog: %zu lines, %.1f MB\n", kLines,
                                 static_cast<double>(backlog().size()) / 1e6));
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  double floor = reporter.median("BM_SimdjsonParseMany");
  std::printf("\nmedian lines/s:\n");
  for (const char* name :
       {"BM_SimdjsonParseMany", "BM_SimdjsonIterateMany", "BM_SimdjsonPerLine",
        "BM_EventParserChunks/65536", "BM_EventParserChunks/0", "BM_EventParserChunksFresh",
        "BM_EventParserVisitor/65536", "BM_EventParserVisitor/0", "BM_NlohmannLines"}) {
    double r = reporter.median(name);
    if (r > 0) {
      std::printf("  %-30s %12.0f  (%.2fx of parse_many)\n", name, r, floor > 0 ? r / floor : 0);
    }
  }
  double ours = reporter.median("BM_EventParserChunks/65536");
  if (floor > 0 && ours > 0) {
    std::printf(
        "ratio (b)/(a) = EventParserChunks/65536 / SimdjsonParseMany = %.2f (target >= 0.50)\n",
        ours / floor);
  }
  benchmark::Shutdown();
  return 0;
}
