#include "config/yaml_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/text.hpp"

namespace ckptmon {

std::string fmt_number(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string fmt_seconds(double s) {
  return format_duration(Duration(static_cast<std::int64_t>(std::llround(s * 1000))));
}

std::optional<Duration> read_duration_at_least(const YamlField& f, ErrorSink& sink, Duration min) {
  auto d = read_duration(f, sink);
  if (!d) return std::nullopt;
  if (*d < min) {
    sink.add(f.mark(), f.path,
             "must be at least " + format_duration(min) + ", got " + describe(f.value));
    return std::nullopt;
  }
  return d;
}

std::optional<double> read_seconds(const YamlField& f, ErrorSink& sink, double min_seconds) {
  auto d = read_duration(f, sink);
  if (!d) return std::nullopt;
  const double s = to_seconds(*d);
  if (s < min_seconds) {
    sink.add(f.mark(), f.path,
             "must be at least " + fmt_seconds(min_seconds) + ", got " + describe(f.value));
    return std::nullopt;
  }
  return s;
}

void duration_key(YamlMap& m, std::string_view key, Duration& out, ErrorSink& sink, Duration min) {
  if (auto f = m.get(key); f.present()) {
    if (auto v = read_duration_at_least(f, sink, min)) out = *v;
  }
}

void seconds_key(YamlMap& m, std::string_view key, double& out, ErrorSink& sink,
                 double min_seconds) {
  if (auto f = m.get(key); f.present()) {
    if (auto v = read_seconds(f, sink, min_seconds)) out = *v;
  }
}

void int_key(YamlMap& m, std::string_view key, std::int64_t& out, ErrorSink& sink, std::int64_t min,
             std::int64_t max) {
  if (auto f = m.get(key); f.present()) {
    if (auto v = read_int(f, sink, min, max)) out = *v;
  }
}

void double_key(YamlMap& m, std::string_view key, double& out, ErrorSink& sink, double min,
                double max) {
  if (auto f = m.get(key); f.present()) {
    if (auto v = read_double(f, sink, min, max)) out = *v;
  }
}

void string_key(YamlMap& m, std::string_view key, std::string& out, ErrorSink& sink) {
  if (auto f = m.get(key); f.present()) {
    if (auto v = read_string(f, sink)) out = *v;
  }
}

std::optional<YAML::Node> load_yaml(std::string_view text, ErrorSink& sink) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    sink.add(e.mark, "", "invalid YAML: " + e.msg);
    return std::nullopt;
  }
}

const char* file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

std::optional<std::string> read_config_text(const std::string& path, std::size_t max_bytes,
                                            ConfigError* error) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  // It changes nothing for a regular file, the only kind read.
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *error = ConfigError{path, 0, 0, "", std::string("cannot open: ") + errno_text(errno)};
    return std::nullopt;
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = ConfigError{path, 0, 0, "", std::string("cannot stat: ") + errno_text(errno)};
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = ConfigError{path, 0, 0, "",
                         std::string("is ") + file_kind(st.st_mode) +
                             ", not a regular file; a configuration must be a regular file"};
    return std::nullopt;
  }
  std::string text;
  text.resize(max_bytes + 1);
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = ConfigError{path, 0, 0, "", std::string("cannot read: ") + errno_text(errno)};
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  if (text.size() > max_bytes) {
    const std::string size = max_bytes % (std::size_t{1024} * 1024) == 0
                                 ? std::to_string(max_bytes / (std::size_t{1024} * 1024)) + " MiB"
                                 : std::to_string(max_bytes) + " bytes";
    *error = ConfigError{path, 0, 0, "", "file is larger than " + size};
    return std::nullopt;
  }
  return text;
}

std::string ConfigError::to_string() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += message;
  return out;
}

void ErrorSink::add(const YAML::Mark& mark, std::string key, std::string message) {
  ConfigError e;
  e.file = file_;
  if (!mark.is_null()) {
    e.line = mark.line + 1;
    e.column = mark.column + 1;
  }
  e.key = std::move(key);
  e.message = std::move(message);
  errors_.push_back(std::move(e));
}

void ErrorSink::add_file_error(std::string message) {
  errors_.push_back(ConfigError{file_, 0, 0, "", std::move(message)});
}

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined()) return "nothing";
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return json_quote(n.Scalar());
    default:
      return "nothing";
  }
}

YamlMap::YamlMap(const YAML::Node& node, std::string path, ErrorSink& sink)
    : node_(node), path_(std::move(path)), sink_(sink) {
  if (!node.IsDefined() || node.IsNull()) {
    // An empty section ("global:") reads as an empty mapping.
    node_ = YAML::Node(YAML::NodeType::Map);
    ok_ = true;
    return;
  }
  if (!node.IsMap()) {
    sink_.add(node.Mark(), path_.empty() ? "(top level)" : path_,
              "expected a mapping, got " + describe(node));
    return;
  }
  ok_ = true;
}

std::string YamlMap::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

YamlField YamlMap::get(std::string_view key) {
  asked_.emplace_back(key);
  YamlField f{YAML::Node(YAML::NodeType::Undefined), node_.Mark(), key_path(key)};
  if (!ok_) return f;
  for (YAML::const_iterator it = node_.begin(); it != node_.end(); ++it) {
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    if (k.IsScalar() && k.Scalar() == key) {
      f.value = kv.second;
      f.key_mark = k.Mark();
      return f;
    }
  }
  return f;
}

YamlField YamlMap::require(std::string_view key) {
  YamlField f = get(key);
  if (ok_ && !f.present()) sink_.add(node_.Mark(), f.path, "required key is missing");
  return f;
}

void YamlMap::finish() {
  if (!ok_) return;
  std::map<std::string, int> seen_at;
  for (YAML::const_iterator it = node_.begin(); it != node_.end(); ++it) {
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    if (!k.IsScalar()) {
      sink_.add(k.Mark(), path_.empty() ? "(top level)" : path_,
                "keys must be plain strings, got " + describe(k));
      continue;
    }
    const std::string& name = k.Scalar();
    auto [pos, inserted] = seen_at.emplace(name, k.Mark().line + 1);
    if (!inserted) {
      sink_.add(k.Mark(), key_path(name),
                "duplicate key (first given at line " + std::to_string(pos->second) + ")");
      continue;
    }
    if (std::find(asked_.begin(), asked_.end(), name) == asked_.end()) {
      std::string expected;
      for (const auto& a : asked_) expected += (expected.empty() ? "" : ", ") + a;
      sink_.add(k.Mark(), key_path(name), "unknown key (expected one of: " + expected + ")");
    }
  }
}

std::optional<std::string> read_string(const YamlField& f, ErrorSink& sink) {
  if (!f.value.IsScalar()) {
    sink.add(f.mark(), f.path, "expected a string, got " + describe(f.value));
    return std::nullopt;
  }
  return f.value.Scalar();
}

std::optional<Duration> read_duration(const YamlField& f, ErrorSink& sink) {
  std::optional<Duration> d;
  if (f.value.IsScalar()) d = parse_duration(f.value.Scalar());
  if (!d) {
    sink.add(f.mark(), f.path,
             "expected a duration such as 500ms, 15s, 5m, 2h or 14d, got " + describe(f.value));
  }
  return d;
}

std::optional<std::int64_t> read_int(const YamlField& f, ErrorSink& sink, std::int64_t min,
                                     std::int64_t max) {
  if (f.value.IsScalar()) {
    const std::string& s = f.value.Scalar();
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && ptr == s.data() + s.size() && v >= min && v <= max) return v;
  }
  sink.add(f.mark(), f.path,
           "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
               ", got " + describe(f.value));
  return std::nullopt;
}

std::optional<double> read_double(const YamlField& f, ErrorSink& sink, double min, double max) {
  if (f.value.IsScalar()) {
    const std::string& s = f.value.Scalar();
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && ptr == s.data() + s.size() && v >= min && v <= max) return v;
  }
  sink.add(f.mark(), f.path,
           "expected a number from " + fmt_number(min) + " to " + fmt_number(max) + ", got " +
               describe(f.value));
  return std::nullopt;
}

std::optional<bool> read_bool(const YamlField& f, ErrorSink& sink) {
  if (f.value.IsScalar()) {
    if (f.value.Scalar() == "true") return true;
    if (f.value.Scalar() == "false") return false;
  }
  sink.add(f.mark(), f.path, "expected true or false, got " + describe(f.value));
  return std::nullopt;
}

std::optional<std::string> read_enum(const YamlField& f, ErrorSink& sink,
                                     std::initializer_list<std::string_view> allowed) {
  const std::string list = join(allowed, ", ");
  if (f.value.IsScalar()) {
    for (auto a : allowed) {
      if (f.value.Scalar() == a) return f.value.Scalar();
    }
  }
  sink.add(f.mark(), f.path, "expected one of " + list + ", got " + describe(f.value));
  return std::nullopt;
}

std::optional<std::uint64_t> read_byte_size(const YamlField& f, ErrorSink& sink, std::uint64_t min,
                                            std::uint64_t max) {
  std::optional<std::uint64_t> v;
  if (f.value.IsScalar()) v = parse_byte_size(f.value.Scalar());
  if (!v) {
    sink.add(f.mark(), f.path,
             "expected a size such as 64KiB, 50MiB or a number of bytes, got " + describe(f.value));
    return std::nullopt;
  }
  if (*v < min || *v > max) {
    sink.add(f.mark(), f.path,
             "must be from " + format_byte_size(min) + " to " + format_byte_size(max) + ", got " +
                 describe(f.value));
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> read_abs_path(const YamlField& f, ErrorSink& sink) {
  if (!f.value.IsScalar() || f.value.Scalar().empty() || f.value.Scalar().front() != '/') {
    sink.add(f.mark(), f.path, "expected an absolute path, got " + describe(f.value));
    return std::nullopt;
  }
  return f.value.Scalar();
}

void read_job_regex_map(
    const YamlField& f, std::string_view fields, ErrorSink& sink,
    const std::function<void(const std::string&, std::shared_ptr<const std::regex>, YamlMap&)>&
        each) {
  if (!f.value.IsMap()) {
    sink.add(f.mark(), f.path,
             "expected a mapping of job regex to {" + std::string(fields) + "}, got " +
                 describe(f.value));
    return;
  }
  for (YAML::const_iterator it = f.value.begin(); it != f.value.end(); ++it) {
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    if (!k.IsScalar()) {
      sink.add(k.Mark(), f.path, "expected a job regex as key, got " + describe(k));
      continue;
    }
    const std::string path = f.path + "." + k.Scalar();
    std::shared_ptr<const std::regex> regex;
    try {
      regex = std::make_shared<const std::regex>(k.Scalar());
    } catch (const std::regex_error& e) {
      sink.add(k.Mark(), path, std::string("invalid regex: ") + e.what());
      continue;
    }
    YamlMap m(kv.second, path, sink);
    if (!m.ok()) continue;
    each(k.Scalar(), std::move(regex), m);
    m.finish();
  }
}

}  // namespace ckptmon
