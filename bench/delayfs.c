// delayfs: a read-only FUSE pass-through of SOURCE that answers every
// getattr (the kernel's lookup and stat), readdir and readlink after a fixed
// delay, like a network file system's metadata round trip, and serves many
// requests at once (libfuse's multi-threaded loop; give -o max_threads=N).
// The kernel caches nothing: entry, attribute and negative timeouts are 0 and
// readdirplus is off, so every stat and lookup reaches this program.
//
//   delayfs SOURCE MOUNTPOINT DELAY_US [fuse options, e.g. -f -o max_threads=128]
//
// Benchmark only (bench/walk_latency_bench.sh); never part of the daemon.

#define FUSE_USE_VERSION 35
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static int src_fd = -1;
static long delay_us = 0;

static void delay(void) {
  if (delay_us <= 0) return;
  struct timespec ts = {delay_us / 1000000, (delay_us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static const char* rel(const char* path) {
  while (*path == '/') ++path;
  return *path ? path : ".";
}

static void* dfs_init(struct fuse_conn_info* conn, struct fuse_config* cfg) {
  cfg->use_ino = 1;
  cfg->entry_timeout = 0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->kernel_cache = 0;
  conn->want &= ~FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
  return NULL;
}

static int dfs_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  (void)fi;
  delay();
  return fstatat(src_fd, rel(path), st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static int dfs_readlink(const char* path, char* buf, size_t size) {
  delay();
  ssize_t n = readlinkat(src_fd, rel(path), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

static int dfs_opendir(const char* path, struct fuse_file_info* fi) {
  int fd = openat(src_fd, rel(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR* d = fdopendir(fd);
  if (d == NULL) {
    int e = errno;
    close(fd);
    return -e;
  }
  fi->fh = (uint64_t)(uintptr_t)d;
  return 0;
}

static int dfs_readdir(const char* path, void* buf, fuse_fill_dir_t filler, off_t off,
                       struct fuse_file_info* fi, enum fuse_readdir_flags flags) {
  (void)path;
  (void)off;
  (void)flags;
  delay();
  DIR* d = (DIR*)(uintptr_t)fi->fh;
  rewinddir(d);
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_ino = e->d_ino;
    st.st_mode = (mode_t)(DTTOIF(e->d_type));
    if (filler(buf, e->d_name, &st, 0, 0)) break;
  }
  return 0;
}

static int dfs_releasedir(const char* path, struct fuse_file_info* fi) {
  (void)path;
  closedir((DIR*)(uintptr_t)fi->fh);
  return 0;
}

static int dfs_open(const char* path, struct fuse_file_info* fi) {
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EROFS;
  int fd = openat(src_fd, rel(path), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  return 0;
}

static int dfs_read(const char* path, char* buf, size_t size, off_t off,
                    struct fuse_file_info* fi) {
  (void)path;
  ssize_t n = pread((int)fi->fh, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int dfs_release(const char* path, struct fuse_file_info* fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static int dfs_statfs(const char* path, struct statvfs* st) {
  (void)path;
  return fstatvfs(src_fd, st) == 0 ? 0 : -errno;
}

static const struct fuse_operations ops = {
    .init = dfs_init,
    .getattr = dfs_getattr,
    .readlink = dfs_readlink,
    .opendir = dfs_opendir,
    .readdir = dfs_readdir,
    .releasedir = dfs_releasedir,
    .open = dfs_open,
    .read = dfs_read,
    .release = dfs_release,
    .statfs = dfs_statfs,
};

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s SOURCE MOUNTPOINT DELAY_US [fuse options]\n", argv[0]);
    return 2;
  }
  src_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (src_fd < 0) {
    perror(argv[1]);
    return 1;
  }
  delay_us = strtol(argv[3], NULL, 10);
  // fuse_main sees: prog MOUNTPOINT [options]
  char** fargv = calloc((size_t)argc, sizeof(char*));
  int fargc = 0;
  fargv[fargc++] = argv[0];
  fargv[fargc++] = argv[2];
  for (int i = 4; i < argc; ++i) fargv[fargc++] = argv[i];
  int rc = fuse_main(fargc, fargv, &ops, NULL);
  free(fargv);
  return rc;
}
