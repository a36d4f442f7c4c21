#include "collectors/tree_walk.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;

void set_mtime(const fs::path& p, double t) {
  struct timespec ts[2];
  ts[0].tv_sec = static_cast<time_t>(t);
  ts[0].tv_nsec = 0;
  ts[1] = ts[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), ts, AT_SYMLINK_NOFOLLOW), 0);
}

TEST(TreeWalk, ListsFilesAndDirsSortedWithSizesAndMtimes) {
  testing::TempDir t;
  t.write("job/step-2/b.distcp", 300);
  t.write("job/step-2/a.distcp", 100);
  t.write("job/step-1/a.distcp", 10);
  set_mtime(t.path() / "job/step-2/a.distcp", 1700000000);
  testing::RootDir root(t.str());
  WalkStats stats;
  TreeWalker w(root.fd, root.dev, nullptr, stats);
  DirNode node;
  std::string err;
  ASSERT_TRUE(w.build("job", node, &err)) << err;
  EXPECT_EQ(node.name, "job");
  ASSERT_EQ(node.dirs.size(), 2u);
  EXPECT_EQ(node.dirs[0].name, "step-1");
  const DirNode* s2 = node.dir("step-2");
  ASSERT_NE(s2, nullptr);
  ASSERT_EQ(s2->files.size(), 2u);
  EXPECT_EQ(s2->files[0].name, "a.distcp");
  EXPECT_EQ(s2->files[0].size, 100u);
  EXPECT_DOUBLE_EQ(s2->files[0].mtime, 1700000000);
  EXPECT_EQ(s2->files[1].size, 300u);
  // job, step-1, step-2 listed; every entry below job stat'ed once plus the root of the build.
  EXPECT_EQ(stats.dirs_listed, 3u);
  EXPECT_EQ(stats.stat_calls, 1u + 2u + 1u + 2u);
}

TEST(TreeWalk, NeverFollowsSymlinks) {
  testing::TempDir t;
  testing::TempDir outside;
  outside.write("secret/model.pt", 1000);
  t.write("job/real.pt", 5);
  fs::create_directory_symlink(outside.path() / "secret", t.path() / "job/linked-dir");
  fs::create_symlink("real.pt", t.path() / "job/last.ckpt");
  testing::RootDir root(t.str());
  WalkStats stats;
  TreeWalker w(root.fd, root.dev, nullptr, stats);
  DirNode node;
  ASSERT_TRUE(w.build("job", node, nullptr));
  EXPECT_TRUE(node.dirs.empty());  // the directory symlink is an entry, not a subtree
  const FileEntry* dl = node.file("linked-dir");
  ASSERT_NE(dl, nullptr);
  EXPECT_EQ(dl->type, FileEntry::Type::kSymlink);
  const FileEntry* last = node.file("last.ckpt");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->type, FileEntry::Type::kSymlink);
  EXPECT_EQ(last->link_target, "real.pt");
  // A walk starting at a symlinked path is refused too.
  fs::create_directory_symlink(outside.path(), t.path() / "sneaky");
  DirNode n2;
  std::string err;
  EXPECT_FALSE(w.build("sneaky", n2, &err));
}

TEST(TreeWalk, UnchangedCommittedCheckpointIsNotListedAgain) {
  testing::TempDir t;
  for (int r = 0; r < 16; ++r) t.write("job/step-1/__" + std::to_string(r) + "_0.distcp", 10);
  t.write("job/step-1/sub/extra", 1);
  set_mtime(t.path() / "job/step-1/sub", 1700000100);
  set_mtime(t.path() / "job/step-1", 1700000200);
  testing::RootDir root(t.str());

  WalkMemory memory;
  {
    WalkStats s;
    TreeWalker w(root.fd, root.dev, nullptr, s);
    DirNode job;
    ASSERT_TRUE(w.build("job", job, nullptr));
    const DirNode* ck = find_node(job, "step-1");
    ASSERT_NE(ck, nullptr);
    WalkMemory::Frozen f;
    f.mtime = ck->mtime;
    f.dirs = subtree_dirs(*ck, "job/step-1");
    const std::vector<std::pair<std::string, double>> below{{"job/step-1/sub", 1700000100}};
    EXPECT_EQ(f.dirs, below);
    memory.frozen["job/step-1"].frozen = std::make_shared<const WalkMemory::Frozen>(f);
  }
  // The record a frozen checkpoint is reused from (the catalog's, in the
  // scanner), and which paths it was asked for.
  auto record = std::make_shared<Checkpoint>();
  record->path = "job/step-1";
  record->state = CkptState::kCommitted;
  std::vector<std::string> asked;
  WalkOptions opts;
  opts.frozen_record = [&](const std::string& rel, const WalkMemory::Frozen& f) {
    asked.push_back(rel);
    return f.matches(*record) ? std::shared_ptr<const Checkpoint>(record) : nullptr;
  };
  // One walk of the job with that memory and those options.
  auto walk_job = [&](WalkStats& s) {
    TreeWalker w(root.fd, root.dev, &memory, s, opts);
    DirNode job;
    EXPECT_TRUE(w.build("job", job, nullptr));
    return job;
  };
  {
    // No record to reuse (the catalog lost it, or it changed): listed.
    auto committed = record->state;
    record->state = CkptState::kPartial;
    WalkStats s;
    const DirNode job = walk_job(s);
    const DirNode* ck = find_node(job, "step-1");
    ASSERT_NE(ck, nullptr);
    EXPECT_FALSE(ck->reused);
    EXPECT_EQ(ck->files.size(), 16u);
    EXPECT_EQ(s.reused, 0u);
    EXPECT_EQ(asked, std::vector<std::string>{"job/step-1"});
    record->state = committed;
  }
  WalkStats s;
  const DirNode job = walk_job(s);
  const DirNode* ck = find_node(job, "step-1");
  ASSERT_NE(ck, nullptr);
  ASSERT_TRUE(ck->reused);
  EXPECT_EQ(ck->reused.get(), record.get());  // the record itself, not a copy
  EXPECT_TRUE(ck->files.empty());
  EXPECT_EQ(s.reused, 1u);
  EXPECT_EQ(s.dirs_listed, 1u);  // only the job directory
  // job itself, the entry step-1, and the one subdirectory checked for change.
  EXPECT_EQ(s.stat_calls, 3u);

  // A change deep inside (a file added to sub/) bumps sub's mtime: relisted.
  t.write("job/step-1/sub/late", 1);
  WalkStats s2;
  const DirNode job2 = walk_job(s2);
  const DirNode* ck2 = find_node(job2, "step-1");
  ASSERT_NE(ck2, nullptr);
  EXPECT_FALSE(ck2->reused);
  EXPECT_EQ(ck2->files.size(), 16u);
  EXPECT_EQ(s2.reused, 0u);
}

TEST(TreeWalk, ReadsManifestContentOnlyWhenAsked) {
  testing::TempDir t;
  t.write_text("job/iter/latest_checkpointed_iteration.txt", "1000\n");
  t.write_text("job/iter/notes.txt", "not read");
  testing::RootDir root(t.str());
  WalkStats s;
  TreeWalker w(root.fd, root.dev, nullptr, s);
  DirNode job;
  ASSERT_TRUE(w.build("job", job, nullptr));
  const DirNode* d = job.dir("iter");
  ASSERT_NE(d, nullptr);
  const FileEntry* tracker = d->file("latest_checkpointed_iteration.txt");
  ASSERT_NE(tracker, nullptr);
  ASSERT_TRUE(tracker->content);
  EXPECT_EQ(*tracker->content, "1000\n");
  EXPECT_FALSE(d->file("notes.txt")->content);
}

}  // namespace
}  // namespace ckptmon
