// Test helper: polls a condition until it holds or a real-time limit passes, for tests that wait
// on another thread or process. The limit is generous (it is only reached when a test already
// fails); a test of "nothing happens" waits for a sign that the component worked again instead
// (docs/development.md).
//
// Thread safety: a function; `done` runs on the calling thread.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace sluice::test_support {

// Calls `done` every `poll` until it returns true or `timeout` has passed, then once more;
// returns its last answer.
inline bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

}  // namespace sluice::test_support
