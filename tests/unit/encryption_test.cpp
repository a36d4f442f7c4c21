#include "collectors/encryption.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "collectors/mountinfo.hpp"
#include "temp_dir.hpp"
#include "tests/test_paths.hpp"

namespace ckptmon {
namespace {

const std::string kFixtures = std::string(CKPTMON_SOURCE_DIR) + "/tests/fixtures";

MountInfo mount_of(std::string fstype, std::string source, unsigned major, unsigned minor,
                   std::string options = "rw", std::string super = "rw") {
  MountInfo m;
  m.fstype = std::move(fstype);
  m.source = std::move(source);
  m.major = major;
  m.minor = minor;
  m.mount_point = "/ckpt";
  m.mount_options = std::move(options);
  m.super_options = std::move(super);
  return m;
}

TEST(Encryption, InTransitFromTheNfsSecurityFlavourAndTransport) {
  EXPECT_EQ(
      encryption_in_transit(mount_of("nfs4", "srv:/x", 0, 50, "rw",
                                     "rw,vers=4.2,rsize=1048576,sec=krb5p,clientaddr=10.0.0.2")),
      "krb5p");
  // krb5 authenticates and krb5i checks integrity: neither hides the data.
  EXPECT_EQ(encryption_in_transit(mount_of("nfs4", "srv:/x", 0, 50, "rw", "rw,vers=4.2,sec=krb5i")),
            "none");
  EXPECT_EQ(encryption_in_transit(mount_of("nfs", "srv:/x", 0, 51, "rw", "rw,vers=3,sec=sys")),
            "none");
  EXPECT_EQ(encryption_in_transit(mount_of("nfs4", "srv:/x", 0, 52, "rw", "rw,xprtsec=mtls")),
            "tls");
  EXPECT_EQ(encryption_in_transit(mount_of("cifs", "//srv/x", 0, 53, "rw", "rw,vers=3.1.1,seal")),
            "smb3-seal");
  EXPECT_EQ(encryption_in_transit(mount_of("ext4", "/dev/sda2", 8, 2)), "local");
  EXPECT_EQ(encryption_in_transit(mount_of("tmpfs", "tmpfs", 0, 60)), "local");
  // Lustre and FUSE file systems may encrypt on the wire in ways the mount does not say.
  EXPECT_EQ(encryption_in_transit(mount_of("lustre", "mgs@tcp:/fs", 0, 61)), "unknown");
  EXPECT_EQ(encryption_in_transit(mount_of("fuse.sshfs", "h:/x", 0, 62)), "unknown");
}

// A device-mapper stack as sysfs shows it: dm-2 a LUKS2 mapping of
// nvme0n1p2, dm-3 an LVM volume on top of it, dm-4 an LVM volume on sda2.
void write_stack(const testing::TempDir& sys) {
  auto dev = [&](const std::string& mm, const std::string& name) {
    sys.write_text("dev/block/" + mm + "/uevent", "MAJOR=253\nDEVNAME=" + name + "\n");
    sys.write_text("class/block/" + name + "/uevent", "DEVNAME=" + name + "\n");
  };
  dev("253:2", "dm-2");
  sys.write_text("class/block/dm-2/dm/uuid", "CRYPT-LUKS2-1b7e3c2a9f0d4e6b8a5c7d9e1f2a3b4c-luks\n");
  sys.write_text("class/block/dm-2/slaves/nvme0n1p2", "");
  sys.write_text("class/block/nvme0n1p2/uevent", "DEVNAME=nvme0n1p2\n");
  dev("253:3", "dm-3");
  sys.write_text("class/block/dm-3/dm/uuid", "LVM-Xq3v9uRzK2d8mNw0bT5cYp1eHf7gJs4a\n");
  sys.write_text("class/block/dm-3/slaves/dm-2", "");
  dev("253:4", "dm-4");
  sys.write_text("class/block/dm-4/dm/uuid", "LVM-aQkLr6oVi2xWn8zUy0tDmPb3cFe9hGj1\n");
  sys.write_text("class/block/dm-4/slaves/sda2", "");
  sys.write_text("class/block/sda2/uevent", "DEVNAME=sda2\n");
}

TEST(Encryption, DmCryptAnywhereInTheDeviceStack) {
  testing::TempDir sys;
  write_stack(sys);
  std::string err;
  EXPECT_EQ(dm_crypt_in_stack(sys.str(), 253, 2, "/dev/mapper/luks-1b7e", err), true) << err;
  // LVM on LUKS: the crypt target is one level down.
  EXPECT_EQ(dm_crypt_in_stack(sys.str(), 253, 3, "/dev/mapper/vg-ckpt", err), true) << err;
  EXPECT_EQ(dm_crypt_in_stack(sys.str(), 253, 4, "/dev/mapper/vg-plain", err), false) << err;
  // The LVM volume and the md array of the shared block fixture: no crypt.
  EXPECT_EQ(dm_crypt_in_stack(kFixtures + "/sysfs-block", 253, 0, "/dev/mapper/vg0-ckpt", err),
            false)
      << err;
  EXPECT_EQ(dm_crypt_in_stack(kFixtures + "/sysfs-block", 9, 0, "/dev/md0", err), false) << err;
}

TEST(Encryption, AStackThatCannotBeReadIsUnknownNotNone) {
  // dm-1 of the block fixture has no dm/uuid: whether it is a crypt target is unknown.
  std::string err;
  EXPECT_EQ(
      dm_crypt_in_stack(kFixtures + "/sysfs-block", 253, 1, "/dev/mapper/vgmd-milestone", err),
      std::nullopt);
  EXPECT_NE(err.find("dm-1/dm/uuid"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(dm_crypt_in_stack(kFixtures + "/sysfs-block", 0, 99, "none", err), std::nullopt);
  EXPECT_FALSE(err.empty());
}

class Root {
 public:
  explicit Root(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  ~Root() {
    if (fd_ >= 0) ::close(fd_);
  }
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

TEST(Encryption, ABlockFileSystemWithoutFscryptOrDmCryptIsNone) {
  testing::TempDir root;
  root.write("job-a/step-1/x", 1);
  testing::TempDir sys;
  write_stack(sys);
  Root fd(root.str());
  ASSERT_GE(fd.fd(), 0);
  // Whatever /tmp is here, it has no fscrypt policy: the stack decides.
  const MountInfo plain = mount_of("ext4", "/dev/mapper/vg-plain", 253, 4);
  EncryptionDetection d = detect_encryption(fd.fd(), &plain, sys.str());
  EXPECT_EQ(d.at_rest, "none") << d.detail;
  EXPECT_EQ(d.in_transit, "local");
  EXPECT_NE(d.detail.find("no dm-crypt target under /dev/mapper/vg-plain"), std::string::npos)
      << d.detail;
  const MountInfo luks = mount_of("xfs", "/dev/mapper/vg-ckpt", 253, 3);
  d = detect_encryption(fd.fd(), &luks, sys.str());
  EXPECT_EQ(d.at_rest, "dm-crypt") << d.detail;
  // A device whose stack is not in sysfs: unknown, not none.
  const MountInfo lost = mount_of("ext4", "/dev/sdz1", 65, 145);
  d = detect_encryption(fd.fd(), &lost, sys.str());
  EXPECT_EQ(d.at_rest, "unknown") << d.detail;
  EXPECT_NE(d.detail.find("could not be read"), std::string::npos) << d.detail;
}

TEST(Encryption, FileSystemTypesAndWhatAClientCannotSee) {
  testing::TempDir root;
  Root fd(root.str());
  ASSERT_GE(fd.fd(), 0);
  const std::string sys = kFixtures + "/sysfs-block";
  const MountInfo ecryptfs = mount_of("ecryptfs", "/home/.ckpt", 0, 70);
  EXPECT_EQ(detect_encryption(fd.fd(), &ecryptfs, sys).at_rest, "ecryptfs");
  const MountInfo gocryptfs = mount_of("fuse.gocryptfs", "/srv/cipher", 0, 71);
  EXPECT_EQ(detect_encryption(fd.fd(), &gocryptfs, sys).at_rest, "gocryptfs");
  // An NFS export's disks are the server's: unknown at rest, known in transit.
  const MountInfo nfs = mount_of("nfs4", "srv:/ckpt", 0, 72, "rw", "rw,sec=krb5p");
  const EncryptionDetection d = detect_encryption(fd.fd(), &nfs, sys);
  EXPECT_EQ(d.at_rest, "unknown");
  EXPECT_EQ(d.in_transit, "krb5p");
  EXPECT_NE(d.detail.find("not visible from a client"), std::string::npos) << d.detail;
  // No mount found: both unknown.
  const EncryptionDetection none = detect_encryption(fd.fd(), nullptr, sys);
  EXPECT_EQ(none.at_rest, "unknown");
  EXPECT_EQ(none.in_transit, "unknown");
}

TEST(Encryption, FscryptPolicyOfAPlainDirectoryIsNoneOrUnsupported) {
  testing::TempDir root;
  Root fd(root.str());
  ASSERT_GE(fd.fd(), 0);
  int err = 0;
  const FscryptPolicy p = fscrypt_policy_of(fd.fd(), &err);
  // ext4 with the encrypt feature says ENODATA; tmpfs, overlay or ext4
  // without it say ENOTTY or EOPNOTSUPP. Never encrypted, never unknown.
  EXPECT_TRUE(p == FscryptPolicy::kNone || p == FscryptPolicy::kUnsupported)
      << static_cast<int>(p) << " errno " << err;
}

}  // namespace
}  // namespace ckptmon
