// Cancellation: a one-way "stop now" signal shared between the code that decides to stop and the
// loops, waits and callbacks that must react.
//
//   CancellationSource   owns the right to cancel. Cancel() is idempotent.
//   CancellationToken    a cheap, copyable view for the cancelled code: IsCancelled(), WaitFor()
//                        (a sleep that ends early on cancellation), OnCancel(callback).
//   CancellationRegistration  returned by OnCancel; unregisters the callback when destroyed.
//
// A child source, CancellationSource(parent_token), is cancelled when its parent is and can also
// be cancelled alone, so a component can stop one sub-loop without stopping the process.
//
// Callbacks run exactly once: on the thread that calls Cancel(), in registration order, or at once
// on the registering thread if the token is already cancelled. They must be quick and must not
// throw (a throw terminates). Destroying a registration while its callback runs on another thread
// waits for the callback to return, so a callback never outlives the objects it captures;
// destroying it from inside the callback itself does not wait.
//
// Lifetime: sources and tokens share reference-counted state; any of them may outlive the others.
// Destroying a source does not cancel it. A default-constructed token is never cancelled.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace sluice {

namespace internal {
class CancellationState;
}  // namespace internal

class [[nodiscard]] CancellationRegistration {
 public:
  CancellationRegistration() = default;
  CancellationRegistration(CancellationRegistration&& other) noexcept;
  CancellationRegistration& operator=(CancellationRegistration&& other) noexcept;
  CancellationRegistration(const CancellationRegistration&) = delete;
  CancellationRegistration& operator=(const CancellationRegistration&) = delete;
  ~CancellationRegistration();

  // Unregisters now (see the header comment for when this waits). Idempotent.
  void Reset();

 private:
  friend class CancellationToken;
  CancellationRegistration(std::shared_ptr<internal::CancellationState> state, uint64_t id);

  std::shared_ptr<internal::CancellationState> state_;
  uint64_t id_ = 0;
};

class CancellationToken {
 public:
  // A token that is never cancelled.
  CancellationToken() = default;

  bool IsCancelled() const;
  // Whether a source exists that could cancel this token (false for a default token).
  bool CanBeCancelled() const { return state_ != nullptr; }

  // Blocks for up to `timeout` or until cancelled, whichever is first. Returns IsCancelled().
  // For loops that sleep between iterations: `while (!token.WaitFor(period)) DoWork();`.
  bool WaitFor(std::chrono::nanoseconds timeout) const;
  // As WaitFor, with an absolute deadline.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) const;
  // Blocks until cancelled; forever for a token that cannot be cancelled.
  void Wait() const;

  // Runs `callback` once when cancelled (see the header comment). Keep the registration alive for
  // as long as the callback should stay registered.
  CancellationRegistration OnCancel(std::function<void()> callback) const;

 private:
  friend class CancellationSource;
  explicit CancellationToken(std::shared_ptr<internal::CancellationState> state)
      : state_(std::move(state)) {}

  std::shared_ptr<internal::CancellationState> state_;
};

class CancellationSource {
 public:
  CancellationSource();
  // A child of `parent`: cancelled when the parent is (at once if it already is), never the
  // other way round.
  explicit CancellationSource(const CancellationToken& parent);

  // Cancels and runs the callbacks on this thread. Returns true if this call did it, false if it
  // was already cancelled.
  bool Cancel();
  bool IsCancelled() const;
  CancellationToken Token() const { return CancellationToken(state_); }

 private:
  std::shared_ptr<internal::CancellationState> state_;
};

}  // namespace sluice
