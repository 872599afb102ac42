// SLUICE_CHECK: for conditions that cannot be false unless Sluice itself has a bug.
//
// Likely failures (bad input, network, disk) are Status values, never checks. A failed check
// prints the condition and location to stderr and aborts, so the bug is loud and has a core.
#pragma once

namespace sluice::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line);
}  // namespace sluice::internal

#define SLUICE_CHECK(cond)                                                   \
  do {                                                                       \
    if (!(cond)) ::sluice::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)
