// The flags of sluice-dataflow (also settable through the environment and --config) and how they
// resolve into its settings: from the flags alone, or over a Dataflow object's settings
// (--dataflow-manifest), where only the flags set explicitly (flag, environment or --config
// file) override the manifest. docs/dataflow.md lists them.
//
// Thread safety: pure functions.
#pragma once

#include "common/config/config.h"
#include "common/config/spec.h"
#include "common/status.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_service.h"
#include "workers/dataflow/settings/dataflow_settings.h"

namespace sluice::dataflow {

// The program's flags, the serving ones (common/service/service_main.h) included.
config::Spec DataflowFlagSpec();

// The lease long polls a server with `worker_threads` threads lets wait (--max-waiting-leases
// 0): all but a quarter of them, keeping at least 4 threads for everything else, and at least 1.
size_t DefaultMaxWaitingLeases(size_t worker_threads);

// What the flags resolve to.
struct DataflowFlagSettings {
  DatasetSource dataset;
  DataflowConfig config;
  DataflowServiceOptions service;
};

// Settings from the flags alone (`manifest` null), or from a Dataflow's settings with the flags
// that were set explicitly applied over them. InvalidArgument names the flag.
Result<DataflowFlagSettings> ResolveDataflowFlags(const config::Config& cfg,
                                                  const DataflowSettings* manifest);

}  // namespace sluice::dataflow
