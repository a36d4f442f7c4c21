// Hugging Face Trainer (transformers/trainer.py, _save_checkpoint).
//
// An output directory holds `checkpoint-{global_step}/` per save: the model
// (`model.safetensors`, or `model-0000k-of-0000n.safetensors` with
// `model.safetensors.index.json`, or `pytorch_model.bin`, adapters for PEFT),
// `optimizer.pt`, `scheduler.pt`, `scaler.pt`, `rng_state[_{proc}].pth`,
// `training_args.bin`, and, written last, `trainer_state.json`: the Trainer has
// no other commit marker. FSDP adds DCP directories (`pytorch_model_fsdp_0/`,
// `optimizer_0/`); DeepSpeed adds `global_step{N}/` and `latest` inside.
// transformers 4.36 wrote into `tmp-checkpoint-{N}` and renamed it; one left
// behind was never finished.

#include <set>

#include "collectors/layouts/recogniser.hpp"
#include "util/saturating.hpp"

namespace ckptmon::layouts {
namespace {

constexpr std::string_view kMarker = "trainer_state.json";

// N for "checkpoint-N" and "tmp-checkpoint-N"; nullopt for other names.
std::optional<std::int64_t> checkpoint_number(std::string_view name, bool& tmp) {
  tmp = name.starts_with("tmp-");
  if (tmp) name.remove_prefix(4);
  if (!name.starts_with("checkpoint-")) return std::nullopt;
  return parse_uint(name.substr(11));
}

bool hf_evidence(const DirNode& d) {
  for (std::string_view n :
       {kMarker, std::string_view("training_args.bin"), std::string_view("optimizer.pt"),
        std::string_view("scheduler.pt"), std::string_view("model.safetensors"),
        std::string_view("pytorch_model.bin"), std::string_view("adapter_model.safetensors")}) {
    if (d.file(n) != nullptr) return true;
  }
  for (const auto& f : d.files) {
    if (f.name.starts_with("rng_state") || f.name.ends_with(".safetensors.index.json")) return true;
  }
  return d.dir("pytorch_model_fsdp_0") != nullptr;
}

// The DeepSpeed part inside a checkpoint: `latest` and the tag it names.
struct DsInside {
  const DirNode* tag = nullptr;
  DsTag stats;  // deepspeed_tag(*tag), when tag is set
  std::string issue;
};

DsInside deepspeed_inside(const DirNode& ckpt) {
  DsInside r;
  bool has_tags = false;
  for (const auto& sub : ckpt.dirs) {
    if (sub.name.starts_with("global_step") || deepspeed_tag(sub).looks) has_tags = true;
  }
  const DsLatest latest = read_ds_latest(ckpt);
  if (!has_tags && latest.file == nullptr) return r;
  if (latest.file == nullptr) {
    r.issue = "no DeepSpeed latest file";
    return r;
  }
  if (!latest.tag) {
    if (!latest.unread) r.issue = latest.error;
    return r;
  }
  r.tag = ckpt.dir(*latest.tag);
  if (r.tag == nullptr) {
    r.issue = ds_missing_tag(*latest.tag);
  } else {
    r.stats = deepspeed_tag(*r.tag);
  }
  return r;
}

// Holds the files against `*.index.json` manifests (weight_map, total_size).
void check_index(const DirNode& d, Verdict& v, Checkpoint& c) {
  std::uint64_t missing_count = 0;
  for (const auto& f : d.files) {
    if (!f.name.ends_with(".index.json")) continue;
    std::string error;
    bool unread = false;
    auto j = parse_manifest_json(f, error, unread);
    if (!j) {
      if (!unread && v.broken.empty()) v.broken = error;
      continue;
    }
    const nlohmann::json* map = json_member(*j, "weight_map");
    if (map == nullptr || !map->is_object()) {
      if (v.broken.empty()) v.broken = f.name + ": no weight_map object";
      continue;
    }
    std::set<std::string> shards;
    for (auto it = map->begin(); it != map->end(); ++it) {
      if (it->is_string()) shards.insert(it->get<std::string>());
    }
    std::uint64_t present_bytes = 0;
    std::vector<std::string> missing;
    for (const auto& name : shards) {
      if (const FileEntry* shard = d.file(name)) {
        sat_add_to(present_bytes, shard->size);
      } else {
        missing.push_back(name);
      }
    }
    missing_count += missing.size();
    if (!missing.empty() && v.broken.empty()) {
      v.broken = listed_missing(f.name, missing);
    }
    // total_size counts tensor bytes; every shard file adds a header on top.
    const nlohmann::json* meta = json_member(*j, "metadata");
    const auto total = json_int(meta != nullptr ? json_member(*meta, "total_size") : nullptr);
    if (missing.empty() && total && *total > 0 &&
        static_cast<std::uint64_t>(*total) > present_bytes && v.broken.empty()) {
      v.broken = f.name + " says total_size " + std::to_string(*total) + " but its shards hold " +
                 std::to_string(present_bytes) + " bytes";
    }
  }
  if (missing_count > 0) c.expected_files = c.files + missing_count;
}

}  // namespace

void recognise_hf_trainer(DirScope& s) {
  const DirNode& d = s.dir();
  std::vector<const DirNode*> ckpts;
  bool evidence = false;
  for (const auto& child : d.dirs) {
    bool tmp = false;
    if (!checkpoint_number(child.name, tmp)) continue;
    ckpts.push_back(&child);
    if (child.reused) {
      evidence = evidence || child.reused->framework == "hf_trainer";
    } else {
      evidence = evidence || hf_evidence(child);
    }
  }
  if (!evidence) return;

  // The DeepSpeed part of each checkpoint listed again (ckpts[i] -> inside[i]).
  std::vector<DsInside> inside(ckpts.size());
  for (std::size_t i = 0; i < ckpts.size(); ++i) {
    if (!ckpts[i]->reused) inside[i] = deepspeed_inside(*ckpts[i]);
  }

  // Optimizer shards of DeepSpeed tags in finished checkpoints, the reference
  // for one still being written.
  std::uint64_t ref_optim = 0;
  for (std::size_t i = 0; i < ckpts.size(); ++i) {
    const DirNode* ck = ckpts[i];
    if (ck->reused || ck->file(kMarker) == nullptr) continue;
    if (inside[i].tag != nullptr) ref_optim = std::max(ref_optim, inside[i].stats.optim);
  }

  for (std::size_t i = 0; i < ckpts.size(); ++i) {
    const DirNode* ck = ckpts[i];
    s.claim(ck->name);
    if (ck->reused) {
      s.emit(from_reused(*ck, s.path_of(ck->name)));
      continue;
    }
    bool tmp = false;
    Found f;
    Checkpoint& c = f.ckpt;
    c.path = s.path_of(ck->name);
    c.step = checkpoint_number(ck->name, tmp).value_or(-1);
    c.framework = "hf_trainer";
    const double activity = tally_tree(c, *ck, s.ctx());
    Verdict v;
    v.marker_name = std::string(kMarker);
    const FileEntry* marker = ck->file(kMarker);
    v.has_marker = marker != nullptr;
    if (marker != nullptr) c.marker_time = marker->mtime;
    check_index(*ck, v, c);

    std::string issue;
    if (tmp) issue = ck->name + " not renamed to " + ck->name.substr(4);
    for (const auto& sub : ck->dirs) {
      if (!issue.empty()) break;
      const DcpEval e = evaluate_dcp_dir(sub);
      if (e.looks && !e.pending.empty()) issue = sub.name + ": " + e.pending;
    }
    if (issue.empty()) {
      const DsInside& ds = inside[i];
      issue = ds.issue;
      if (issue.empty() && ds.tag != nullptr) {
        f.ranks = ds.stats.ranks;
        issue = ds_tag_issue(ds.tag->name, ds.stats, ref_optim);
      }
    }
    if (!issue.empty()) {
      // trainer_state.json is written after everything else.
      if (marker != nullptr && !tmp && v.broken.empty()) {
        v.broken = std::string(kMarker) + " present but " + issue;
      } else {
        v.pending = issue;
      }
    }
    decide(c, v, activity, s.ctx());
    s.emit(std::move(f));
  }
}

}  // namespace ckptmon::layouts
