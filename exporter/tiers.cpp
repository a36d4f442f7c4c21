#include "exporter/tiers.hpp"

#include <algorithm>

#include "exporter/family.hpp"

namespace ckptmon {

void tier_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  FamilyBuilder up =
      gauge("ckpt_tier_up",
            "1 when the tier root answered its last probe in time, 0 when it is missing, "
            "unreadable or stuck.");
  FamilyBuilder info =
      gauge("ckpt_tier_info", "Tier identity: role and the mount it lives on. Always 1.");
  FamilyBuilder size = gauge("ckpt_tier_size_bytes", "Size of the file system holding the tier.");
  FamilyBuilder avail = gauge("ckpt_tier_avail_bytes",
                              "Space available to unprivileged writers on the tier's file system.");
  FamilyBuilder free_b =
      gauge("ckpt_tier_free_bytes",
            "Free space on the tier's file system, root-reserved blocks included.");
  FamilyBuilder files = gauge("ckpt_tier_files", "Inodes (file nodes) of the tier's file system.");
  FamilyBuilder files_free =
      gauge("ckpt_tier_files_free", "Free inodes of the tier's file system.");
  FamilyBuilder ro =
      gauge("ckpt_tier_readonly",
            "1 when the tier's file system is mounted read-only (superblock options).");
  FamilyBuilder last_ok = gauge("ckpt_tier_last_success_timestamp_seconds",
                                "When the tier last answered a probe successfully.");
  FamilyBuilder not_probed =
      gauge("ckpt_tier_not_probed_since_timestamp_seconds",
            "Since when the tier's probe has not run (every worker busy with stuck jobs, or "
            "another job for the tier stuck); absent while it is probed.");
  FamilyBuilder shards =
      gauge("ckpt_tier_shards",
            "Instances the tier's jobs are split between (shard: i/n gives n; 1 when "
            "not sharded). Above 1 this instance's required capacity, still-needed "
            "bytes and headroom cover only its own jobs: partial figures that the "
            "fleet recording rules sum per tier.");

  FamilyBuilder encryption = gauge(
      "ckpt_tier_encryption_info",
      "The tier's encryption as detected from the system, never from the configuration: "
      "at_rest fscrypt, dm-crypt, ecryptfs, gocryptfs, none or unknown; in_transit krb5p, tls, "
      "smb3-seal, none, local or unknown. Always 1; absent while the tier is down.");
  FamilyBuilder encryption_required =
      gauge("ckpt_tier_encryption_required",
            "1 when the tier's configuration says encryption_required: true, else 0.");

  for (const auto& [name, t] : state.tiers) {
    const Labels tier{{"tier", name}};
    up.add(tier, t.up ? 1 : 0);
    encryption_required.add(tier, t.config.encryption_required ? 1 : 0);
    info.add({{"tier", name},
              {"role", std::string(to_string(t.config.role))},
              {"mountpoint", t.has_stats ? t.stats.mountpoint : ""},
              {"fstype", t.has_stats ? t.stats.fstype : ""},
              {"device", t.has_stats ? t.stats.device : ""}},
             1);
    if (t.last_success > 0) last_ok.add(tier, t.last_success);
    if (t.not_probed_since > 0) not_probed.add(tier, t.not_probed_since);
    shards.add(tier, static_cast<double>(std::max<std::uint32_t>(1, t.config.shard_count)));
    // Like node_exporter for a stuck mount: no figures rather than stale ones.
    if (!t.up || !t.has_stats) continue;
    size.add(tier, t.stats.size_bytes);
    avail.add(tier, t.stats.avail_bytes);
    free_b.add(tier, t.stats.free_bytes);
    files.add(tier, t.stats.files);
    files_free.add(tier, t.stats.files_free);
    ro.add(tier, t.stats.readonly ? 1 : 0);
    encryption.add({{"tier", name},
                    {"at_rest", t.stats.encryption_at_rest},
                    {"in_transit", t.stats.encryption_in_transit}},
                   1);
  }
  append(out, {&up, &info, &size, &avail, &free_b, &files, &files_free, &ro, &last_ok, &not_probed,
               &shards, &encryption, &encryption_required});
}

}  // namespace ckptmon
