#!/usr/bin/python3
"""A read-only FUSE passthrough whose getattr of one path fails on demand,
like a flaky NFS or Lustre server answering EIO or ESTALE.

Usage: faultfs.py SOURCE MOUNTPOINT CONTROL_FILE

Every request is passed to SOURCE. While CONTROL_FILE (a path outside the
mount) holds "ERRNO_NAME /path" (for example "EIO /jobA"), getattr (the
kernel's lookup and stat) of that path inside the mount fails with that
errno; "DELAY SECONDS" delays every getattr by that long instead, like a
network file system's metadata round trip; an absent or empty file means no
fault. The kernel caches nothing
(attr_timeout and entry_timeout 0), so every stat reaches this process.
Nothing is ever written: the mount is read-only.

Runs in the foreground until unmounted. Uses Debian's python3-fusepy.
"""

import errno
import os
import sys
import time
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # fusepy's float-time notice

import fusepy  # noqa: E402  (Debian's module name for fusepy)


class FaultFS(fusepy.Operations):
    use_ns = True

    def __init__(self, source, control):
        self.source = source
        self.control = control

    def _real(self, path):
        return os.path.join(self.source, path.lstrip("/"))

    def _fault(self, path):
        try:
            with open(self.control) as f:
                text = f.read().split()
        except FileNotFoundError:
            return 0
        if len(text) == 2 and text[0] == "DELAY":
            time.sleep(float(text[1]))
            return 0
        if len(text) != 2 or text[1] != path:
            return 0
        return getattr(errno, text[0])

    def getattr(self, path, fh=None):
        e = self._fault(path)
        if e:
            raise fusepy.FuseOSError(e)
        try:
            st = os.lstat(self._real(path))
        except OSError as err:
            raise fusepy.FuseOSError(err.errno)
        out = {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid",
                                           "st_size", "st_ino")}
        for k in ("st_atime", "st_mtime", "st_ctime"):
            out[k] = getattr(st, k + "_ns")
        return out

    def readdir(self, path, fh):
        try:
            return [".", ".."] + os.listdir(self._real(path))
        except OSError as err:
            raise fusepy.FuseOSError(err.errno)

    def readlink(self, path):
        return os.readlink(self._real(path))

    def open(self, path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC | os.O_CREAT):
            raise fusepy.FuseOSError(errno.EROFS)
        try:
            return os.open(self._real(path), os.O_RDONLY)
        except OSError as err:
            raise fusepy.FuseOSError(err.errno)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def release(self, path, fh):
        os.close(fh)

    def statfs(self, path):
        st = os.statvfs(self.source)
        return {k: getattr(st, k) for k in ("f_bsize", "f_frsize", "f_blocks", "f_bfree",
                                            "f_bavail", "f_files", "f_ffree", "f_favail",
                                            "f_namemax")}


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    source, mountpoint, control = sys.argv[1:]
    fusepy.FUSE(FaultFS(source, control), mountpoint, foreground=True, nothreads=False,
                ro=True, attr_timeout=0, entry_timeout=0, negative_timeout=0,
                fsname="faultfs", subtype="faultfs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
