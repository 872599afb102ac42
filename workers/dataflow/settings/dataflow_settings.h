// The settings of `sluice-dataflow` from a Dataflow custom resource (crds/dataflows.yaml): the
// operator runs one dataflow process per Dataflow and hands it the object, which this file maps
// onto the service's configuration (docs/dataflow.md, "Configuration from a Dataflow resource",
// has the table of every field).
//
// Dataset mounts. A Dataflow names its dataset as Kubernetes objects; the process sees them as
// files where the operator mounts them (DataflowMounts):
//   - spec.dataset.configMap {name, key}: the ConfigMap is mounted at `dataset_dir`, so the
//     JSONL file is <dataset_dir>/<key> (one file per key, the kubelet's convention);
//   - spec.dataset.pvc {claimName, path}: the claim is mounted read-only at `pvc_dir`, so the
//     JSONL file is <pvc_dir><path> (path starts with '/' and must name a file, not the root).
//
// Errors are InvalidArgument (Unprocessable for a manifest that fails the CRD's validation),
// naming the field as the CR spells it: "spec.buffer.filters[1].options.maxTokens".
//
// Thread safety: all functions are pure (LoadDataflowManifestFile reads one file).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "api/generated/dataflow_types.h"
#include "common/status.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow {

// Where the Dataflow's dataset volumes are mounted in this process.
struct DataflowMounts {
  std::string dataset_dir = "/var/run/sluice/dataset";  // ConfigMap: <dataset_dir>/<key>.
  std::string pvc_dir = "/var/run/sluice/dataset-pvc";  // PVC root: <pvc_dir><path>.
};

// What `sluice-dataflow` needs from a Dataflow. Serving, the log directory (the operator mounts
// spec.storage's claim and passes --wal-dir), fsync and timeouts are process flags, not CR fields.
struct DataflowSettings {
  std::string name;       // metadata.name.
  DatasetSource dataset;  // spec.dataset.
  // Core settings: policies (spec.workflow.roles), group size and task sampling (spec.sampling),
  // task workflow (spec.workflow + spec.reward), buffers (spec.buffer), batches (spec.batch),
  // version barrier, evaluation; cursor fields copied from spec.dataset.
  DataflowConfig config;
  // spec.batch.perPolicy[].groupsPerBatch: batch size of a request for 0 groups, per policy.
  std::map<std::string, int64_t> groups_per_batch_by_policy;
  // spec.batch.minibatches and perPolicy[].minibatches: carried for the trainer, not used here.
  int64_t minibatches = 1;
  std::map<std::string, int64_t> minibatches_by_policy;
  // spec.storage.size in bytes, when it is a quantity this parser understands.
  std::optional<uint64_t> storage_bytes;
  // Log sizes scaled to the claim: min(64Mi, size / 16) per segment and min(64Mi, size / 8)
  // between snapshots, at least 1Mi each (the flags' defaults when the size is unknown).
  uint64_t segment_bytes = uint64_t{64} << 20;
  uint64_t snapshot_bytes = uint64_t{64} << 20;
};

// Maps a Dataflow (normally defaulted and validated, see LoadDataflowManifest) to settings. Also
// checks what the CRD cannot: references between fields, filter and curator options, dataset
// paths that would leave their mount, and features the service does not implement yet.
Result<DataflowSettings> SettingsFromDataflow(const api::Dataflow& df,
                                              const DataflowMounts& mounts);

// Parses a YAML stream (one or more documents), picks the Dataflow named `name` (or the only
// Dataflow when `name` is empty; other kinds are ignored), applies the CRD defaults and validates
// it (schema and CEL rules), and returns the typed object. A validation failure is Unprocessable
// with every field error in its message.
Result<api::Dataflow> LoadDataflowManifest(std::string_view yaml, std::string_view name);
// The same, reading `path`; errors are prefixed with the path.
Result<api::Dataflow> LoadDataflowManifestFile(const std::string& path, std::string_view name);

// A Kubernetes quantity ("256Mi", "50Gi", "1G", "1024", "1.5Gi") in bytes; nullopt for anything
// else (negative, fractional bytes, exponents).
std::optional<uint64_t> QuantityBytes(std::string_view quantity);

}  // namespace sluice::dataflow
