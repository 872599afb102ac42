#include "common/process/signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/process/cancellation.h"

namespace sluice {
namespace {

using std::chrono::seconds;

// Each death test runs in a fresh re-executed process, so it can install its own handlers and
// be killed by a second signal without touching this process.
class SignalsDeathTest : public testing::Test {
 protected:
  void SetUp() override {
    saved_style_ = GTEST_FLAG_GET(death_test_style);
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
  // The test binary is shared with other areas' tests; leave the flag as found.
  void TearDown() override { GTEST_FLAG_SET(death_test_style, saved_style_); }

 private:
  std::string saved_style_;
};

// Installs, sends `first` and waits until it has cancelled the token, then sends `second`, which
// must end the process; reaching the end is a failure (exit code 1).
[[noreturn]] void ShutdownTwice(int first, int second) {
  CancellationSource source;
  if (!InstallShutdownSignals(source).ok()) std::_Exit(2);
  ::kill(::getpid(), first);
  if (!source.Token().WaitFor(seconds(10))) std::_Exit(3);
  ::kill(::getpid(), second);
  std::this_thread::sleep_for(seconds(10));
  std::_Exit(1);
}

TEST(SignalsTest, SigtermCancelsTheToken) {
  CancellationSource source;
  const CancellationToken token = source.Token();
  std::thread::id callback_thread;
  CancellationRegistration registration =
      token.OnCancel([&] { callback_thread = std::this_thread::get_id(); });
  ASSERT_TRUE(InstallShutdownSignals(source).ok());
  EXPECT_EQ(ShutdownSignal(), 0);
  EXPECT_FALSE(token.IsCancelled());

  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
  ASSERT_TRUE(token.WaitFor(seconds(10)));
  EXPECT_EQ(ShutdownSignal(), SIGTERM);
  // Callbacks run on the watcher thread, not in the signal handler or on this thread.
  registration.Reset();
  EXPECT_NE(callback_thread, std::thread::id());
  EXPECT_NE(callback_thread, std::this_thread::get_id());

  const Status again = InstallShutdownSignals(CancellationSource());
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  // No second signal here: it would end this test process by design.
}

TEST_F(SignalsDeathTest, SecondSigtermExitsWith143) {
  EXPECT_EXIT(ShutdownTwice(SIGTERM, SIGTERM), testing::ExitedWithCode(143),
              "received SIGTERM, shutting down(.|\n)*second SIGTERM, exiting now");
}

TEST_F(SignalsDeathTest, SecondSigintExitsWith130) {
  EXPECT_EXIT(ShutdownTwice(SIGINT, SIGINT), testing::ExitedWithCode(130),
              "received SIGINT(.|\n)*second SIGINT");
}

TEST_F(SignalsDeathTest, ExitCodeFollowsTheSecondSignal) {
  EXPECT_EXIT(ShutdownTwice(SIGTERM, SIGINT), testing::ExitedWithCode(130), "second SIGINT");
}

TEST_F(SignalsDeathTest, SigintCancelsAndReportsTheSignal) {
  EXPECT_EXIT(
      {
        CancellationSource source;
        if (!InstallShutdownSignals(source).ok()) std::_Exit(2);
        ::kill(::getpid(), SIGINT);
        if (!source.Token().WaitFor(seconds(10))) std::_Exit(3);
        std::_Exit(ShutdownSignal() == SIGINT ? 0 : 4);
      },
      testing::ExitedWithCode(0), "received SIGINT");
}

TEST_F(SignalsDeathTest, SigpipeIsIgnored) {
  EXPECT_EXIT(
      {
        ::signal(SIGPIPE, SIG_DFL);  // Not inherited as ignored from the test runner.
        if (!InstallShutdownSignals(CancellationSource()).ok()) std::_Exit(2);
        ::raise(SIGPIPE);
        int fds[2];
        if (::pipe(fds) != 0) std::_Exit(3);
        ::close(fds[0]);
        const char byte = 'x';
        const bool epipe = ::write(fds[1], &byte, 1) == -1 && errno == EPIPE;
        std::_Exit(epipe ? 0 : 4);
      },
      testing::ExitedWithCode(0), "");
}

TEST_F(SignalsDeathTest, WithoutInstallSigtermKills) {
  // The control for the tests above: the default action ends the process by the signal.
  EXPECT_EXIT(
      {
        ::signal(SIGTERM, SIG_DFL);
        ::kill(::getpid(), SIGTERM);
        std::this_thread::sleep_for(seconds(10));
        std::_Exit(1);
      },
      testing::KilledBySignal(SIGTERM), "");
}

TEST(SignalNameTest, Names) {
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
  EXPECT_EQ(SignalName(SIGPIPE), "SIGPIPE");
  EXPECT_EQ(SignalName(99), "signal 99");
}

}  // namespace
}  // namespace sluice
