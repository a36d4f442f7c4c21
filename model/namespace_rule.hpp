#pragma once
// Which namespace rule claims a job, and whether a residency is allowed by
// it: the one answer the access audit (collectors/access_audit.cpp) and the
// estate's residency rule (rules/estate.cpp) both use.

#include <algorithm>
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

}  // namespace ckptmon
