// The step and version a TrainerJob's status shows while it runs, and once it finished, from the
// last report rank 0 gave (which may predate its last steps: the operator polls it every few
// seconds).
//
// Each step adds one version after the one reported. At least, a warm start publishes version
// warmStart.steps and RL step k version warmStart.steps + k; a restarted trainer may have
// continued above a dead run's versions (workers/trainer/version_continuity.h), so the reported
// version, not the spec, is the base.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::controllers {

struct TrainerProgress {
  int64_t step = 0;
  int64_t version = 0;
  friend bool operator==(const TrainerProgress&, const TrainerProgress&) = default;
};

// What status shows after a report of rank 0 (GET /v1/status) whose phase is `phase`: nothing
// changes while rank 0 is still "Initializing" (a restarted gang reports step 0 and version 0
// until it has resumed from its checkpoint), and the version never goes down: a resumed trainer
// continues above the versions the dead run announced (workers/trainer/version_continuity.h).
// The step may go down: it counts the steps the surviving weights have trained.
TrainerProgress ReportedProgress(TrainerProgress current, const std::string& phase,
                                 TrainerProgress reported);

// `reported`: status.step/status.version from the last report (0/0 when none was read);
// `warm_steps`: spec.warmStart.steps (0 without a warm start); `steps`: spec.steps.
TrainerProgress FinalProgress(TrainerProgress reported, int64_t warm_steps, int64_t steps);

}  // namespace sluice::controllers
