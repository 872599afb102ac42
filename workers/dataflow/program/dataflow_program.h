// ServeDataflow: the body of sluice-dataflow (main.cpp), the data plane of one experiment
// (docs/dataflow.md). Loads the dataset,
// recovers its state from the write-ahead log in --wal-dir, and serves the /v1 API to rollout
// workers and trainers until SIGTERM; then it stops accepting, lets in-flight requests finish,
// writes a snapshot and closes the log.
//
// Configuration: flags (also env and --config), or a Dataflow object with --dataflow-manifest
// (dataflow_settings.h); a value set explicitly by flag, environment or --config file overrides
// the manifest, which overrides the flag defaults.
//
// Exit status: 0 after a clean shutdown, 1 for a runtime failure (log locked or damaged, port in
// use, the log failing while serving), 2 for bad flags or a dataset/config that cannot be used.
//
// Thread safety: called once, from RunService's body (common/service/service_main.h).
#pragma once

#include "common/service/service_main.h"

namespace sluice::dataflow {

// Runs the dataflow with the flags in `svc` (settings/dataflow_flags.h); returns the exit status
// above.
int ServeDataflow(service::Service& svc);

}  // namespace sluice::dataflow
