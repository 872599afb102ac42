// Where `sluice up` finds its programs and the default cluster description.
//
// Programs: next to the sluice executable (readlink /proc/self/exe), or --bin-dir. The cluster
// description: --config FILE, else examples/local-cluster.yaml in the source tree the binary was
// built from (<bin-dir>/../../examples/, since binaries land in <source>/build/bin) or under the
// current directory. ClusterConfigCandidates is the pure part.
//
// Thread safety: plain functions.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::cli {

// The directory of the running executable.
Result<std::string> SelfExecutableDir();

// Where to look for the default cluster description, in order.
std::vector<std::string> ClusterConfigCandidates(const std::string& bin_dir,
                                                 const std::string& cwd);

// `explicit_path` (made absolute against `cwd`) when given, which must exist; else the first
// candidate that exists. NotFound listing the places looked at otherwise.
Result<std::string> FindClusterConfig(const std::string& explicit_path, const std::string& bin_dir,
                                      const std::string& cwd);

// The current directory.
std::string CurrentDirectory();

}  // namespace sluice::cli
