// check-config's warnings (config/config_warnings.hpp): a drain that carries
// a namespace's jobs to a residency it does not allow.
#include "config/config_warnings.hpp"

#include <gtest/gtest.h>

#include "config/config.hpp"

namespace ckptmon {
namespace {

std::vector<std::string> warnings_of(const std::string& text) {
  LoadResult r = parse_config(text, "w.yml");
  EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  return r.config ? config_warnings(*r.config) : std::vector<std::string>{"(did not load)"};
}

TEST(ConfigWarnings, ADrainToAResidencyANamespaceForbidsIsWarnedAbout) {
  const std::string head = R"(tiers:
  - name: staging
    path: /s
    role: staging
    drains_to: archive
    residency: eu-west
    namespaces:
      '^team-a-': {residency: [eu-west, eu-central]}
      '^team-b-': {residency: [eu-west, us-east]}
      '^team-c-': {owner: carol}
)";
  EXPECT_EQ(
      warnings_of(head + "  - {name: archive, path: /a, role: capacity, residency: us-east}\n"),
      (std::vector<std::string>{
          "tiers[0].drains_to: tier staging drains to archive (residency 'us-east'), which "
          "namespace ^team-a- (tiers[0].namespaces) does not allow (allowed: eu-west, "
          "eu-central): every drained copy of its jobs would be a residency finding"}));
  // A target without a residency label: its copies are outside every list.
  const auto unset = warnings_of(head + "  - {name: archive, path: /a, role: capacity}\n");
  ASSERT_EQ(unset.size(), 2u);
  EXPECT_NE(unset[0].find("archive (residency not set), which namespace ^team-a-"),
            std::string::npos)
      << unset[0];
  EXPECT_NE(unset[1].find("namespace ^team-b-"), std::string::npos) << unset[1];
  // Allowed where it goes: nothing to say.
  EXPECT_TRUE(
      warnings_of(head + "  - {name: archive, path: /a, role: capacity, residency: eu-west}\n")
          .empty());
}

TEST(ConfigWarnings, TheTargetsOwnRulesCountAndAForbiddenSourceIsNotADrainsWarning) {
  // The rule lives on the target tier: it still claims the drained jobs.
  EXPECT_EQ(warnings_of(R"(tiers:
  - {name: staging, path: /s, role: staging, drains_to: archive, residency: eu-west}
  - name: archive
    path: /a
    role: capacity
    residency: us-east
    namespaces: {'^team-a-': {residency: [eu-west]}}
)")
                .size(),
            1u);
  // The source tier is already outside what the rule allows: its own audit
  // says so; the drain crosses nothing the rule allowed.
  EXPECT_TRUE(warnings_of(R"(tiers:
  - name: staging
    path: /s
    role: staging
    drains_to: archive
    residency: us-east
    namespaces: {'^team-a-': {residency: [eu-west]}}
  - {name: archive, path: /a, role: capacity, residency: ap-south}
)")
                  .empty());
  // No drains, no warnings.
  EXPECT_TRUE(warnings_of("tiers:\n  - {name: a, path: /a, role: rapid, residency: x}\n").empty());
}

}  // namespace
}  // namespace ckptmon
