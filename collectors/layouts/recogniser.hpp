#pragma once
// What the layout recognisers share: the signature each one implements (a
// pure function of one directory of the tree), the bookkeeping of which
// entries a recogniser claimed, and helpers for names, figures, manifests and
// the committed / in_progress / partial decision. Internal to collectors/layouts.

#include <cstdint>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectors/layouts/layout.hpp"
#include "model/checkpoint.hpp"
#include "model/dir_tree.hpp"

namespace ckptmon::layouts {

// Writers on other hosts and coarse file-system timestamps make a marker look
// slightly older than the shard written just before it; differences up to this
// many seconds are not a re-save.
inline constexpr double kMtimeSlack = 2.0;
// Deeper trees than this are not descended (a checkpoint is never this deep;
// it bounds the recursion on hostile trees).
inline constexpr int kMaxDepth = 48;
// Manifests nested deeper than this are rejected before parsing.
inline constexpr int kMaxManifestDepth = 64;

// One checkpoint as a recogniser found it, with what the registry's cross-
// checkpoint passes need on top of the catalog record.
struct Found {
  Checkpoint ckpt;
  std::uint64_t ranks = 0;  // distinct ranks the shard names show; 0 = unknown
};

// One directory as a recogniser sees it, and what it may claim there. A
// recogniser claims child directories (and emits their checkpoints) or the
// directory itself; claimed entries are not searched further. Single-threaded.
class DirScope {
 public:
  DirScope(const DirNode& dir, std::string rel, const LayoutContext& ctx, std::vector<Found>& out,
           const std::regex* generic_re);

  const DirNode& dir() const { return dir_; }
  const std::string& rel() const { return rel_; }  // "" for the root handed in
  const LayoutContext& ctx() const { return ctx_; }
  const std::regex* generic_re() const { return generic_re_; }
  std::vector<Found>& out() { return out_; }
  std::size_t first_found() const { return first_found_; }  // this directory's results start here

  // Path of a child (or of the directory itself: ".", for the root) relative to the root.
  std::string path_of(std::string_view child) const;
  std::string self_path() const;

  bool claimed(std::string_view child) const;
  bool any_claimed() const { return !claimed_.empty() || self_ || files_; }
  void claim(std::string_view child);
  // A file of this directory became (part of) a checkpoint, e.g. Lightning's
  // *.ckpt: the directory is then not offered to self recognisers.
  void claim_file() { files_ = true; }
  void claim_self() { self_ = true; }
  bool self_claimed() const { return self_; }

  void emit(Found f) { out_.push_back(std::move(f)); }

 private:
  const DirNode& dir_;
  std::string rel_;
  const LayoutContext& ctx_;
  std::vector<Found>& out_;
  const std::regex* generic_re_;
  std::size_t first_found_;
  std::set<std::string, std::less<>> claimed_;
  bool self_ = false;
  bool files_ = false;
};

using RecogniseFn = void (*)(DirScope&);

// The recognisers, one per file (collectors/layouts/<framework>.cpp), listed in
// registry.cpp. "Container" recognisers claim children of the directory they
// are shown; "self" recognisers claim the directory itself.
void recognise_generic(DirScope& s);        // self
void recognise_dlrover(DirScope& s);        // container
void finish_dlrover(DirScope& s);           // after the subtree: stage evidence demotes
void recognise_megatron(DirScope& s);       // container
void recognise_deepspeed(DirScope& s);      // container
void recognise_hf_trainer(DirScope& s);     // container
void recognise_lightning(DirScope& s);      // container
void recognise_nvrx_local(DirScope& s);     // container
void recognise_orbax(DirScope& s);          // self
void recognise_torchsnapshot(DirScope& s);  // self
void recognise_pytorch_dcp(DirScope& s);    // self

// ---- names -------------------------------------------------------------------

bool is_digits(std::string_view s);
// Non-negative decimal without sign or spaces; nullopt on anything else or overflow.
std::optional<std::int64_t> parse_uint(std::string_view s);
// The step a directory or file name tells: step-N, step_N, stepN, iter_0001000,
// global_stepN, global_step_N, checkpoint-N, ckpt-N, epoch=E-step=S, N,
// prefix_N; a trailing known suffix (.ckpt, .pt, .orbax-checkpoint-tmp...,
// -unfinished, -vN) is ignored. -1 when the name tells none.
std::int64_t parse_step(std::string_view name);
// Removes `suffix` from the end of `s` when `s` is longer than it; true if it did.
bool cut_suffix(std::string_view& s, std::string_view suffix);
// "3, 7, 12" or, past five, "0, 1, 2, 3, 4 and 6 more": ranks for reasons.
std::string rank_list(const std::vector<std::int64_t>& ranks);

// What a file holds, from its path inside the checkpoint (file name first, then
// the directories above it, innermost first).
Component classify(std::string_view rel_path);
// Files that are neither shards nor markers: tokenizer assets, READMEs. They
// may land after the marker (Megatron saves tokenizer assets after the tracker).
bool is_auxiliary(std::string_view name);

// ---- figures -----------------------------------------------------------------

// Accumulates a checkpoint's figures over its files and directories.
// Shards are files that are neither metadata (markers, manifests) nor auxiliary.
class Tally {
 public:
  Tally(Checkpoint& c, const LayoutContext& ctx);
  ~Tally();
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;

  // One file at `rel` inside the checkpoint.
  void file(const FileEntry& f, const std::string& rel);
  void file(const FileEntry& f, const std::string& rel, Component comp, bool shard);
  // A directory of the checkpoint, and every file and directory below it.
  void tree(const DirNode& d, const std::string& prefix, int depth = 0);
  // Only the directory's own mtime.
  void dir(const DirNode& d);

  // Newest mtime of anything seen (files and directories): the last activity.
  double newest() const { return newest_; }

 private:
  Checkpoint& c_;
  bool keep_;
  std::vector<ShardFile> files_;
  double newest_ = 0;
};

// Tallies `d` (the checkpoint's directory) and everything below it into `c`;
// returns the newest mtime seen, the checkpoint's activity.
double tally_tree(Checkpoint& c, const DirNode& d, const LayoutContext& ctx);

// Figures of a checkpoint the scanner did not list again (DirNode::reused).
Found from_reused(const DirNode& d, std::string path);
// Newest time the catalog record shows any activity.
double activity_of(const Checkpoint& c);

// ---- manifests ---------------------------------------------------------------

// A manifest's text, or why it can not be used. `unread` means the scanner did
// not read it (over kMaxManifestBytes or unreadable): checks are skipped.
struct ManifestText {
  std::optional<std::string_view> text;
  bool unread = false;
  std::string error;  // "<name>: ..." when the text is present but unusable
};
ManifestText manifest_text(const FileEntry& f);
// Non-throwing JSON parse with the size, depth and binary checks above. On
// failure returns nullopt with `error` naming the file, or with `unread` set.
std::optional<nlohmann::json> parse_manifest_json(const FileEntry& f, std::string& error,
                                                  bool& unread);
// Nesting depth of brackets outside strings; stops counting past `limit`.
int json_depth(std::string_view text, int limit);
// The trimmed one-line content of a tracker file (DeepSpeed `latest`, Megatron's
// latest_checkpointed_iteration.txt); nullopt with `error` for anything else.
std::optional<std::string> read_tracker(const FileEntry& f, std::string& error, bool& unread);

// "<manifest> lists <first missing>, missing (and N more)"; `missing` not empty.
std::string listed_missing(std::string_view manifest, const std::vector<std::string>& missing);

// Never-throwing accessors for parsed JSON.
const nlohmann::json* json_member(const nlohmann::json& j, std::string_view key);
std::optional<std::int64_t> json_int(const nlohmann::json* j);

// ---- states ------------------------------------------------------------------

// What a recogniser learnt about one checkpoint, turned into a state by decide().
struct Verdict {
  std::string broken;       // can not be restored, whatever its age (partial now)
  std::string pending;      // not committed: in_progress while young, partial after
  std::string marker_name;  // the commit marker, for "no <marker>" and re-save reasons
  bool has_marker = false;
  // Compare the marker with the newest shard (re-save detection). Off where the
  // framework writes its marker without waiting for every rank (DeepSpeed).
  bool check_resave = true;
};

// Sets state and reason. c.marker_time and c.last_write must be filled;
// `activity` is the newest mtime of anything in the checkpoint.
void decide(Checkpoint& c, const Verdict& v, double activity, const LayoutContext& ctx);
// Container evidence (a tracker, `latest`, a DLRover stage) says a checkpoint
// is not committed: a committed one becomes in_progress or partial by age, a
// partial one stays partial; the reason is prefixed.
void demote(Checkpoint& c, const std::string& pending, const LayoutContext& ctx);

// ---- shared layout pieces ----------------------------------------------------

// A PyTorch DCP directory's own files judged: shards, marker, temp files.
struct DcpEval {
  bool looks = false;                 // holds .distcp, .metadata, .metadata.tmp or __r.metadata
  std::uint64_t distcp = 0;           // number of .distcp files
  std::uint64_t ranks = 0;            // distinct ranks in __{rank}_{n}.distcp names
  const FileEntry* marker = nullptr;  // .metadata (or the newest __r.metadata)
  std::string pending;                // why it is not committed, "" when the marker is there
};
DcpEval evaluate_dcp_dir(const DirNode& d);
// Once DCP's `.metadata` is in place (e.marker, nothing pending): the
// checkpoint's component bytes from it, Checkpoint::metadata saying how it
// read, and `v.broken` when it places bytes past a shard's end or in a
// missing file. A plain DCP directory's and a Megatron torch_dist
// iteration's alike.
void apply_dcp_metadata(const DirNode& d, const DcpEval& e, Checkpoint& c, Verdict& v);

// DeepSpeed shard counts of one tag directory.
struct DsTag {
  bool looks = false;  // holds *_model_states.pt or *_optim_states.pt
  std::uint64_t model = 0;
  std::uint64_t optim = 0;
  std::uint64_t ranks = 0;  // distinct data-parallel ranks of the zero_pp_rank_* files (or 1)
  std::string short_optim;  // an optimizer shard much shorter than its peers, described
};
DsTag deepspeed_tag(const DirNode& d);

// A directory's DeepSpeed `latest` file and the tag it names.
struct DsLatest {
  const FileEntry* file = nullptr;  // nullptr: no `latest`
  std::optional<std::string> tag;   // the tag, when `latest` could be used
  bool unread = false;              // the scanner did not read `latest`
  std::string error;                // why `latest` can not be used, when read
};
DsLatest read_ds_latest(const DirNode& d);
// "latest names <tag>, which does not exist".
std::string ds_missing_tag(const std::string& tag);
// "<optim> of <ref_optim> optimizer shards".
std::string ds_optim_count(std::uint64_t optim, std::uint64_t ref_optim);
// What `latest` naming `tag_name` (shard counts `t`) leaves incomplete: fewer
// optimizer shards than `ref_optim` (0: no reference), or a short optimizer
// shard; "" when neither.
std::string ds_tag_issue(const std::string& tag_name, const DsTag& t, std::uint64_t ref_optim);

// Megatron torch_dist judgement of an iteration directory (DCP files plus
// metadata.json and optional integrity.json); verdict fields filled. `e` is
// evaluate_dcp_dir(d).
bool megatron_dist_looks(const DirNode& d);
void megatron_dist_verdict(const DirNode& d, const DcpEval& e, Verdict& v, Checkpoint& c);

}  // namespace ckptmon::layouts
