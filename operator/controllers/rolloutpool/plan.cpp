#include "operator/controllers/rolloutpool/plan.h"

#include <algorithm>

#include "operator/controllers/rolloutpool/desired_pods.h"
#include "operator/placement/scale_down.h"
#include "operator/placement/weight_relays.h"

namespace sluice::controllers::rolloutpool {

using nlohmann::json;

namespace {

std::vector<placement::ReplicaFacts> PlacementFacts(const std::vector<Replica>& replicas) {
  std::vector<placement::ReplicaFacts> out;
  out.reserve(replicas.size());
  for (const Replica& r : replicas) out.push_back(r.placement);
  return out;
}

void Append(std::vector<Action>& to, std::vector<Action> more) {
  to.insert(to.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

Action OnReplica(ActionKind kind, const Replica& r, std::string reason) {
  return Action{kind, r.placement.name, std::move(reason), "", 0, ""};
}

bool HasEnded(const Replica& r) { return r.phase == "Failed" || r.phase == "Succeeded"; }

// Replicas about to leave (`leaving`) or that ended are neither relays nor joiners.
void PlanRelays(const PoolFacts& facts, const std::set<std::string>& leaving,
                std::vector<Action>& actions) {
  std::vector<placement::RelayCandidate> candidates;
  for (const Replica& r : facts.replicas) {
    const bool going = r.placement.draining || leaving.contains(r.placement.name) || HasEnded(r);
    candidates.push_back({r.placement.name, r.placement.region, r.placement.replica_index,
                          r.placement.ready, going, r.url});
  }
  for (const auto& [name, relay] : placement::AssignWeightRelays(candidates, facts.regional)) {
    for (const Replica& r : facts.replicas) {
      if (r.placement.name != name) continue;
      // A Ready worker that did not answer is left until it does; a joiner was not asked yet.
      const bool tell = r.worker.has_value() ? r.worker->relay != relay : !r.placement.ready;
      if (tell) actions.push_back({ActionKind::kSetRelay, name, "weight relay", "", 0, relay});
    }
  }
}

}  // namespace

WorkerReport WorkerReportOf(const json& reply) {
  WorkerReport report;
  report.raw = reply;
  if (!reply.is_object()) return report;
  const json drained = reply.value("drained", json(false));
  const json draining = reply.value("draining", json(false));
  report.drained = drained.is_boolean() && drained.get<bool>();
  report.draining = draining.is_boolean() && draining.get<bool>();
  const json relay = reply.value("/weights/relay"_json_pointer, json(""));
  if (relay.is_string()) report.relay = relay.get<std::string>();
  return report;
}

std::vector<Action> DrainSteps(const Replica& replica, const std::string& reason,
                               int64_t grace_seconds, int64_t now_seconds) {
  if (replica.terminating) return {};
  const bool ready = replica.placement.ready;
  if (ready && !replica.draining_since.has_value()) {
    return {OnReplica(ActionKind::kAskToDrain, replica, reason)};
  }
  std::vector<Action> steps;
  bool remove = !ready;
  if (ready) {
    const bool drained = replica.worker.has_value() && replica.worker->drained;
    if (replica.worker.has_value() && !drained && !replica.worker->draining) {
      steps.push_back(OnReplica(ActionKind::kAskAgain, replica, reason));
    }
    remove = drained || now_seconds - *replica.draining_since >= grace_seconds;
  }
  if (remove) steps.push_back(OnReplica(ActionKind::kDelete, replica, reason));
  return steps;
}

std::vector<Action> Plan(const PoolFacts& facts, int64_t now_seconds) {
  std::vector<Action> actions;
  const auto drain = [&](const Replica& r, const std::string& reason) {
    Append(actions, DrainSteps(r, reason, facts.grace_seconds, now_seconds));
  };

  // 1. Replicas whose node abandoned their deletion.
  for (const Replica& r : facts.replicas) {
    if (r.termination_abandoned && !facts.force_deleted.contains(r.uid)) {
      actions.push_back(OnReplica(ActionKind::kForceDelete, r, "its node abandoned its deletion"));
    }
  }

  // 2. The pool is being deleted.
  if (facts.deleting) {
    for (const Replica& r : facts.replicas) drain(r, "the pool is being deleted");
    if (facts.replicas.empty() && facts.has_finalizer) {
      actions.push_back({ActionKind::kRemoveFinalizer, "", "no replica is left", "", 0, ""});
    }
    return actions;
  }

  const std::vector<placement::ReplicaFacts> placed = PlacementFacts(facts.replicas);
  std::set<std::string> leaving;
  for (const std::string& n : placement::ChooseReplicasToRemove(placed, facts.targets)) {
    leaving.insert(n);
  }

  // 3. Weight relays.
  PlanRelays(facts, leaving, actions);

  // 4. Surplus, spilled and draining replicas leave; ended ones are deleted.
  std::set<std::string> ended;
  for (const Replica& r : facts.replicas) {
    const std::string& name = r.placement.name;
    if (leaving.contains(name) || r.draining_since.has_value()) {
      drain(r, facts.spilled.contains(name) ? "spill-over: its region has no room"
               : leaving.contains(name)     ? "scale-down"
                                            : "drain");
    } else if (HasEnded(r) && !r.terminating) {
      actions.push_back(OnReplica(ActionKind::kDeleteEnded, r, "it ended (" + r.phase + ")"));
      ended.insert(name);
    }
  }

  // 5. Missing replicas.
  for (const auto& [region, index] : placement::ReplicasToCreate(placed, facts.targets)) {
    const std::string name = ReplicaPodName(facts.pool, region, index);
    if (facts.backing_off.contains(name)) continue;
    actions.push_back({ActionKind::kCreate, name, "missing", region, index, ""});
  }

  // 6. Rolling update: one region at a time, within the unavailability budget.
  int64_t unavailable = 0;
  for (const Replica& r : facts.replicas) {
    if (!r.placement.draining && !r.placement.ready) ++unavailable;
  }
  const int64_t budget = facts.max_unavailable - unavailable;
  int64_t replaced = 0;
  for (const placement::RegionTarget& t : facts.targets) {
    for (const Replica& r : facts.replicas) {
      if (replaced >= budget) break;
      const std::string& name = r.placement.name;
      if (r.placement.region != t.region || r.current || r.placement.draining ||
          leaving.contains(name) || ended.contains(name)) {
        continue;
      }
      drain(r, "its template changed");
      ++replaced;
    }
    if (replaced > 0) break;
  }
  return actions;
}

std::string ToString(const Action& a) {
  static const char* const kNames[] = {"ForceDelete", "AskToDrain", "AskAgain", "Delete",
                                       "DeleteEnded", "Create",     "SetRelay", "RemoveFinalizer"};
  std::string s = std::string(kNames[static_cast<int>(a.kind)]) + "(" + a.replica;
  if (a.kind == ActionKind::kCreate)
    s += " region=" + a.region + " index=" + std::to_string(a.index);
  if (a.kind == ActionKind::kSetRelay) s += " relay=" + a.relay;
  return s + ": " + a.reason + ")";
}

}  // namespace sluice::controllers::rolloutpool
