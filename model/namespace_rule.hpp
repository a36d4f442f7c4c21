#pragma once
// Which namespace rule claims a job, and whether a residency is allowed by
// it: the one answer the access audit (collectors/access_audit.cpp) and the
// estate's residency rule (rules/estate.cpp) both use.

#include <algorithm>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "model/tier.hpp"

namespace ckptmon {

// The first of `rules` whose job_regex matches `job`; null when none does.
inline const NamespaceRule* first_namespace(const std::vector<NamespaceRule>& rules,
                                            const std::string& job) {
  for (const NamespaceRule& ns : rules) {
    if (ns.regex && std::regex_search(job, *ns.regex)) return &ns;
  }
  return nullptr;
}

// Whether a tier labelled `tier_residency` may hold the rule's jobs (an
// empty list allows any).
inline bool residency_allowed(const NamespaceRule& rule, const std::string& tier_residency) {
  return rule.residency.empty() || std::find(rule.residency.begin(), rule.residency.end(),
                                             tier_residency) != rule.residency.end();
}

// The residencies a job's copies may lie in, wherever they lie: what the first
// rule claiming the job on each tier allows, intersected, sorted; nullopt when
// no tier's rule restricts it (an empty list: the rules have nothing in
// common). `tiers` is any range; `config_of(t)` gives its TierConfig.
template <class Tiers, class ConfigOf>
std::optional<std::vector<std::string>> allowed_residencies(const Tiers& tiers, ConfigOf config_of,
                                                            const std::string& job) {
  std::optional<std::vector<std::string>> allowed;
  for (const auto& t : tiers) {
    const NamespaceRule* ns = first_namespace(config_of(t).namespaces, job);
    if (ns == nullptr || ns->residency.empty()) continue;
    std::vector<std::string> mine = ns->residency;
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    if (!allowed) {
      allowed = std::move(mine);
      continue;
    }
    std::vector<std::string> both;
    std::set_intersection(allowed->begin(), allowed->end(), mine.begin(), mine.end(),
                          std::back_inserter(both));
    allowed = std::move(both);
  }
  return allowed;
}

}  // namespace ckptmon
