#pragma once
// The daemon's metric families, one file per domain in exporter/
// (docs/metrics.md names the file that owns each family):
//   family.hpp      FamilyBuilder, append, serialize: the toolkit
//   state.hpp       state_families(): tiers, catalog, events, GPU, I/O, collectors
//   tiers.hpp       ckpt_tier_*
//   catalog.hpp     ckpt_checkpoints, ckpt_job_*, ckpt_last_checkpoint_*, ckptmon_scan_*
//   events.hpp      ckptmon_manifest_*, ckpt_checkpoint_*, ckpt_restore_*, integrity
//   drills.hpp      ckpt_restore_drill_*, ckptmon_restore_drills_total
//   gpu.hpp         ckpt_gpu_*, ckpt_checkpoint_gpu_*, ckptmon_gpu_*
//   io.hpp          ckpt_tier_read/written/metadata, ckpt_network_*, ckptmon_io_*
//   collectors.hpp  ckptmon_collector_*
//   rules.hpp       rule figures, ckpt_alert, ckptmon_alertmanager_*, ckptmon_rules_*
//   self.hpp        process_*, ckptmon_http_*, ckptmon_store_*, ckptmon_worker_*,
//                   ckptmon_build_info, ckptmon_config_last_reload_*
// Pure functions of their inputs.

#include "exporter/catalog.hpp"
#include "exporter/collectors.hpp"
#include "exporter/drills.hpp"
#include "exporter/events.hpp"
#include "exporter/family.hpp"
#include "exporter/gpu.hpp"
#include "exporter/io.hpp"
#include "exporter/self.hpp"
#include "exporter/state.hpp"
#include "exporter/tiers.hpp"
