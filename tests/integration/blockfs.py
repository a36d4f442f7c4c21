#!/usr/bin/python3
"""A FUSE file system whose statfs hangs on demand, like a stuck NFS/Lustre mount.

Usage: blockfs.py MOUNTPOINT CONTROL_FILE

The file system is one empty root directory. statfs() blocks for as long as
CONTROL_FILE (a path outside the mount) exists, then answers with fixed
figures (FIGURES below) so a test can check them exactly. Everything else
answers at once: libfuse runs requests on several threads, so a blocked
statfs does not stop getattr or the unmount.

Runs in the foreground until unmounted. Uses Debian's python3-fusepy.
"""

import errno
import os
import stat
import sys
import time
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # fusepy's float-time notice

import fusepy  # noqa: E402  (Debian's module name for fusepy)

# statvfs figures when not blocked; size = 1000 * 4096 bytes.
FIGURES = {
    "f_bsize": 4096,
    "f_frsize": 4096,
    "f_blocks": 1000,
    "f_bfree": 500,
    "f_bavail": 400,
    "f_files": 100,
    "f_ffree": 50,
    "f_favail": 50,
    "f_namemax": 255,
}


class BlockFS(fusepy.Operations):
    use_ns = True

    def __init__(self, control):
        self.control = control
        self.started = time.time_ns()

    def getattr(self, path, fh=None):
        if path != "/":
            raise fusepy.FuseOSError(errno.ENOENT)
        t = self.started
        return {
            "st_mode": stat.S_IFDIR | 0o755,
            "st_nlink": 2,
            "st_uid": 0,
            "st_gid": 0,
            "st_atime": t,
            "st_mtime": t,
            "st_ctime": t,
        }

    def readdir(self, path, fh):
        return [".", ".."]

    def statfs(self, path):
        # Poll rather than wait on anything clever: the test flips the file.
        while os.path.exists(self.control):
            time.sleep(0.02)
        return dict(FIGURES)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    mountpoint, control = sys.argv[1], sys.argv[2]
    fusepy.FUSE(BlockFS(control), mountpoint, foreground=True, nothreads=False,
                fsname="blockfs", subtype="blockfs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
