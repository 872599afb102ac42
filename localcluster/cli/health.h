// Health checks of the components (components.h HealthCheck): one probe, and the wait `sluice
// up` does after starting a component.
//
// WaitHealthy polls every 250 ms until the probe passes, the process exits (reported at once,
// with no point waiting out the timeout) or `timeout` passes; its error carries the last probe's
// reason ("connection refused", "kubeconfig not written yet"). kProcessAlive passes once the
// process has stayed alive for 1 s (or `timeout`, if shorter).
//
// Thread safety: plain functions; each probe makes its own client.
#pragma once

#include <sys/types.h>

#include <chrono>

#include "common/status.h"
#include "localcluster/cli/components.h"

namespace sluice::cli {

// One probe with short timeouts: OK when healthy, Unavailable with the reason otherwise.
// kProcessAlive has nothing to probe and passes.
Status ProbeHealth(const HealthCheck& check);

// As described above. `pid` is the component's process.
Status WaitHealthy(const HealthCheck& check, pid_t pid, std::chrono::milliseconds timeout);

}  // namespace sluice::cli
