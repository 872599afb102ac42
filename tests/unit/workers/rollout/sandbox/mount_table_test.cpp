#include "workers/rollout/sandbox/mount_table.h"

#include <gtest/gtest.h>
#include <sys/mount.h>

#include <string>
#include <vector>

namespace sluice::rollout {
namespace {

constexpr unsigned long kBase = MS_REMOUNT | MS_BIND | MS_RDONLY;

TEST(MountTableTest, ListsMountsReadOnlyKeepingTheirLockedFlags) {
  const std::string mountinfo =
      "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
      "22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
      "40 22 0:40 / /proc/sys/fs/binfmt_misc rw - binfmt_misc x rw\n"
      "24 27 0:6 / /dev rw,nosuid,relatime - devtmpfs devtmpfs rw,mode=755\n"
      "28 27 0:25 / /mnt/with\\040space ro,nosuid,nodev,noatime shared:5 - tmpfs t ro\n"
      "29 27 0:26 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw\n"
      "30 29 0:27 / /tmp/inner rw - tmpfs tmpfs rw\n"
      "31 27 0:28 / /run/secrets/kubernetes.io ro,nodiratime - tmpfs tmpfs rw\n"
      "32 27 0:29 / /variable rw,noexec - tmpfs tmpfs rw\n"
      "not a mountinfo line\n";
  const std::vector<ReadOnlyRemount> remounts = ReadOnlyRemounts(mountinfo, {"/tmp", "/run"});
  ASSERT_EQ(remounts.size(), 4u);
  EXPECT_EQ(remounts[0].path, "/");
  EXPECT_EQ(remounts[0].flags, kBase | MS_RELATIME);
  EXPECT_EQ(remounts[1].path, "/dev");
  EXPECT_EQ(remounts[1].flags, kBase | MS_NOSUID | MS_RELATIME);
  EXPECT_EQ(remounts[2].path, "/mnt/with space");
  EXPECT_EQ(remounts[2].flags, kBase | MS_NOSUID | MS_NODEV | MS_NOATIME);
  EXPECT_EQ(remounts[3].path, "/variable");
  EXPECT_EQ(remounts[3].flags, kBase | MS_NOEXEC);
}

TEST(MountTableTest, PathIsUnderComparesWholeComponents) {
  struct Case {
    const char* path;
    const char* dir;
    bool under;
  };
  const Case cases[] = {
      {"/var/run", "/var", true},    {"/var", "/var", true},        {"/variable", "/var", false},
      {"/var/run", "/var/", true},   {"/etc", "/", true},           {"/", "/", true},
      {"/tmp", "/tmp/inner", false}, {"/proc/1/fd", "/proc", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PathIsUnder(c.path, c.dir), c.under) << c.path << " under " << c.dir;
  }
}

}  // namespace
}  // namespace sluice::rollout
