// CrashLoopBackOff: when and how soon sluice-node restarts a container that exited. Pure.
//
// Delays follow the kubelet's: the first exit is restarted at once, then 10 s, doubling per
// restart, capped at 300 s (0, 10, 20, 40, 80, 160, 300, 300, ...). A container that ran for at
// least 10 minutes before exiting starts the sequence again. The base and the cap are
// parameters so a test cluster can use 1 s (sluice-node --crash-backoff).
//
// Bookkeeping for the caller, per container: an exponent, "none yet" (-1) at first. At each exit
//   exponent = BackoffExponentAfterRun(exponent, how_long_it_ran);
//   if (ShouldRestart(policy, exit_code)) restart after RestartDelay(exponent);
#pragma once

#include <chrono>
#include <string>

namespace sluice::node {

inline constexpr std::chrono::milliseconds kInitialRestartDelay{10000};
inline constexpr std::chrono::milliseconds kMaxRestartDelay{300000};
// A run at least this long resets the backoff.
inline constexpr std::chrono::seconds kBackoffResetAfter{600};

// The wait before a restart: 0 for exponent <= 0, else base * 2^(exponent-1), capped at `max`.
std::chrono::milliseconds RestartDelay(int exponent,
                                       std::chrono::milliseconds base = kInitialRestartDelay,
                                       std::chrono::milliseconds max = kMaxRestartDelay);

// Whether a container that exited with `exit_code` is restarted under the pod's restartPolicy
// ("Always" — also when empty or unknown, kube's default —, "OnFailure": iff exit_code != 0,
// "Never").
bool ShouldRestart(const std::string& restart_policy, int exit_code);

// The exponent for the restart after a run of `ran`, given the exponent used for the previous
// restart (`previous`, -1 when there was none): 0 after the first exit or a run of >= 10
// minutes, else previous + 1 (saturating at 30, far past any cap).
int BackoffExponentAfterRun(int previous, std::chrono::seconds ran);

}  // namespace sluice::node
