// Pod volumes on a node without mount namespaces: every `spec.volumes` entry becomes a host
// directory (or, for hostPath, the host path itself), and the paths a container mounts them at
// are rewritten in what the process is given.
//
// MaterializeVolumes lays out, under the pod's directory:
//   emptyDir              pod_dir/volumes/<name>, created empty once and kept across container
//                         restarts (medium and sizeLimit are ignored); the caller removes it with
//                         pod_dir.
//   configMap, secret,    pod_dir/volumes/<name>, (re)written on every call: each file goes to a
//   downwardAPI,          temporary name in its directory and is renamed over the target, so a
//   projected             reader sees the old content or the new, never a partial file; files no
//                         longer projected are then deleted. Calling again refreshes contents.
//                         Files get `items[].mode`, else `defaultMode`, else 0644 (modes are the
//                         JSON integers, e.g. 420 = 0644; 0..0777). configMap files come from
//                         `data` and `binaryData`, secret files from base64-decoded `data`.
//                         A missing object is NotFound (`configmap "x" not found`,
//                         `secret "x" not found`) unless `optional: true` (then the directory is
//                         empty); a missing key named in `items` is NotFound
//                         (`configmap references non-existent config key: k`,
//                         `references non-existent secret key: k`) unless optional.
//                         downwardAPI items take `fieldRef` (metadata.name, namespace, uid, labels,
//                         annotations, labels['k'], annotations['k']; maps are written as sorted
//                         `key="value"` lines as kube does) or `resourceFieldRef` (containerName
//                         required). projected merges configMap, secret and downwardAPI sources
//                         into one directory (a later source wins on the same path);
//                         serviceAccountToken and clusterTrustBundle sources are InvalidArgument.
//   persistentVolumeClaim claims_dir/<namespace>/<claimName>, created when absent and never
//                         removed here: the claim's data outlives the pod.
//   hostPath              `path` itself, no copy. type DirectoryOrCreate creates the directory,
//                         FileOrCreate an empty file; Directory, File, Socket, CharDevice and
//                         BlockDevice require it to exist with that type.
// Any other volume type is InvalidArgument naming `spec.volumes[i]` and the type. `items[].path`
// (and keys used as file names) must be relative with no `..` element (InvalidArgument).
//
// ContainerMounts maps a container's `volumeMounts` onto those directories and RemapPath is THE
// DOCUMENTED REMAPPING that lets unmodified programs find their mounted files. There are no mount
// namespaces: a container's processes see the host file system, so a file "mounted" at
// /etc/config/app.yaml really lives at <pod_dir>/volumes/config/app.yaml. The node therefore
// rewrites the paths it passes to the process: every argv element, every env value and the
// workingDir go through RemapPath, which replaces a mountPath prefix by its host directory:
//   * a value equal to a mountPath, or starting with mountPath + "/", has that prefix replaced
//     ("/etc/config/app.yaml" -> "<host>/app.yaml");
//   * otherwise, for a `--flag=value` or `NAME=value` form, the same rule applies to the part
//     after the first '=' ("--config=/etc/config/app.yaml");
//   * the value (or the part after the first '=') may be a comma-separated list of paths, each
//     element rewritten on its own ("--files=/data/a,/data/b", "/data/a,/data/b"). When the
//     value itself starts with a mounted path, an '=' in it is part of the path
//     ("/data/k=v" -> "<host>/k=v").
// The longest matching mountPath wins; anything else is returned unchanged. Paths a program
// computes itself (hard-coded, read from a config file, joined at run time) are not rewritten;
// such programs can use the SLUICE_ROOT environment variable, which the node sets to the pod's
// root directory.
//
// Thread safety: stateless functions; MaterializeVolumes must not run concurrently for one pod.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "localcluster/node/container_env.h"

namespace sluice::node {

// Host directory (or hostPath file) of each pod volume, by volume name.
struct VolumeDirs {
  std::map<std::string, std::filesystem::path> by_volume;
};

// Creates and fills the host directories of the pod's `spec.volumes` (see the file comment).
// Idempotent; a later call refreshes configMap/secret/downwardAPI/projected contents.
Result<VolumeDirs> MaterializeVolumes(const nlohmann::json& pod,
                                      const std::filesystem::path& pod_dir,
                                      const std::filesystem::path& claims_dir,
                                      const ObjectLookup& lookup);

// One mount of a container: where it expects the files and where they really are.
struct PathMapping {
  std::string container_path;  // Absolute, normalised, no trailing '/'.
  std::filesystem::path host_path;
};

// The container's `volumeMounts` ({name, mountPath, subPath, readOnly}) resolved against `dirs`,
// sorted longest container_path first. A subPath (relative, no `..` element) is appended to the
// volume's directory and created as a directory when absent, as the kubelet does. Errors
// (InvalidArgument, with the field such as "volumeMounts[1].name"): an unknown volume name, a
// relative or duplicate mountPath, a mountPath of "/", a bad subPath, subPathExpr (unsupported).
// readOnly is not enforced.
Result<std::vector<PathMapping>> ContainerMounts(const nlohmann::json& container,
                                                 const VolumeDirs& dirs);

// The remapping described in the file comment.
std::string RemapPath(std::string_view value, const std::vector<PathMapping>& mounts);

// Replaces the file `target` with `data` and `mode` atomically (common/file/atomic_file.h), so
// readers see the old content or the new; an identical file (content and mode) is left alone, so
// a refresh that changes nothing is not an event. A directory at `target` is removed first.
// Errors name the path.
Status UpdateVolumeFile(const std::filesystem::path& target, const std::string& data, mode_t mode);

}  // namespace sluice::node
