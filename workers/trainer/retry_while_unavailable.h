// RetryWhileUnavailable: how the trainer rides out a dataflow restart. A call that fails with
// Unavailable (the dataflow unreachable) is repeated once a second until it succeeds, fails
// otherwise, `timeout` of `clock`'s time has passed since the first call, or `stop` fires.
//
// The pause between calls is a real-time, cancellable wait (stop.WaitFor); the give-up decision
// reads `clock`, so a test can pass the timeout without waiting it out.
//
// Thread safety: a function; `call` runs on the calling thread.
#pragma once

#include <chrono>

#include "common/clock.h"
#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::trainer {

// `call` returns a Result or a Status-carrying type with ok() and status(). Returns the last
// call's result.
template <typename Call>
auto RetryWhileUnavailable(const Call& call, std::chrono::nanoseconds timeout,
                           const CancellationToken& stop, const Clock& clock) {
  const Clock::MonoTime deadline = clock.Now() + timeout;
  auto result = call();
  while (!result.ok() && result.status().code() == StatusCode::kUnavailable &&
         clock.Now() < deadline && !stop.IsCancelled()) {
    (void)stop.WaitFor(std::chrono::seconds(1));
    result = call();
  }
  return result;
}

}  // namespace sluice::trainer
