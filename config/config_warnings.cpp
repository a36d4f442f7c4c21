#include "config/config_warnings.hpp"

#include <set>
#include <string>
#include <utility>

#include "model/namespace_rule.hpp"
#include "util/text.hpp"

namespace ckptmon {

std::vector<std::string> config_warnings(const Config& cfg) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
    const TierConfig& from = cfg.tiers[i];
    if (from.drains_to.empty()) continue;
    const TierConfig* to = cfg.find_tier(from.drains_to);
    if (to == nullptr) continue;  // a load error already
    // The rules of every tier apply to a job's copies wherever they lie
    // (rules/estate.cpp), so any tier's namespace may be the one crossed;
    // the same job_regex on two tiers is warned about once.
    std::set<std::string> said;
    for (std::size_t o = 0; o < cfg.tiers.size(); ++o) {
      for (const NamespaceRule& ns : cfg.tiers[o].namespaces) {
        if (residency_allowed(ns, to->residency) || !residency_allowed(ns, from.residency)) {
          // Allowed there, or not allowed where the drain starts either (the
          // source tier's own audit reports that, drain or not).
          continue;
        }
        if (!said.insert(ns.job_regex).second) continue;
        std::string w = "tiers[" + std::to_string(i) + "].drains_to: tier " + from.name +
                        " drains to " + to->name + " (";
        w += to->residency.empty() ? std::string("residency not set")
                                   : "residency '" + to->residency + "'";
        w += "), which namespace " + ns.job_regex + " (tiers[" + std::to_string(o) +
             "].namespaces) does not allow (allowed: " + join(ns.residency, ", ") +
             "): every drained copy of its jobs would be a residency finding";
        out.push_back(std::move(w));
      }
    }
  }
  return out;
}

}  // namespace ckptmon
