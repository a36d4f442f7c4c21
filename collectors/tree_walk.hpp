#pragma once
// Walking one tier: openat/getdents64/statx(AT_SYMLINK_NOFOLLOW) from the
// tier root, never following a symlink, never leaving the root's device,
// treating entries that vanish mid-walk as normal. Builds DirNode trees for the
// layout recognisers, skips re-listing committed checkpoints that did not
// change, and reuses the listing of any directory whose mtime did not change.
//
// The metadata calls of one walk can be spread over a tier's WalkSlots: a
// bounded set of threads, so that on a network file system many calls are in
// flight at once. The result (DirNode trees, WalkStats) is the same whatever
// the number of slots: each entry is handled by the same function whichever
// slot runs it, and the coordinating thread assembles them in name order.
// A TreeWalker is driven by one thread at a time (the collector runner never
// walks a tier twice at once); WalkSlots and WalkLive are thread-safe.

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "collectors/acl.hpp"
#include "model/access.hpp"
#include "model/catalog.hpp"
#include "model/checkpoint.hpp"
#include "model/dir_tree.hpp"
#include "model/walk_live.hpp"
#include "util/clock.hpp"

namespace ckptmon {

struct WalkStats {
  std::uint64_t dirs_listed = 0;
  std::uint64_t stat_calls = 0;
  std::uint64_t permission_errors = 0;  // entries not readable: EACCES, EIO, ESTALE, ...
  std::uint64_t vanished = 0;           // entries gone between readdir and stat
  std::uint64_t reused = 0;             // committed checkpoints not listed again
  std::uint64_t listings_reused = 0;    // directories whose mtime had not changed: not re-listed
};

// What a walk remembers of one directory it listed, so the next walk need not
// list it again while its mtime (and inode) are unchanged. Immutable once
// made; shared between walks and the slots that read it.
struct DirListing {
  double mtime = 0;
  std::uint64_t ino = 0;
  // A chmod or chown leaves the mtime alone but may make the directory
  // unreadable (or readable again): it must then be opened, not reused.
  std::uint32_t mode = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<FileEntry> files;  // every non-directory entry, sorted by name
  std::vector<double> ctimes;    // of `files`, same order
  // When each of `files` was last stat'ed (the walk's now), same order.
  std::vector<double> checked;
  std::vector<std::string> dirs;   // subdirectories on the tier's device, sorted
  std::vector<std::string> retry;  // entries whose stat failed (not ENOENT): stat'ed again
  // Files whose ctime was within the settle time of the listing may still be
  // written in place: stat'ed again on reuse when their recheck is due
  // (recheck_due), and on a new listing of the directory likewise.
  double settled_before = 0;
};

// The longest a young file (ctime within the settle time) goes without being
// stat'ed again, seconds: what the NFS client's attribute cache allows by
// default (acregmax).
inline constexpr double kRecheckMaxSeconds = 60;

// Whether a young file stat'ed at `checked`, when its ctime said `ctime`, is
// due to be stat'ed again at `now`: once half as long again as it had been
// quiet then has passed, and at most kRecheckMaxSeconds later. A file being
// written (quiet for nothing) is stat'ed at every walk; one quiet for a
// minute, every 30 s; so 100,000 young files cost a few stat calls each over
// the settle time instead of one per walk (the NFS client's adaptive
// attribute cache, acregmin..acregmax, in walks).
inline bool recheck_due(double now, double ctime, double checked) {
  const double quiet = checked > ctime ? checked - ctime : 0;
  const double wait = quiet / 2 < kRecheckMaxSeconds ? quiet / 2 : kRecheckMaxSeconds;
  return now - checked >= wait;
}

// A time this close to the walk (seconds) may still be joined by more changes
// within the same timestamp tick (file times come from the kernel's coarse
// clock), as git's "racy" index entries: a listing whose directory mtime is
// this recent is not remembered, a checkpoint written this recently is not
// frozen.
inline constexpr double kRacySeconds = 2;

// What earlier walks of one tier remember: for each committed checkpoint
// directory (tier-relative path), the mtimes of all its directories and what
// its record said. If no directory changed and the catalog the walks' results
// went into still holds that record (WalkOptions::frozen_record), the
// checkpoint is not listed again: the catalog's record is reused, not a copy
// of it kept here. And the listings of the other directories listed (not
// inside a frozen checkpoint). A Frozen is immutable once made and shared by
// the walks that reuse it (and the walk slots' tasks), not copied into each
// walk's memory.
struct WalkMemory {
  struct Frozen {
    // The record's figures when it was frozen: a record found later is the
    // one frozen only when it still says these.
    double dir_mtime = 0;
    double last_write = 0;
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;
    double mtime = 0;  // of the checkpoint's directory
    // The directories below it (tier-relative path, mtime): none for most.
    std::vector<std::pair<std::string, double>> dirs;

    // Whether `c` is the record this was frozen from (committed, read in full).
    bool matches(const Checkpoint& c) const {
      return c.state == CkptState::kCommitted && !c.unreadable && c.dir_mtime == dir_mtime &&
             c.last_write == last_write && c.files == files && c.bytes == bytes;
    }
  };
  struct Remembered {
    std::shared_ptr<const Frozen> frozen;
    // The checkpoint's access findings: `count` of them from `first` in the
    // findings of the last walk that reported it (the vector its catalog
    // holds too).
    std::shared_ptr<const std::vector<AccessFinding>> findings;
    std::uint32_t first = 0;
    std::uint32_t count = 0;
  };
  std::unordered_map<std::string, Remembered> frozen;
  std::unordered_map<std::string, std::shared_ptr<const DirListing>> listings;  // tier-relative
};

// A tier's bounded set of threads for metadata calls. A call stuck on a hung
// mount holds its own thread only; the others keep serving. Threads are never
// added: a tier whose slots are all stuck stops walking (and is reported
// stale) rather than consuming more threads.
class WalkSlots {
 public:
  explicit WalkSlots(int n);
  // Idle threads exit; a thread stuck in a call exits when the call returns.
  ~WalkSlots();
  WalkSlots(const WalkSlots&) = delete;
  WalkSlots& operator=(const WalkSlots&) = delete;

  int size() const { return n_; }
  void submit(std::function<void()> task);
  const std::shared_ptr<WalkLive>& live() const { return live_; }

 private:
  struct Queue;
  std::shared_ptr<Queue> q_;
  std::shared_ptr<WalkLive> live_;
  int n_;
};

// Runs `tasks` on `slots` (on the calling thread when null) and waits for
// them. False when none of them returned for `stall` of `clock`'s monotonic
// time: they are given up (tasks not started yet are skipped; a stuck one
// holds its slot until its call returns). Tasks must own what they touch.
bool run_tasks(WalkSlots* slots, std::vector<std::function<void()>>& tasks,
               std::chrono::milliseconds stall, const Clock& clock = system_clock());

// Called before each metadata call with its kind ("open", "list", "stat",
// "readlink", "read", "xattr") and the tier-relative path it is about. Tests use it to
// make one call hang; never set in the daemon.
using WalkCallHook = std::function<void(std::string_view op, const std::string& rel)>;

// Called before each metadata call like WalkCallHook; a non-zero return is an
// errno the call then fails with, without being made (EIO, ESTALE on one
// path). Tests use it to inject the errors of a failing file system; never
// set in the daemon (unset, it costs one test of an empty std::function).
using WalkFaultHook = std::function<int(std::string_view op, const std::string& rel)>;

struct WalkOptions {
  WalkSlots* slots = nullptr;    // null: every call on the calling thread
  bool dont_sync_files = false;  // statx AT_STATX_DONT_SYNC for non-directories (NFS)
  double now = 0;                // unix seconds: decides which listings are settled
  double settle_seconds = 1800;  // files changed this recently are stat'ed again on reuse
  // A walk in which no call returned for this long is abandoned (stalled()),
  // on this clock's monotonic reading (null: the real one).
  std::chrono::milliseconds stall_timeout = std::chrono::minutes(10);
  // Directories more than this many levels below the tier root are not
  // opened: they are left in the tree flagged too_deep (TierConfig::walk_max_depth).
  int max_depth = 64;
  const Clock* clock = nullptr;
  WalkCallHook hook;
  WalkFaultHook fault;
  // The record of the frozen checkpoint at tier-relative `rel`, or null when
  // there is none to reuse (the checkpoint is then listed). Called on the
  // thread that drives the walker. Unset: nothing is reused.
  std::function<std::shared_ptr<const Checkpoint>(const std::string& rel,
                                                  const WalkMemory::Frozen& frozen)>
      frozen_record;
};

class TreeWalker {
 public:
  // `root_fd` is an open directory descriptor of the tier root (duplicated:
  // the caller may close it once the walker is gone).
  TreeWalker(int root_fd, dev_t root_dev, const WalkMemory* memory, WalkStats& stats,
             WalkOptions options = {});
  ~TreeWalker();
  TreeWalker(const TreeWalker&) = delete;
  TreeWalker& operator=(const TreeWalker&) = delete;

  // Lists the directory at tier-relative `rel` (no leading slash; "" = root)
  // and everything below it into `out`. Returns false, with `error`, when
  // `rel` itself cannot be opened or the walk stalled; problems below it are
  // counted, not fatal. With `acls`, the ACL xattrs of `rel` itself are read
  // into it (fgetxattr on the descriptor the walk opened, never by path).
  bool build(const std::string& rel, DirNode& out, std::string* error, AclXattrs* acls = nullptr);

  // When set, every directory listed (not reused) is appended, tier-relative.
  void record_listed(std::vector<std::string>* out) { listed_ = out; }
  // When set, every directory listed or reused is remembered here for the
  // next walk (tier-relative path -> listing). With `adopt_later`, the files
  // of new listings are not copied from the tree: adopt_listing_files() moves
  // them once the caller is done with the tree (a directory of a million
  // files is then held once, not twice).
  void remember_listings(std::unordered_map<std::string, std::shared_ptr<const DirListing>>* out,
                         bool adopt_later = false) {
    remember_ = out;
    adopt_later_ = adopt_later;
  }
  // Moves the files of the listings made by build(`rel`) out of `tree` (the
  // tree build() filled) into the remembered listings. `tree` is left without
  // those files.
  void adopt_listing_files(const std::string& rel, DirNode& tree);

  // Lists the entries of one directory without descending: (name, mtime) for
  // subdirectories on the same device. Used to find job roots. On failure
  // errno says why (ETIMEDOUT when the walk stalled). `failed`, when set,
  // gets (name, errno) of the entries that may be directories but could not
  // be stat'ed for a reason other than being gone (EIO, ESTALE, EACCES...).
  bool list_dirs(const std::string& rel, std::vector<std::pair<std::string, double>>& out,
                 std::string* error, std::vector<std::pair<std::string, int>>* failed = nullptr);

  // True once a call stopped returning for longer than the stall timeout:
  // the walk was given up, its results are incomplete.
  bool stalled() const { return stalled_; }

  struct Env;

 private:
  struct Pending;
  bool run_all(std::vector<std::function<void()>>& tasks);
  bool walk(std::vector<Pending>& stack);

  std::shared_ptr<Env> env_;
  const WalkMemory* memory_;
  WalkStats& stats_;
  WalkOptions options_;
  std::vector<std::string>* listed_ = nullptr;
  std::unordered_map<std::string, std::shared_ptr<const DirListing>>* remember_ = nullptr;
  bool adopt_later_ = false;
  std::vector<std::pair<std::string, std::shared_ptr<DirListing>>> to_adopt_;
  bool stalled_ = false;
};

// Tier-relative directories below `node` (whose own path is `rel`), with
// their mtimes: what WalkMemory needs to freeze a checkpoint, besides the
// mtime of `node` itself.
std::vector<std::pair<std::string, double>> subtree_dirs(const DirNode& node,
                                                         const std::string& rel);

// The node at `rel` (slash-separated, relative to `root`), or nullptr.
const DirNode* find_node(const DirNode& root, const std::string& rel);

// Reads a small regular file `name` relative to `dfd` (AT_FDCWD: as given),
// never following a symlink and never blocking on a FIFO or device. False when
// it cannot be opened, is not a regular file, is larger than `max_bytes` or a
// read fails.
bool read_small_file(int dfd, const std::string& name, std::uint64_t max_bytes, std::string& out);

}  // namespace ckptmon
