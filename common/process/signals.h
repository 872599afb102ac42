// Shutdown signals: SIGTERM and SIGINT cancel the process's root CancellationSource.
//
// Kubernetes stops a pod with SIGTERM, then SIGKILL after the grace period; a person stops a
// binary with Ctrl-C (SIGINT). The first of either is logged to stderr and cancels the source so
// every component can drain and exit cleanly. A second one (a person hammering Ctrl-C, or a
// stuck shutdown) exits the process at once with the shell's code for that signal: 130 for
// SIGINT, 143 for SIGTERM. SIGPIPE is ignored so a write to a closed socket returns EPIPE rather
// than killing the process.
//
// How: a signal handler that only does async-signal-safe work. The first signal writes one byte
// to a pipe read by a dedicated watcher thread, which logs and calls Cancel(); so cancellation
// callbacks of the root source run on that watcher thread, never inside the handler. A second
// signal is handled in the handler itself (write to stderr, _exit), so it works even while
// shutdown code is stuck. Handlers fire on whatever thread the kernel picks; no signal mask is
// needed.
//
// Call once, early in main: before anything else starts threads (so no library has blocked or
// claimed these signals first) and before anything long-running. Installing twice is an error.
//
// Thread safety: InstallShutdownSignals is not reentrant (call it from main). ShutdownSignal()
// may be called from any thread.
#pragma once

#include <string>

#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice {

// AlreadyExists if called before; Internal if the pipe, handler or thread cannot be set up.
Status InstallShutdownSignals(CancellationSource source);

// The first shutdown signal received (SIGTERM or SIGINT), or 0 before any. Set before the source
// is cancelled, so a component that sees the token cancelled can log the reason.
int ShutdownSignal();

// "SIGTERM", "SIGINT", "SIGPIPE", ... or "signal N".
std::string SignalName(int signal_number);

}  // namespace sluice
