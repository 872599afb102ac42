// The mounts a sandbox makes read-only: parsed from /proc/self/mountinfo text (proc(5)) before
// the sandbox forks, so the child only replays a prepared list.
//
// Pure functions. Thread safety: values only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sluice::rollout {

struct ReadOnlyRemount {
  std::string path;     // The mount point, unescaped (mountinfo writes ' ' as \040).
  unsigned long flags;  // For mount(2): MS_REMOUNT | MS_BIND | MS_RDONLY plus the flags the
                        // mount already has that a user namespace may not drop (nosuid, nodev,
                        // noexec and the atime flags).
};

// Every mount point in `mountinfo`, in its order (parents before children), except /proc and
// what is under it (the sandbox mounts its own) and except mounts under `skip_under` (what the
// sandbox covers anyway). Lines that do not parse are skipped.
std::vector<ReadOnlyRemount> ReadOnlyRemounts(std::string_view mountinfo,
                                              const std::vector<std::string>& skip_under);

// Whether `path` is `dir` or inside it ("/var/run" is under "/var", "/variable" is not).
bool PathIsUnder(std::string_view path, std::string_view dir);

}  // namespace sluice::rollout
