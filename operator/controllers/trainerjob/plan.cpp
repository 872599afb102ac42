#include "operator/controllers/trainerjob/plan.h"

#include <map>

#include "operator/controllers/trainerjob/final_weights.h"

namespace sluice::controllers::trainerjob {

namespace {

// Every rank Pod not already going.
std::vector<std::string> AllRanks(const JobFacts& facts) {
  std::vector<std::string> names;
  for (const RankPod& p : facts.ranks) {
    if (!p.terminating) names.push_back(p.name);
  }
  return names;
}

bool RankZeroRunning(const JobFacts& facts) {
  for (const RankPod& p : facts.ranks) {
    if (p.rank == 0 && !p.terminating && p.phase == "Running") return true;
  }
  return false;
}

JobPlan Finished(const JobFacts& facts, int64_t now) {
  JobPlan plan;
  plan.message = "the job finished";
  if (facts.phase == "Succeeded" && facts.lagging_pools.has_value() && RankZeroRunning(facts)) {
    const std::vector<std::string>& lagging = *facts.lagging_pools;
    if (KeepRanksForFinalWeights(lagging, facts.completion_seconds, now)) {
      plan.verdict = Verdict::kServeFinalWeights;
      plan.requeue_after = std::chrono::seconds(1);
      return plan;
    }
    std::string pools;
    for (const std::string& p : lagging) pools += (pools.empty() ? "" : ", ") + p;
    plan.message +=
        lagging.empty()
            ? "; every rollout pool holds version " + std::to_string(facts.final_version)
            : "; the final weights' grace passed before " + pools + " loaded them";
  }
  plan.verdict = Verdict::kFinished;
  plan.delete_pods = AllRanks(facts);
  if (facts.ttl_seconds.has_value() && facts.completion_seconds > 0) {
    const int64_t at = facts.completion_seconds + *facts.ttl_seconds;
    if (now >= at) {
      plan.delete_job = true;
    } else {
      plan.requeue_after = std::chrono::seconds(at - now);
    }
  }
  return plan;
}

JobPlan Failing(const JobFacts& facts, Verdict verdict, std::string message) {
  JobPlan plan;
  plan.verdict = verdict;
  plan.message = std::move(message);
  plan.delete_pods = AllRanks(facts);
  return plan;
}

}  // namespace

JobPlan Plan(const JobFacts& facts, int64_t now) {
  // 1. Finished.
  if (facts.phase == "Succeeded" || facts.phase == "Failed") return Finished(facts, now);

  // 2. Suspension: the Pods go, the state stays.
  if (facts.suspend) {
    JobPlan plan;
    plan.verdict = Verdict::kSuspended;
    plan.message = "the job is suspended";
    plan.delete_pods = AllRanks(facts);
    return plan;
  }
  const bool resumed = facts.phase == "Suspended";

  // 3. This attempt's ranks (the last Pod read of each rank), and the stale ones.
  std::map<int, const RankPod*> current;
  bool stale = false;
  for (const RankPod& p : facts.ranks) {
    if (p.current) {
      current[p.rank] = &p;
    } else {
      stale = true;
    }
  }
  if (stale) {
    JobPlan plan;
    plan.verdict = Verdict::kClearStale;
    plan.resumed = resumed;
    plan.message = "ranks of an older attempt or template";
    for (const RankPod& p : facts.ranks) {
      const auto it = current.find(p.rank);
      const bool kept = it != current.end() && it->second->name == p.name;
      if (!kept && !p.terminating) plan.delete_pods.push_back(p.name);
    }
    plan.requeue_after = std::chrono::milliseconds(500);
    return plan;
  }
  std::string failure;
  bool rank0_succeeded = false;
  for (const auto& [rank, p] : current) {
    if (p->phase == "Failed") {
      failure = "rank " + std::to_string(rank) + " failed" +
                (p->reason.empty() ? "" : " (" + p->reason + ")");
    }
    if (p->phase == "Succeeded" && rank == 0) rank0_succeeded = true;
  }
  // A rank that vanished while the gang ran (deleted, evicted) breaks it too.
  if (failure.empty() && facts.phase == "Running" && !current.empty() &&
      static_cast<int64_t>(current.size()) < facts.replicas) {
    failure = "a rank pod disappeared";
  }

  JobPlan plan;
  // 4. Rank 0 exits 0 after the last step (or says so first).
  if (rank0_succeeded || facts.report_phase == "Succeeded") {
    plan.verdict = Verdict::kSucceeded;
    plan.message = "all " + std::to_string(facts.steps) + " steps completed";
    plan.requeue_after = std::chrono::milliseconds(200);
  } else if (facts.starved.has_value()) {
    // 5. The Dataflow can never feed rank 0 again before spec.steps.
    plan = Failing(facts, Verdict::kStarved, *facts.starved);
  } else if (!failure.empty() && facts.restarts >= facts.backoff_limit) {
    // 6. The gang broke once too often.
    plan = Failing(facts, Verdict::kBackoffLimitExceeded,
                   failure + "; the gang was restarted " + std::to_string(facts.restarts) +
                       " times (backoffLimit " + std::to_string(facts.backoff_limit) + ")");
    plan.failure = failure;
  } else if (!failure.empty()) {
    plan = Failing(facts, Verdict::kGangRestart, "gang restart after " + failure);
    plan.failure = failure;
    plan.requeue_after = std::chrono::milliseconds(500);
  } else if (facts.active_deadline_seconds.has_value() && facts.start_seconds.has_value() &&
             !resumed && now - *facts.start_seconds >= *facts.active_deadline_seconds) {
    // 7. The deadline (whose clock restarts on resume).
    plan = Failing(facts, Verdict::kDeadlineExceeded,
                   "the job ran longer than activeDeadlineSeconds (" +
                       std::to_string(*facts.active_deadline_seconds) + "s)");
  } else {
    // 8. The gang, created together.
    plan.verdict = Verdict::kRun;
    for (int rank = 0; rank < facts.replicas; ++rank) {
      if (!current.contains(rank)) plan.create_ranks.push_back(rank);
    }
    bool unschedulable = false;
    int64_t pending_since = 0;
    for (const auto& [rank, p] : current) {
      if (p->phase == "Running") ++plan.running;
      if (p->unschedulable) {
        if (!unschedulable || p->created_seconds < pending_since) {
          pending_since = p->created_seconds;
        }
        unschedulable = true;
      }
    }
    if (!unschedulable) {
      plan.admitted = true;
    } else if (now - pending_since >= facts.gang_timeout_seconds) {
      plan.admitted = false;
    }
    plan.gang_running = plan.running == facts.replicas;
  }
  plan.resumed = resumed;
  return plan;
}

const char* ToString(Verdict verdict) {
  switch (verdict) {
    case Verdict::kServeFinalWeights:
      return "ServeFinalWeights";
    case Verdict::kFinished:
      return "Finished";
    case Verdict::kSuspended:
      return "Suspended";
    case Verdict::kClearStale:
      return "ClearStale";
    case Verdict::kSucceeded:
      return "Succeeded";
    case Verdict::kStarved:
      return "Starved";
    case Verdict::kBackoffLimitExceeded:
      return "BackoffLimitExceeded";
    case Verdict::kGangRestart:
      return "GangRestart";
    case Verdict::kDeadlineExceeded:
      return "DeadlineExceeded";
    case Verdict::kRun:
      return "Run";
  }
  return "?";
}

}  // namespace sluice::controllers::trainerjob
