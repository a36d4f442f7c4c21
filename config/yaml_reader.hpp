#pragma once
// Strict reading of YAML configuration: every key is known, every value has
// the expected type, and every rejection names file:line:column and the key.
// Not thread-safe; used by one loader at a time.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "util/duration.hpp"

namespace ckptmon {

struct ConfigError {
  std::string file;
  int line = 0;     // 1-based; 0 when the error is not tied to a position
  int column = 0;   // 1-based
  std::string key;  // dotted path such as tiers[1].role; empty for file-level errors
  std::string message;

  // "file:line:column: key: message"
  std::string to_string() const;
};

// Collects errors for one file.
class ErrorSink {
 public:
  explicit ErrorSink(std::string file) : file_(std::move(file)) {}
  void add(const YAML::Mark& mark, std::string key, std::string message);
  void add_file_error(std::string message);
  const std::string& file() const { return file_; }
  std::vector<ConfigError>& errors() { return errors_; }
  bool empty() const { return errors_.empty(); }

 private:
  std::string file_;
  std::vector<ConfigError> errors_;
};

// One value looked up in a mapping, with where to point at when it is wrong.
struct YamlField {
  YAML::Node value;  // undefined when the key is absent
  YAML::Mark key_mark;
  std::string path;  // dotted key path for messages, e.g. tiers[1].role

  bool present() const { return value.IsDefined(); }
  // A null value ("path:" with nothing after it) has no position of its own
  // worth showing; point at its key instead.
  YAML::Mark mark() const { return value.IsNull() ? key_mark : value.Mark(); }
};

// One YAML mapping read against a fixed set of keys. Reading a key marks it
// known; finish() reports every key that was never asked for, and duplicate keys.
class YamlMap {
 public:
  YamlMap(const YAML::Node& node, std::string path, ErrorSink& sink);
  // False when the node was not a mapping (already reported).
  bool ok() const { return ok_; }
  // The value for `key` (undefined when absent).
  YamlField get(std::string_view key);
  // Like get(), but reports a missing key.
  YamlField require(std::string_view key);
  void finish();
  std::string key_path(std::string_view key) const;
  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node node_;
  std::string path_;
  ErrorSink& sink_;
  bool ok_ = false;
  std::vector<std::string> asked_;
};

// Typed scalar readers. Each reports a precise error and returns nullopt on a
// wrong type or value.
std::optional<std::string> read_string(const YamlField& f, ErrorSink& sink);
std::optional<Duration> read_duration(const YamlField& f, ErrorSink& sink);
std::optional<std::int64_t> read_int(const YamlField& f, ErrorSink& sink, std::int64_t min,
                                     std::int64_t max);
std::optional<double> read_double(const YamlField& f, ErrorSink& sink, double min, double max);
std::optional<bool> read_bool(const YamlField& f, ErrorSink& sink);
std::optional<std::string> read_enum(const YamlField& f, ErrorSink& sink,
                                     std::initializer_list<std::string_view> allowed);
// A size such as 64KiB, 50MiB or a plain number of bytes, from `min` to `max`.
std::optional<std::uint64_t> read_byte_size(const YamlField& f, ErrorSink& sink, std::uint64_t min,
                                            std::uint64_t max);
// A string that must be an absolute path.
std::optional<std::string> read_abs_path(const YamlField& f, ErrorSink& sink);

// A duration of at least `min`; a shorter one is reported as
// "must be at least <min>, got <value>".
std::optional<Duration> read_duration_at_least(const YamlField& f, ErrorSink& sink, Duration min);
// The same in seconds (min_seconds is shown rounded to milliseconds).
std::optional<double> read_seconds(const YamlField& f, ErrorSink& sink, double min_seconds);

// Optional keys of a mapping: `out` keeps its value when the key is absent or
// wrong (wrong is reported).
void duration_key(YamlMap& m, std::string_view key, Duration& out, ErrorSink& sink, Duration min);
void seconds_key(YamlMap& m, std::string_view key, double& out, ErrorSink& sink,
                 double min_seconds);
void int_key(YamlMap& m, std::string_view key, std::int64_t& out, ErrorSink& sink, std::int64_t min,
             std::int64_t max);
void double_key(YamlMap& m, std::string_view key, double& out, ErrorSink& sink, double min,
                double max);
void string_key(YamlMap& m, std::string_view key, std::string& out, ErrorSink& sink);

// Numbers and durations in messages: the shortest text that reads back
// exactly ("0.85", "100"); seconds as a duration rounded to milliseconds ("1m30s").
std::string fmt_number(double v);
std::string fmt_seconds(double s);

// Reads a configuration file of at most `max_bytes`; on failure returns
// nullopt and sets `error` ("cannot open: ...", "is a directory, not a regular
// file...", "file is larger than ..."). Only regular files are read: a FIFO,
// device or directory is refused without waiting on it.
// "a directory", "a FIFO", ... for st_mode `mode`.
const char* file_kind(unsigned mode);
std::optional<std::string> read_config_text(const std::string& path, std::size_t max_bytes,
                                            ConfigError* error);

// A loaded configuration, or every error found in it.
template <typename T>
struct ConfigResult {
  std::optional<T> config;
  std::vector<ConfigError> errors;  // empty when config is set
};

// YAML::Load that reports a syntax error to `sink` instead of throwing.
std::optional<YAML::Node> load_yaml(std::string_view text, ErrorSink& sink);

// Parses `text` and hands the root to `read(root, sink)`: the value it
// returns when nothing was reported, else all the errors.
template <typename T, typename Read>
ConfigResult<T> parse_yaml_config(std::string_view text, const std::string& file, Read read) {
  ErrorSink sink(file);
  ConfigResult<T> result;
  if (auto root = load_yaml(text, sink)) {
    T value = read(*root, sink);
    if (sink.empty()) result.config = std::move(value);
  }
  if (!sink.empty()) result.errors = std::move(sink.errors());
  return result;
}

// read_config_text, then `parse(text, path)`; a file that cannot be read is one error.
template <typename T, typename Parse>
ConfigResult<T> load_config_file_with(const std::string& path, std::size_t max_bytes, Parse parse) {
  ConfigError error;
  auto text = read_config_text(path, max_bytes, &error);
  if (!text) {
    ConfigResult<T> r;
    r.errors.push_back(std::move(error));
    return r;
  }
  return parse(*text, path);
}

// How a node looks in an error message: "a mapping", "a list", "null", or the quoted scalar.
std::string describe(const YAML::Node& n);

// A mapping of job regex (matched against the whole job name) to a mapping
// of settings, as `namespaces:` and `estate.jobs:` take it. For each entry
// whose key is a scalar that compiles, `each(key, regex, settings)` reads the
// settings (path "<f.path>.<key>"), then unknown keys are reported. A value
// that is no mapping, a key that is no scalar or an invalid regex is an
// error naming it; the entry is skipped. `fields` names the settings for the
// error ("owner, group").
void read_job_regex_map(
    const YamlField& f, std::string_view fields, ErrorSink& sink,
    const std::function<void(const std::string&, std::shared_ptr<const std::regex>, YamlMap&)>&
        each);

}  // namespace ckptmon
