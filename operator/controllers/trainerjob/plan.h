// What one reconcile of a TrainerJob does to its gang of rank Pods and to the job, decided from
// facts alone.
//
// The reconciler (reconciler.h) gathers the facts (the job's spec and status, its rank Pods, rank
// 0's GET /v1/status while the job runs, the RolloutPools that still lack the final weights),
// calls Plan, and carries the plan out: Pod deletions and creations, the status and conditions of
// the verdict, its Events. Plan holds every rule about when the gang starts, restarts, fails or
// completes, so those rules have table tests without an API server or trainers.
//
// The rules, in the order Plan applies them:
//   1. A finished job (phase Succeeded or Failed) runs nothing: its ranks are deleted, except that
//      a succeeded job's running rank 0 keeps serving the final weights until every RolloutPool
//      hosting the policy holds them or kFinalWeightsGrace passed (final_weights.h); after
//      runPolicy.ttlSecondsAfterFinished the job itself is deleted.
//   2. runPolicy.suspend deletes the ranks (phase Suspended); leaving it resumes the job (its
//      deadline's clock restarts).
//   3. Ranks of an older attempt or template are deleted before the new gang starts.
//   4. Rank 0 succeeded (its Pod exited 0, or it reports phase Succeeded): the job completes.
//   5. Rank 0 reports its Dataflow starved it (data_exhaustion.h): the job fails, DataExhausted.
//   6. A rank failed, or vanished while the gang ran: the whole gang restarts (restarts + 1),
//      until runPolicy.backoffLimit restarts were spent; then the job fails, BackoffLimitExceeded.
//   7. runPolicy.activeDeadlineSeconds passed since the gang started: the job fails.
//   8. Otherwise the missing ranks of this attempt are created together; the job is Admitted once
//      every rank has a node, and not (GangPending) when a rank stayed unschedulable for the gang
//      timeout; it runs once every rank runs.
//
// Pure functions: no I/O, no clocks (times are Unix seconds passed in). Thread safety: values
// only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::controllers::trainerjob {

// One rank Pod of the job.
struct RankPod {
  std::string name;
  int rank = 0;                 // sluice.dev/rank.
  bool current = false;         // Of this attempt and template (RankPodCurrent).
  std::string phase;            // status.phase ("" unset).
  std::string reason;           // status.reason ("" unset), e.g. "Evicted".
  bool terminating = false;     // metadata.deletionTimestamp is set.
  bool unschedulable = false;   // PodScheduled=False, reason Unschedulable.
  int64_t created_seconds = 0;  // metadata.creationTimestamp, Unix seconds (0 unknown).
};

// Everything Plan looks at.
struct JobFacts {
  std::string phase = "Pending";                   // status.phase.
  int64_t replicas = 1;                            // spec.replicas: the ranks of the gang.
  int64_t steps = 0;                               // spec.steps.
  int64_t restarts = 0;                            // status.restarts: this attempt's number.
  int64_t backoff_limit = 3;                       // spec.runPolicy.backoffLimit.
  bool suspend = false;                            // spec.runPolicy.suspend.
  std::optional<int64_t> ttl_seconds;              // spec.runPolicy.ttlSecondsAfterFinished.
  std::optional<int64_t> active_deadline_seconds;  // spec.runPolicy.activeDeadlineSeconds.
  int64_t completion_seconds = 0;                  // status.completionTime (0 unknown).
  std::optional<int64_t> start_seconds;            // status.startTime: when the gang ran.
  int64_t gang_timeout_seconds = 120;
  std::vector<RankPod> ranks;
  // Rank 0's GET /v1/status "phase"; "" when it was not asked or did not answer.
  std::string report_phase;
  // StarvedMessage of rank 0's report, when it reported phase Starved.
  std::optional<std::string> starved;
  // A succeeded job: the RolloutPools hosting its policy that lack the final version (sorted);
  // unset when the pools are not watched.
  std::optional<std::vector<std::string>> lagging_pools;
  int64_t final_version = 0;  // status.version.
};

enum class Verdict {
  kServeFinalWeights,     // Succeeded; rank 0 still serves the final weights: look again soon.
  kFinished,              // Succeeded or Failed: the ranks go; the TTL deletes the job.
  kSuspended,             // Phase Suspended, Suspended=True; the ranks go.
  kClearStale,            // Ranks of an older attempt or template go first.
  kSucceeded,             // Phase Succeeded, Complete=True/StepsCompleted.
  kStarved,               // Phase Failed, Starved=True, Failed=True/DataExhausted.
  kBackoffLimitExceeded,  // Phase Failed, Failed=True/BackoffLimitExceeded.
  kGangRestart,           // restarts + 1, phase Pending; every rank goes.
  kDeadlineExceeded,      // Phase Failed, Failed=True/DeadlineExceeded.
  kRun,                   // Missing ranks are created; admission and running are updated.
};

struct JobPlan {
  Verdict verdict = Verdict::kRun;
  // The verdict's condition and Event message; for kFinished the reason its ranks go.
  std::string message;
  std::string failure;                   // kGangRestart, kBackoffLimitExceeded: what broke.
  std::vector<std::string> delete_pods;  // Pods to delete (none already Terminating).
  std::vector<int> create_ranks;         // kRun: the ranks to create, ascending.
  bool resumed = false;                  // The job left suspension in this reconcile.
  bool delete_job = false;               // kFinished: the TTL passed.
  std::optional<std::chrono::milliseconds> requeue_after;  // Unset: the reconciler's default.
  // kRun: Admitted=True (GangScheduled), False (GangPending), or left as it is.
  std::optional<bool> admitted;
  int64_t running = 0;        // kRun: ranks of this attempt running.
  bool gang_running = false;  // kRun: every rank runs.
};

// The plan of one reconcile. `now_seconds` is Unix seconds.
JobPlan Plan(const JobFacts& facts, int64_t now_seconds);

// Readable form of a verdict, for test failure messages and logs.
const char* ToString(Verdict verdict);

}  // namespace sluice::controllers::trainerjob
