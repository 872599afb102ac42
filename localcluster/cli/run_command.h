// `sluice run`: apply an experiment's manifests, then follow it until its TrainerJobs finish.
//
//   1. Every manifest is read and split into documents first (a file that does not parse stops
//      everything before the server is contacted).
//   2. Each document is applied in order (apply_manifest.h), printing one line per object:
//      "trainerjob.sluice.dev/tiny created|configured|unchanged". A rejected document is
//      reported with the server's message and the others are still applied; then exit 1.
//   3. No TrainerJob in the manifests, or --no-follow: exit 0.
//   4. Every --interval: Get each TrainerJob, Dataflow and RolloutPool applied (a read error is
//      reported and the last good object kept), append one ProgressRow per TrainerJob to
//      DIR/experiments/<name>/progress.jsonl, render (progress_render.h: live view on a
//      terminal, else plain lines), and decide (run_outcome.h): all Succeeded -> step 5; one
//      Failed -> its name and reason on stderr, exit 1; --timeout passed -> "timed out after N
//      s", exit 1; no read reached the API server for --unreachable-timeout (the cluster was
//      stopped or died; shorter outages are sat out) -> "the API server has been unreachable
//      for N s", exit 1; SIGINT/SIGTERM -> exit 130. The resources are never deleted.
//   5. Every TrainerJob Succeeded: while an evaluation round at a TrainerJob's final version is
//      still to come (eval_wait.h), keep sampling as in 4 (one note says so: a line, or under
//      the live view) until it comes, --eval-wait passes or --timeout passes (whichever is
//      first; neither fails the run now), or SIGINT/SIGTERM (stops waiting). Then a line naming
//      the rounds that did not come (if any, and --eval-wait > 0), "Experiment NAME
//      succeeded.", the summary (run_outcome.h) and the eval lines (eval_summary.h, once per
//      Dataflow from every sample of it during this run): exit 0.
//
// Thread safety: a plain function; RunRun installs SIGINT/SIGTERM handlers for its duration
// (interrupt_guard.h), so run one at a time.
#pragma once

#include <functional>
#include <ostream>

#include "localcluster/cli/command_line.h"

namespace sluice::cli {

inline constexpr int kExitInterrupted = 130;

int RunRun(const RunOptions& options, std::ostream& out, std::ostream& err);

// RunRun with the stop condition given: `interrupted` is asked between samples (and during the
// wait between them, every 50 ms); true stops following with exit 130 (or, while waiting for
// evaluations after success, ends that wait: exit 0).
int RunExperiment(const RunOptions& options, const std::function<bool()>& interrupted,
                  std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
