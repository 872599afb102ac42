// RetryWhileUnavailable: an unreachable dataflow is asked again until it answers, the call fails
// otherwise, the timeout (of the clock given) passes, or the trainer stops.
#include "workers/trainer/retry_while_unavailable.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/clock.h"

namespace sluice::trainer {
namespace retry_while_unavailable_test {

using std::chrono::seconds;

TEST(RetryWhileUnavailableTest, StopsOnSuccessOnAnotherErrorOrAtTheTimeout) {
  struct Case {
    const char* name;
    int unavailable_calls;    // Unavailable this many times, then `then`.
    StatusCode then;          // kOk: answers 7.
    seconds each_call_takes;  // Of the fake clock.
    int want_calls;
    StatusCode want;
  };
  const Case cases[] = {
      {"answers at once", 0, StatusCode::kOk, seconds(0), 1, StatusCode::kOk},
      {"answers after a restart", 2, StatusCode::kOk, seconds(1), 3, StatusCode::kOk},
      {"another error is not retried", 0, StatusCode::kInvalidArgument, seconds(0), 1,
       StatusCode::kInvalidArgument},
      // 250 s a call against a 600 s timeout: the third call starts at 500 s, the fourth would
      // start at 750 s.
      {"gives up at the timeout", 100, StatusCode::kOk, seconds(250), 3, StatusCode::kUnavailable},
  };
  for (const Case& c : cases) {
    FakeClock clock;
    int calls = 0;
    auto call = [&]() -> Result<int> {
      ++calls;
      clock.Advance(c.each_call_takes);
      if (calls <= c.unavailable_calls) return Status::Unavailable("dataflow restarting");
      if (c.then != StatusCode::kOk) return Status(c.then, "bad request");
      return 7;
    };
    CancellationSource stop;
    // The pause between calls is 1 s of real time (cancellable): the cases keep retries few.
    Result<int> r = RetryWhileUnavailable(call, seconds(600), stop.Token(), clock);
    EXPECT_EQ(calls, c.want_calls) << c.name;
    EXPECT_EQ(r.status().code(), c.want) << c.name;
    if (r.ok()) {
      EXPECT_EQ(*r, 7) << c.name;
    }
  }
}

TEST(RetryWhileUnavailableTest, AStoppedTrainerDoesNotRetry) {
  FakeClock clock;
  CancellationSource stop;
  stop.Cancel();
  int calls = 0;
  Result<int> r = RetryWhileUnavailable(
      [&]() -> Result<int> {
        ++calls;
        return Status::Unavailable("dataflow restarting");
      },
      seconds(600), stop.Token(), clock);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

}  // namespace retry_while_unavailable_test
}  // namespace sluice::trainer
