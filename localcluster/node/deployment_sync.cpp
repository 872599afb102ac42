#include "localcluster/node/deployment_sync.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/time_format.h"
#include "localcluster/node/deployment_conditions.h"
#include "localcluster/node/workload_objects.h"

namespace sluice::node {

using nlohmann::json;

namespace {

constexpr char kAvailable[] = "Available";
constexpr char kProgressing[] = "Progressing";
constexpr char kReplicaFailure[] = "ReplicaFailure";
constexpr char kNewRsAvailable[] = "NewReplicaSetAvailable";
constexpr char kTimedOut[] = "ProgressDeadlineExceeded";
constexpr char kPaused[] = "DeploymentPaused";
constexpr int64_t kNoDeadline = 2147483647;  // kube's "no progress deadline" (MaxInt32).
constexpr size_t kRevisionHistoryMaxChars = 2000;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

Clock::WallTime TimeAt(const json& object, const char* pointer) {
  return ParseTimeOrEpoch(StringAt(object, pointer));
}

std::optional<int64_t> ParseInt(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string Annotation(const json& object, const std::string& key) {
  const json::json_pointer ptr("/metadata/annotations");
  if (!object.contains(ptr) || !object.at(ptr).is_object()) return {};
  const json& a = object.at(ptr);
  return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : std::string();
}

void SetAnnotation(json& object, const std::string& key, const std::string& value) {
  json& a = object["metadata"]["annotations"];
  if (!a.is_object()) a = json::object();
  a[key] = value;
}

int64_t Revision(const json& rs) {
  return ParseInt(Annotation(rs, kRevisionAnnotation)).value_or(0);
}

// --- Strategy ------------------------------------------------------------------------------

bool IsRolling(const json& d) { return StringAt(d, "/spec/strategy/type") != "Recreate"; }

int64_t DesiredReplicas(const json& d) {
  return std::max<int64_t>(0, IntAt(d, "/spec/replicas", 1));
}

// (maxSurge, maxUnavailable) before the cap of maxUnavailable at replicas.
std::pair<int64_t, int64_t> Fenceposts(const json& d) {
  const int64_t replicas = DesiredReplicas(d);
  const json ru = d.value("/spec/strategy/rollingUpdate"_json_pointer, json::object());
  const json surge_v = ru.is_object() && ru.contains("maxSurge") ? ru["maxSurge"] : json("25%");
  const json unavail_v =
      ru.is_object() && ru.contains("maxUnavailable") ? ru["maxUnavailable"] : json("25%");
  std::optional<int64_t> surge = ScaledIntOrPercent(surge_v, replicas, true);
  std::optional<int64_t> unavail = ScaledIntOrPercent(unavail_v, replicas, false);
  // The values themselves (a percentage as its number): both 0 is invalid.
  const bool both_zero = ScaledIntOrPercent(surge_v, 100, false) == 0 &&
                         ScaledIntOrPercent(unavail_v, 100, false) == 0;
  if (!surge || !unavail || both_zero) {
    surge = ScaledIntOrPercent(json("25%"), replicas, true);
    unavail = ScaledIntOrPercent(json("25%"), replicas, false);
  }
  if (*surge == 0 && *unavail == 0) unavail = 1;
  return {*surge, *unavail};
}

// --- One pass -------------------------------------------------------------------------------

struct Rs {
  json obj;  // Working copy: replicas and annotations as planned.
  std::string name, uid;
  Clock::WallTime created{};
  int64_t replicas = 0;  // Planned spec.replicas.
  int64_t original = 0;  // As read.
  int64_t status_replicas = 0, ready = 0, available = 0;
  bool planned = false;  // The new ReplicaSet this pass creates.
  bool modified = false;
};

Rs FromObject(const json& obj) {
  Rs r;
  r.obj = obj;
  r.name = StringAt(obj, "/metadata/name");
  r.uid = StringAt(obj, "/metadata/uid");
  r.created = TimeAt(obj, "/metadata/creationTimestamp");
  r.replicas = r.original = std::max<int64_t>(0, IntAt(obj, "/spec/replicas", 1));
  r.status_replicas = IntAt(obj, "/status/replicas", 0);
  r.ready = IntAt(obj, "/status/readyReplicas", 0);
  r.available = IntAt(obj, "/status/availableReplicas", 0);
  return r;
}

class Syncer {
 public:
  Syncer(const json& d, Clock::WallTime now) : d_(d), now_(now) {
    now_text_ = FormatTime(now);
    name_ = StringAt(d, "/metadata/name");
    ns_ = StringAt(d, "/metadata/namespace");
    uid_ = StringAt(d, "/metadata/uid");
    replicas_ = DesiredReplicas(d);
    rolling_ = IsRolling(d);
    surge_ = MaxSurge(d);
    unavailable_ = MaxUnavailable(d);
    paused_ = d.value("/spec/paused"_json_pointer, json(false)) == json(true);
    history_limit_ = IntAt(d, "/spec/revisionHistoryLimit", 10);
    const int64_t deadline = IntAt(d, "/spec/progressDeadlineSeconds", 600);
    if (deadline != kNoDeadline) deadline_ = deadline;
    min_ready_ = IntAt(d, "/spec/minReadySeconds", 0);
    generation_ = IntAt(d, "/metadata/generation", 0);
    selector_ = d.value("/spec/selector"_json_pointer, json());
    template_ = d.value("/spec/template"_json_pointer, json::object());
    stored_ = d.value("status", json::object());
    if (!stored_.is_object()) stored_ = json::object();
    status_ = stored_;
    plan_.template_hash = PodTemplateHash(template_, IntAt(d, "/status/collisionCount", -1));
  }

  DeploymentPlan Run(const std::vector<json>& replica_sets, const std::vector<json>& pods) {
    if (!LabelSelectorValid(selector_) || LabelSelectorEmpty(selector_)) {
      // kube refuses to act on a selector that would select every pod.
      json status = stored_;
      if (IntAt(status, "/observedGeneration", 0) < generation_) {
        status["observedGeneration"] = generation_;
        plan_.events.push_back(
            {"Warning", "SelectingAll",
             "This deployment is selecting all pods. A non-empty selector is required."});
      }
      return Finish(std::move(status));
    }
    Claim(replica_sets);
    FindNew();
    if (IsBeingDeleted(d_)) {
      SyncRevision(false);
      return Finish(CalculateStatus());
    }
    CheckPaused();
    if (paused_) return Finish(ScaleOnly());
    SyncRevision(false);
    if (IsScalingEvent()) return Finish(ScaleOnly());
    return Finish(rolling_ ? Rolling() : Recreate(pods));
  }

 private:
  void Claim(const std::vector<json>& replica_sets) {
    const bool can_claim = !IsBeingDeleted(d_);
    const json reference = ControllerReference(d_, "apps/v1", "Deployment");
    for (const json& rs : replica_sets) {
      if (StringAt(rs, "/metadata/namespace") != ns_) continue;
      const std::string controller = ControllerUid(rs);
      const bool matches = LabelSelectorMatches(
          selector_, rs.value("/metadata/labels"_json_pointer, json::object()));
      if (controller == uid_ && !uid_.empty()) {
        if (can_claim && !matches) {
          plan_.release.push_back(WithoutOwnerReference(rs, uid_));
          continue;
        }
        rs_.push_back(FromObject(rs));
      } else if (controller.empty() && can_claim && matches && !IsBeingDeleted(rs)) {
        json adopted = WithOwnerReference(rs, reference);
        plan_.adopt.push_back(adopted);
        rs_.push_back(FromObject(adopted));
      }
    }
  }

  // Indices of `rs_` by creation time (then name), oldest first.
  std::vector<size_t> ByCreation(bool include_new) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (include_new || static_cast<int>(i) != new_) out.push_back(i);
    }
    std::sort(out.begin(), out.end(), [&](size_t a, size_t b) {
      if (rs_[a].created != rs_[b].created) return rs_[a].created < rs_[b].created;
      return rs_[a].name < rs_[b].name;
    });
    return out;
  }

  void FindNew() {
    for (size_t i : ByCreation(true)) {
      if (TemplatesEqualIgnoringHash(rs_[i].obj.value("/spec/template"_json_pointer, json()),
                                     template_)) {
        new_ = static_cast<int>(i);
        return;
      }
    }
    for (size_t i : ByCreation(true)) {
      if (StringAt(rs_[i].obj, "/metadata/labels/pod-template-hash") == plan_.template_hash) {
        new_ = static_cast<int>(i);
        return;
      }
    }
  }

  void Touch(size_t i) {
    if (rs_[i].modified) return;
    rs_[i].modified = true;
    if (!rs_[i].planned) order_.push_back(i);
  }

  // Copies the Deployment's annotations onto a ReplicaSet (not kubectl's or the controller's).
  bool CopyAnnotations(json& rs) const {
    static const std::set<std::string> kSkip = {"kubectl.kubernetes.io/last-applied-configuration",
                                                kRevisionAnnotation,
                                                kRevisionHistoryAnnotation,
                                                kDesiredReplicasAnnotation,
                                                kMaxReplicasAnnotation,
                                                "deprecated.deployment.rollback.to"};
    bool changed = false;
    const json annotations = d_.value("/metadata/annotations"_json_pointer, json::object());
    if (!annotations.is_object()) return false;
    for (const auto& [k, v] : annotations.items()) {
      if (kSkip.count(k) || !v.is_string() || Annotation(rs, k) == v.get<std::string>()) continue;
      SetAnnotation(rs, k, v.get<std::string>());
      changed = true;
    }
    return changed;
  }

  bool SetReplicasAnnotations(json& rs) const {
    const std::string desired = std::to_string(replicas_);
    const std::string max = std::to_string(replicas_ + surge_);
    bool changed = false;
    if (Annotation(rs, kDesiredReplicasAnnotation) != desired) {
      SetAnnotation(rs, kDesiredReplicasAnnotation, desired);
      changed = true;
    }
    if (Annotation(rs, kMaxReplicasAnnotation) != max) {
      SetAnnotation(rs, kMaxReplicasAnnotation, max);
      changed = true;
    }
    return changed;
  }

  int64_t TotalReplicas() const {
    int64_t n = 0;
    for (const Rs& r : rs_) n += r.replicas;
    return n;
  }

  // kube's NewRSNewReplicas: how far the new ReplicaSet may grow now.
  int64_t NewReplicaCount(int64_t new_replicas, int64_t all_replicas) const {
    if (!rolling_) return replicas_;
    const int64_t max_total = replicas_ + surge_;
    if (all_replicas >= max_total) return new_replicas;
    const int64_t up = std::min(max_total - all_replicas, replicas_ - new_replicas);
    return new_replicas + up;
  }

  // Finds (and brings up to date) or, with `create`, plans the new ReplicaSet; the revision.
  void SyncRevision(bool create) {
    int64_t max_old = 0;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (static_cast<int>(i) != new_) max_old = std::max(max_old, Revision(rs_[i].obj));
    }
    const int64_t next = max_old + 1;
    if (new_ >= 0) {
      Rs& r = rs_[new_];
      bool changed = CopyAnnotations(r.obj);
      const std::string old_text = Annotation(r.obj, kRevisionAnnotation);
      const std::optional<int64_t> old = ParseInt(old_text);
      if (old.value_or(0) < next) {
        SetAnnotation(r.obj, kRevisionAnnotation, std::to_string(next));
        changed = true;
        // A template used again: remember the revisions it had.
        if (old) AppendRevisionHistory(r.obj, old_text);
      }
      if (IntAt(r.obj, "/spec/minReadySeconds", 0) != min_ready_) {
        r.obj["spec"]["minReadySeconds"] = min_ready_;
        changed = true;
      }
      if (changed) Touch(static_cast<size_t>(new_));
      SetDeploymentRevision(Annotation(r.obj, kRevisionAnnotation));
      if (deadline_ && FindDeploymentCondition(status_, kProgressing) == nullptr) {
        SetDeploymentCondition(
            status_, NewDeploymentCondition(kProgressing, "True", "FoundNewReplicaSet",
                                            "Found new replica set " + Quoted(r.name), now_text_));
      }
      return;
    }
    if (!create) return;
    const std::string hash = plan_.template_hash;
    json tmpl = template_;
    tmpl["metadata"]["labels"][kPodTemplateHashLabel] = hash;
    json selector = selector_;
    selector["matchLabels"][kPodTemplateHashLabel] = hash;
    json obj = {
        {"apiVersion", "apps/v1"},
        {"kind", "ReplicaSet"},
        {"metadata",
         {{"name", name_ + "-" + hash},
          {"namespace", ns_},
          {"labels", tmpl["metadata"]["labels"]},
          {"ownerReferences", json::array({ControllerReference(d_, "apps/v1", "Deployment")})}}},
        {"spec", {{"replicas", 0}, {"selector", selector}, {"template", tmpl}}}};
    if (min_ready_ > 0) obj["spec"]["minReadySeconds"] = min_ready_;
    const int64_t count = NewReplicaCount(0, TotalReplicas());
    obj["spec"]["replicas"] = count;
    CopyAnnotations(obj);
    SetAnnotation(obj, kRevisionAnnotation, std::to_string(next));
    SetReplicasAnnotations(obj);
    Rs r = FromObject(obj);
    r.created = now_;
    r.original = 0;
    r.planned = true;
    r.status_replicas = r.ready = r.available = 0;
    rs_.push_back(std::move(r));
    new_ = static_cast<int>(rs_.size() - 1);
    SetDeploymentRevision(std::to_string(next));
    if (deadline_) {
      SetDeploymentCondition(
          status_,
          NewDeploymentCondition(kProgressing, "True", "NewReplicaSetCreated",
                                 "Created new replica set " + Quoted(rs_.back().name), now_text_));
    }
  }

  static void AppendRevisionHistory(json& rs, const std::string& revision) {
    std::string history = Annotation(rs, kRevisionHistoryAnnotation);
    history = history.empty() ? revision : history + "," + revision;
    while (history.size() > kRevisionHistoryMaxChars) {
      const size_t comma = history.find(',');
      if (comma == std::string::npos) return;  // One entry too long: leave the annotation.
      history.erase(0, comma + 1);
    }
    SetAnnotation(rs, kRevisionHistoryAnnotation, history);
  }

  void SetDeploymentRevision(const std::string& revision) {
    if (!revision.empty() && Annotation(d_, kRevisionAnnotation) != revision) {
      plan_.revision = revision;
    }
  }

  // Sets spec.replicas (and the replicas annotations); true when the size changed.
  bool Scale(size_t i, int64_t to) {
    Rs& r = rs_[i];
    const bool resize = r.replicas != to;
    const bool annotate = SetReplicasAnnotations(r.obj);
    if (!resize && !annotate) return false;
    r.replicas = to;
    r.obj["spec"]["replicas"] = to;
    Touch(i);
    return resize;
  }

  void CheckPaused() {
    if (!deadline_) return;
    const json* cond = FindDeploymentCondition(status_, kProgressing);
    if (cond != nullptr && cond->value("reason", "") == kTimedOut) return;
    const bool paused_cond = cond != nullptr && cond->value("reason", "") == kPaused;
    if (paused_ && !paused_cond) {
      SetDeploymentCondition(status_, NewDeploymentCondition(kProgressing, "Unknown", kPaused,
                                                             "Deployment is paused", now_text_));
    } else if (!paused_ && paused_cond) {
      SetDeploymentCondition(status_,
                             NewDeploymentCondition(kProgressing, "Unknown", "DeploymentResumed",
                                                    "Deployment is resumed", now_text_));
    }
  }

  bool IsScalingEvent() const {
    for (const Rs& r : rs_) {
      if (r.replicas <= 0) continue;
      const std::optional<int64_t> desired =
          ParseInt(Annotation(r.obj, kDesiredReplicasAnnotation));
      if (desired && *desired != replicas_) return true;
    }
    return false;
  }

  // Paused or a replica change: kube's sync().
  json ScaleOnly() {
    SyncRevision(false);
    ScaleToDesired();
    if (paused_) Cleanup();
    return CalculateStatus();
  }

  // kube's FindActiveOrLatest: the only active ReplicaSet, or with none the new (else newest).
  int ActiveOrLatest() const {
    if (rs_.empty()) return -1;
    std::vector<size_t> active;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (rs_[i].replicas > 0) active.push_back(i);
    }
    if (active.size() == 1) return static_cast<int>(active[0]);
    if (!active.empty()) return -1;
    if (new_ >= 0) return new_;
    const std::vector<size_t> old = ByCreation(false);
    return old.empty() ? -1 : static_cast<int>(old.back());
  }

  bool NewIsSaturated() const {
    if (new_ < 0) return false;
    const Rs& r = rs_[new_];
    const std::optional<int64_t> desired = ParseInt(Annotation(r.obj, kDesiredReplicasAnnotation));
    return desired && r.replicas == replicas_ && *desired == replicas_ && r.available == replicas_;
  }

  // kube's getReplicaSetFraction: this ReplicaSet's share of the new maximum.
  int64_t Fraction(const Rs& r) const {
    if (replicas_ == 0) return -r.replicas;
    const int64_t max_now = replicas_ + surge_;
    int64_t before = ParseInt(Annotation(r.obj, kMaxReplicasAnnotation)).value_or(0);
    if (before == 0) before = IntAt(stored_, "/replicas", 0);
    if (before == 0) return 0;
    const double size = static_cast<double>(r.replicas * max_now) / static_cast<double>(before);
    return static_cast<int64_t>(std::llround(size)) - r.replicas;
  }

  void ScaleToDesired() {
    if (int i = ActiveOrLatest(); i >= 0) {
      if (rs_[i].replicas != replicas_) Scale(static_cast<size_t>(i), replicas_);
      return;
    }
    if (NewIsSaturated()) {
      for (size_t i = 0; i < rs_.size(); ++i) {
        if (static_cast<int>(i) != new_ && rs_[i].replicas > 0) Scale(i, 0);
      }
      return;
    }
    if (!rolling_) return;
    std::vector<size_t> active;
    int64_t total = 0;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (rs_[i].replicas > 0) {
        active.push_back(i);
        total += rs_[i].replicas;
      }
    }
    if (active.empty()) return;
    const int64_t allowed = replicas_ > 0 ? replicas_ + surge_ : 0;
    const int64_t to_add = allowed - total;
    // Growing: the largest and newest take the remainder; shrinking: the largest and oldest.
    std::sort(active.begin(), active.end(), [&](size_t a, size_t b) {
      if (rs_[a].replicas != rs_[b].replicas) return rs_[a].replicas > rs_[b].replicas;
      if (rs_[a].created != rs_[b].created) {
        return to_add > 0 ? rs_[a].created > rs_[b].created : rs_[a].created < rs_[b].created;
      }
      return rs_[a].name < rs_[b].name;
    });
    std::map<size_t, int64_t> size;
    int64_t added = 0;
    for (size_t i : active) {
      int64_t share = 0;
      if (to_add != 0 && to_add != added) {
        const int64_t fraction = Fraction(rs_[i]);
        const int64_t allowed_share = to_add - added;
        share = to_add > 0 ? std::min(fraction, allowed_share) : std::max(fraction, allowed_share);
      }
      size[i] = rs_[i].replicas + share;
      added += share;
    }
    if (to_add != 0) size[active[0]] = std::max<int64_t>(0, size[active[0]] + to_add - added);
    for (size_t i : active) Scale(i, size[i]);
  }

  // --- RollingUpdate ---

  json Rolling() {
    SyncRevision(true);
    if (ReconcileNew()) return RolloutStatus();
    if (ReconcileOld()) return RolloutStatus();
    if (Complete(stored_)) Cleanup();
    return RolloutStatus();
  }

  bool ReconcileNew() {
    if (new_ < 0) return false;
    const Rs& r = rs_[new_];
    if (r.replicas == replicas_) return false;
    if (r.replicas > replicas_) return Scale(static_cast<size_t>(new_), replicas_);
    return Scale(static_cast<size_t>(new_), NewReplicaCount(r.replicas, TotalReplicas()));
  }

  bool ReconcileOld() {
    int64_t old_total = 0;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (static_cast<int>(i) != new_) old_total += rs_[i].replicas;
    }
    if (old_total == 0) return false;
    const int64_t min_available = replicas_ - unavailable_;
    const int64_t new_unavailable = new_ >= 0 ? rs_[new_].replicas - rs_[new_].available : 0;
    const int64_t max_scaled_down = TotalReplicas() - min_available - new_unavailable;
    if (max_scaled_down <= 0) return false;
    const int64_t cleaned = CleanupUnhealthy(max_scaled_down);
    const int64_t scaled = ScaleDownOld();
    return cleaned + scaled > 0;
  }

  // Old replicas that are not available go first: removing them costs no availability.
  int64_t CleanupUnhealthy(int64_t max) {
    int64_t total = 0;
    for (size_t i : ByCreation(false)) {
      if (total >= max) break;
      const Rs& r = rs_[i];
      if (r.replicas == 0 || r.replicas <= r.available) continue;
      const int64_t count = std::min(max - total, r.replicas - r.available);
      Scale(i, r.replicas - count);
      total += count;
    }
    return total;
  }

  int64_t ScaleDownOld() {
    const int64_t min_available = replicas_ - unavailable_;
    int64_t available = 0;
    for (const Rs& r : rs_) available += r.available;
    if (available <= min_available) return 0;
    const int64_t budget = available - min_available;
    int64_t total = 0;
    for (size_t i : ByCreation(false)) {
      if (total >= budget) break;
      const Rs& r = rs_[i];
      if (r.replicas == 0) continue;
      const int64_t count = std::min(r.replicas, budget - total);
      Scale(i, r.replicas - count);
      total += count;
    }
    return total;
  }

  // --- Recreate ---

  json Recreate(const std::vector<json>& pods) {
    SyncRevision(false);
    bool scaled = false;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (static_cast<int>(i) != new_ && rs_[i].replicas > 0) scaled = Scale(i, 0) || scaled;
    }
    if (scaled || OldPodsRunning(pods)) return RolloutStatus();
    if (new_ < 0) SyncRevision(true);
    Scale(static_cast<size_t>(new_), replicas_);
    if (Complete(stored_)) Cleanup();
    return RolloutStatus();
  }

  bool OldPodsRunning(const std::vector<json>& pods) const {
    std::set<std::string> old_uids;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (static_cast<int>(i) == new_) continue;
      if (rs_[i].status_replicas > 0) return true;
      old_uids.insert(rs_[i].uid);
    }
    for (const json& pod : pods) {
      if (StringAt(pod, "/metadata/namespace") != ns_) continue;
      if (old_uids.count(ControllerUid(pod)) && !IsTerminalPod(pod)) return true;
    }
    return false;
  }

  // --- History ---

  void Cleanup() {
    std::vector<size_t> cleanable;
    for (size_t i = 0; i < rs_.size(); ++i) {
      if (static_cast<int>(i) != new_ && !rs_[i].planned && !IsBeingDeleted(rs_[i].obj)) {
        cleanable.push_back(i);
      }
    }
    const int64_t excess = static_cast<int64_t>(cleanable.size()) - history_limit_;
    if (excess <= 0) return;
    std::sort(cleanable.begin(), cleanable.end(), [&](size_t a, size_t b) {
      const int64_t ra = Revision(rs_[a].obj), rb = Revision(rs_[b].obj);
      if (ra != rb) return ra < rb;
      if (rs_[a].created != rs_[b].created) return rs_[a].created < rs_[b].created;
      return rs_[a].name < rs_[b].name;
    });
    for (int64_t k = 0; k < excess; ++k) {
      const Rs& r = rs_[cleanable[k]];
      // Only what has fully drained, and whose status says so for its current spec.
      if (r.status_replicas != 0 || r.original != 0 || r.modified ||
          IntAt(r.obj, "/metadata/generation", 0) > IntAt(r.obj, "/status/observedGeneration", 0)) {
        continue;
      }
      plan_.delete_replica_sets.push_back(r.obj);
    }
  }

  // --- Status ---

  bool Complete(const json& status) const {
    return IntAt(status, "/updatedReplicas", 0) == replicas_ &&
           IntAt(status, "/replicas", 0) == replicas_ &&
           IntAt(status, "/availableReplicas", 0) == replicas_ &&
           IntAt(status, "/observedGeneration", 0) >= generation_;
  }

  bool MadeProgress(const json& status) const {
    auto at = [](const json& s, const char* p) { return IntAt(s, p, 0); };
    const int64_t old_old = at(stored_, "/replicas") - at(stored_, "/updatedReplicas");
    const int64_t new_old = at(status, "/replicas") - at(status, "/updatedReplicas");
    return at(status, "/updatedReplicas") > at(stored_, "/updatedReplicas") || new_old < old_old ||
           at(status, "/readyReplicas") > at(stored_, "/readyReplicas") ||
           at(status, "/availableReplicas") > at(stored_, "/availableReplicas");
  }

  bool TimedOut(const json& status) const {
    if (!deadline_) return false;
    const json* cond = FindDeploymentCondition(status, kProgressing);
    if (cond == nullptr) return false;
    const std::string reason = cond->value("reason", "");
    if (reason == kNewRsAvailable) return false;
    if (reason == kTimedOut) return true;
    const Clock::WallTime from = TimeAt(*cond, "/lastUpdateTime");
    return from + std::chrono::seconds(*deadline_) < now_;
  }

  json CalculateStatus() const {
    int64_t available = 0, ready = 0, actual = 0;
    for (const Rs& r : rs_) {
      available += r.available;
      ready += r.ready;
      actual += r.status_replicas;
    }
    json status = {{"observedGeneration", generation_},
                   {"replicas", actual},
                   {"updatedReplicas", new_ >= 0 ? rs_[new_].status_replicas : 0},
                   {"readyReplicas", ready},
                   {"availableReplicas", available},
                   {"unavailableReplicas", std::max<int64_t>(0, TotalReplicas() - available)}};
    if (status_.contains("collisionCount")) status["collisionCount"] = status_["collisionCount"];
    status["conditions"] = status_.value("conditions", json::array());
    if (!status["conditions"].is_array()) status["conditions"] = json::array();
    if (available >= replicas_ - unavailable_) {
      SetDeploymentCondition(
          status, NewDeploymentCondition(kAvailable, "True", "MinimumReplicasAvailable",
                                         "Deployment has minimum availability.", now_text_));
    } else {
      SetDeploymentCondition(
          status,
          NewDeploymentCondition(kAvailable, "False", "MinimumReplicasUnavailable",
                                 "Deployment does not have minimum availability.", now_text_));
    }
    return status;
  }

  // kube's syncRolloutStatus: the status plus the Progressing and ReplicaFailure conditions.
  json RolloutStatus() const {
    json status = CalculateStatus();
    if (!deadline_) RemoveDeploymentCondition(status, kProgressing);
    const json* cond = FindDeploymentCondition(status, kProgressing);
    const bool already_complete =
        IntAt(status, "/replicas", 0) == IntAt(status, "/updatedReplicas", 0) && cond != nullptr &&
        cond->value("reason", "") == kNewRsAvailable;
    const std::string subject =
        new_ >= 0 ? "ReplicaSet " + Quoted(rs_[new_].name) : "Deployment " + Quoted(name_);
    if (deadline_ && !already_complete) {
      if (Complete(status)) {
        SetDeploymentCondition(
            status, NewDeploymentCondition(kProgressing, "True", kNewRsAvailable,
                                           subject + " has successfully progressed.", now_text_));
      } else if (MadeProgress(status)) {
        json c = NewDeploymentCondition(kProgressing, "True", "ReplicaSetUpdated",
                                        subject + " is progressing.", now_text_);
        // Progress moves lastUpdateTime (the deadline counts from it), not the transition.
        if (cond != nullptr && cond->value("status", "") == "True") {
          c["lastTransitionTime"] = cond->value("lastTransitionTime", now_text_);
        }
        RemoveDeploymentCondition(status, kProgressing);
        SetDeploymentCondition(status, std::move(c));
      } else if (TimedOut(status)) {
        SetDeploymentCondition(
            status, NewDeploymentCondition(kProgressing, "False", kTimedOut,
                                           subject + " has timed out progressing.", now_text_));
      }
    }
    if (std::optional<json> failure = ReplicaFailure()) {
      SetDeploymentCondition(status, std::move(*failure));
    } else {
      RemoveDeploymentCondition(status, kReplicaFailure);
    }
    return status;
  }

  std::optional<json> ReplicaFailure() const {
    auto from = [](const Rs& r) -> std::optional<json> {
      for (const json& c : r.obj.value("/status/conditions"_json_pointer, json::array())) {
        if (!c.is_object() || c.value("type", "") != kReplicaFailure) continue;
        const json t = c.value("lastTransitionTime", json());
        return json{{"type", kReplicaFailure},
                    {"status", c.value("status", "")},
                    {"lastUpdateTime", t},
                    {"lastTransitionTime", t},
                    {"reason", c.value("reason", "")},
                    {"message", c.value("message", "")}};
      }
      return std::nullopt;
    };
    if (new_ >= 0) {
      if (std::optional<json> f = from(rs_[new_])) return f;
    }
    for (const Rs& r : rs_) {
      if (std::optional<json> f = from(r)) return f;
    }
    return std::nullopt;
  }

  DeploymentPlan Finish(json status) {
    if (status.contains("conditions") && status["conditions"].is_array() &&
        status["conditions"].empty()) {
      status.erase("conditions");
    }
    if (new_ >= 0 && rs_[new_].planned) plan_.create = rs_[new_].obj;
    for (size_t i : order_) {
      plan_.updates.push_back({rs_[i].obj, rs_[i].original, rs_[i].replicas});
    }
    plan_.status_changed = !SameWorkloadStatus(stored_, status);
    plan_.status = std::move(status);
    return std::move(plan_);
  }

  const json& d_;
  const Clock::WallTime now_;
  std::string now_text_, name_, ns_, uid_;
  int64_t replicas_ = 1, surge_ = 0, unavailable_ = 0, history_limit_ = 10, min_ready_ = 0;
  int64_t generation_ = 0;
  bool rolling_ = true, paused_ = false;
  std::optional<int64_t> deadline_;
  json selector_, template_;
  json stored_;  // The status as read.
  json status_;  // The status with this pass's condition changes (paused, new ReplicaSet).
  std::vector<Rs> rs_;
  int new_ = -1;
  std::vector<size_t> order_;  // Modified existing ReplicaSets, in the order first changed.
  DeploymentPlan plan_;
};

}  // namespace

DeploymentPlan SyncDeployment(const json& deployment, const std::vector<json>& replica_sets,
                              const std::vector<json>& pods, Clock::WallTime now) {
  return Syncer(deployment, now).Run(replica_sets, pods);
}

std::string ScalingMessage(const std::string& replica_set, int64_t from, int64_t to) {
  return std::string("Scaled ") + (to > from ? "up" : "down") + " replica set " + replica_set +
         " from " + std::to_string(from) + " to " + std::to_string(to);
}

int64_t MaxSurge(const json& deployment) {
  if (!IsRolling(deployment)) return 0;
  return Fenceposts(deployment).first;
}

int64_t MaxUnavailable(const json& deployment) {
  const int64_t replicas = DesiredReplicas(deployment);
  if (!IsRolling(deployment) || replicas == 0) return 0;
  return std::min(Fenceposts(deployment).second, replicas);
}

json StatusAfterCreateFailure(const json& deployment, const std::string& replica_set,
                              const std::string& error, Clock::WallTime now) {
  json status = deployment.value("status", json::object());
  if (!status.is_object()) status = json::object();
  if (IntAt(deployment, "/spec/progressDeadlineSeconds", 600) != kNoDeadline) {
    SetDeploymentCondition(
        status, NewDeploymentCondition(
                    kProgressing, "False", "ReplicaSetCreateError",
                    "Failed to create new replica set " + Quoted(replica_set) + ": " + error,
                    FormatTime(now)));
  }
  return status;
}

}  // namespace sluice::node
