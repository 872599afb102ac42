// InterruptGuard: while one is alive, SIGINT (Ctrl-C) and SIGTERM only raise a flag, so
// `sluice run` can stop following, say so and exit 130 instead of dying mid-line. The previous
// dispositions are restored when the guard goes away.
//
// Why not common/process/signals.h: InstallShutdownSignals is once per process (it starts a
// watcher thread and cannot be undone), while a subcommand is a function that tests call many
// times in one process. The handler here only stores to a sig_atomic_t, which is
// async-signal-safe.
//
// Thread safety: create and destroy from one thread, and at most one guard at a time;
// interrupted() may be called from any thread.
#pragma once

#include <csignal>

namespace sluice::cli {

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Whether SIGINT or SIGTERM arrived since this guard was created.
  bool interrupted() const;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace sluice::cli
