// global.procfs / global.sysfs (proc_path kept as procfs' older name) and the
// top-level network section.

#include <gtest/gtest.h>

#include "config/config.hpp"

namespace ckptmon {
namespace {

constexpr const char* kTiers = "tiers:\n  - {name: a, path: /a, role: rapid}\n";

LoadResult load(const std::string& text) {
  return parse_config(std::string(kTiers) + text, "n.yml");
}

std::vector<std::string> errors_of(const std::string& text) {
  LoadResult r = load(text);
  std::vector<std::string> out;
  for (const auto& e : r.errors) out.push_back(e.to_string());
  EXPECT_EQ(r.config.has_value(), out.empty());
  return out;
}

TEST(IoConfig, Defaults) {
  LoadResult r = load("");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->global.proc_path, "/proc");
  EXPECT_EQ(r.config->global.sys_path, "/sys");
  EXPECT_TRUE(r.config->network.interfaces.empty());
}

TEST(IoConfig, ProcfsSysfsAndTheOldProcPathName) {
  LoadResult r = load("global: {procfs: /host/proc, sysfs: /host/sys}\n");
  ASSERT_TRUE(r.config) << r.errors.at(0).to_string();
  EXPECT_EQ(r.config->global.proc_path, "/host/proc");
  EXPECT_EQ(r.config->global.sys_path, "/host/sys");
  r = load("global: {proc_path: /old/proc}\n");
  ASSERT_TRUE(r.config) << r.errors.at(0).to_string();
  EXPECT_EQ(r.config->global.proc_path, "/old/proc");
  EXPECT_EQ(errors_of("global:\n  procfs: /p\n  proc_path: /q\n"),
            std::vector<std::string>{
                "n.yml:5:3: global.proc_path: give procfs or its older name proc_path, not both"});
  auto e = errors_of("global: {sysfs: relative/sys}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("n.yml:3:17: global.sysfs:"), std::string::npos) << e[0];
}

TEST(IoConfig, NetworkInterfaces) {
  LoadResult r = load("network: {interfaces: [ib0, eth0, mlx5_0:1]}\n");
  ASSERT_TRUE(r.config) << r.errors.at(0).to_string();
  EXPECT_EQ(r.config->network.interfaces, (std::vector<std::string>{"ib0", "eth0", "mlx5_0:1"}));
}

TEST(IoConfig, NetworkErrorsAreLocated) {
  EXPECT_EQ(errors_of("network: {interfaces: eth0}\n"),
            std::vector<std::string>{"n.yml:3:23: network.interfaces: expected a list of interface "
                                     "names, got \"eth0\""});
  auto e = errors_of("network:\n  interfaces: [eth0, ../x, eth0, averyveryverylongname]\n");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_NE(e[0].find("n.yml:4:22: network.interfaces[1]: expected an interface name"),
            std::string::npos)
      << e[0];
  EXPECT_EQ(e[1], "n.yml:4:28: network.interfaces[2]: interface \"eth0\" is listed twice");
  EXPECT_NE(e[2].find("network.interfaces[3]: expected an interface name"), std::string::npos)
      << e[2];
  e = errors_of("network: {interfaces: [eth0], speed: 1}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("network.speed: unknown key (expected one of: interfaces)"),
            std::string::npos)
      << e[0];
  std::string many = "network: {interfaces: [";
  for (int i = 0; i < 33; ++i) many += (i ? ", e" : "e") + std::to_string(i);
  e = errors_of(many + "]}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("at most 32 interfaces, got 33"), std::string::npos) << e[0];
}

}  // namespace
}  // namespace ckptmon
