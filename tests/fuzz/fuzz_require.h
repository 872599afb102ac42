// What every fuzz target does when one of its parser's invariants breaks: says which on stderr
// and aborts, so libFuzzer (and the replay driver, under gdb) report the input as a crash and
// keep it.
//
// Thread safety: stateless.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace sluice::fuzz {

// Aborts, naming `what` (the invariant, in words), unless `condition` holds.
inline void Require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace sluice::fuzz
