#include "config/network_config.hpp"

#include <algorithm>
#include <regex>

#include "util/text.hpp"

namespace ckptmon {
namespace {

// A netdev name (IFNAMSIZ: at most 15 bytes) or an InfiniBand hca:port.
bool valid_interface_name(const std::string& s) {
  static const std::regex kNetdev("^[A-Za-z0-9_.@-]{1,15}$");
  static const std::regex kIb("^[A-Za-z0-9_.-]{1,63}:[0-9]{1,3}$");
  if (s == "." || s == "..") return false;
  return std::regex_match(s, kNetdev) || std::regex_match(s, kIb);
}

}  // namespace

void read_network(YamlMap& m, NetworkConfig& c, ErrorSink& sink) {
  if (YamlField f = m.get("interfaces"); f.present()) {
    if (!f.value.IsSequence()) {
      sink.add(f.mark(), f.path, "expected a list of interface names, got " + describe(f.value));
    } else if (f.value.size() > kMaxNetworkInterfaces) {
      sink.add(f.mark(), f.path,
               "at most " + std::to_string(kMaxNetworkInterfaces) + " interfaces, got " +
                   std::to_string(f.value.size()));
    } else {
      for (std::size_t i = 0; i < f.value.size(); ++i) {
        YamlField item{f.value[i], f.value[i].Mark(), f.path + "[" + std::to_string(i) + "]"};
        auto v = read_string(item, sink);
        if (!v) continue;
        if (!valid_interface_name(*v)) {
          sink.add(item.mark(), item.path,
                   "expected an interface name (eth0, ib0: 1-15 of A-Z a-z 0-9 _ . @ -) or an "
                   "InfiniBand port hca:port (mlx5_0:1), got " +
                       describe(item.value));
          continue;
        }
        if (std::find(c.interfaces.begin(), c.interfaces.end(), *v) != c.interfaces.end()) {
          sink.add(item.mark(), item.path, "interface " + json_quote(*v) + " is listed twice");
          continue;
        }
        c.interfaces.push_back(*v);
      }
    }
  }
  m.finish();
}

}  // namespace ckptmon
