// Image map: which local executable "runs" a container image on the local cluster.
//
// There is no container runtime: a container is a process, and its image names the binary. The
// map is a YAML file (`sluice-node --image-map`):
//
//   images:
//     - image: sluice/rollout:dev       # exact reference (with tag or digest) ...
//       executable: sluice-rollout      # relative: under --bin-dir; absolute: as is
//     - image: python                   # ... or a repository, any tag
//       executable: /usr/bin/python3
//
// Without a matching entry, the default rule maps `sluice/<name>[:tag]` (also with a registry
// prefix, `ghcr.io/org/sluice/<name>`) to `<bin-dir>/sluice-<name>`, so the operator's images run
// the binaries `make` built. Any other image is an error (the container waits with ErrImagePull).
//
// Thread safety: immutable after Parse; Resolve is const.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::node {

struct ImageMapEntry {
  std::string image;       // A full reference or a bare repository.
  std::string executable;  // Absolute, or relative to the bin dir.
};

class ImageMap {
 public:
  ImageMap() = default;  // Only the default rule.
  // Errors name the entry (`images[2].executable`).
  static Result<ImageMap> Parse(std::string_view yaml_text);
  static Result<ImageMap> Load(const std::filesystem::path& path);

  // The executable for `image`, not checked for existence. NotFound when nothing maps it.
  Result<std::filesystem::path> Resolve(const std::string& image,
                                        const std::filesystem::path& bin_dir) const;

  const std::vector<ImageMapEntry>& entries() const { return entries_; }

 private:
  std::vector<ImageMapEntry> entries_;
};

// "ghcr.io/x/sluice/rollout:1.2@sha256:..." -> "ghcr.io/x/sluice/rollout" (no tag, no digest).
std::string ImageRepository(std::string_view image);

}  // namespace sluice::node
