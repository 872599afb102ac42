// The test helper that hands out loopback ports: ports below the ephemeral range, distinct,
// bindable, and locked against other processes' draws.
#include "tests/support/free_port.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

namespace sluice::test_support {
namespace {

using free_port_detail::EphemeralLow;
using free_port_detail::kFirstPort;
using free_port_detail::Probe;

std::string LockPath(int port) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/sluice-test-ports/" +
         std::to_string(port);
}

TEST(FreePortTest, DrawsDistinctBindablePortsBelowTheEphemeralRange) {
  std::set<int> seen;
  for (int port : FreePorts(40)) {
    EXPECT_GE(port, kFirstPort);
    EXPECT_LT(port, EphemeralLow());
    EXPECT_TRUE(seen.insert(port).second) << port << " was drawn twice";
    EXPECT_EQ(Probe(port).port(), port) << port << " is not bindable";
  }
}

TEST(FreePortTest, APairLeavesTheNextPortFreeAndAvoidsTheGivenPorts) {
  const std::vector<int> avoid = FreePorts(3);
  for (int i = 0; i < 20; ++i) {
    const int port = FreePortPair(avoid);
    ASSERT_GE(port, kFirstPort);
    EXPECT_LT(port + 1, EphemeralLow());
    for (int a : avoid) {
      EXPECT_NE(port, a);
      EXPECT_NE(port + 1, a);
    }
    EXPECT_EQ(Probe(port + 1).port(), port + 1);
  }
}

// Another process (here: another open file description, which flock treats alike) cannot take
// the lock of a drawn port, so a parallel test's draw skips it.
TEST(FreePortTest, ADrawnPortIsLockedAgainstOtherDraws) {
  const int port = FreePort();
  const int fd = ::open(LockPath(port).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << LockPath(port);
  EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);
  ::close(fd);
}

}  // namespace
}  // namespace sluice::test_support
