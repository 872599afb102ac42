// DataflowCore's weight versions: announcements (which must increase; an identical re-announce
// is a no-op), and what an announcement of the primary policy drives: the curator's OnVersion and
// the eval rounds to queue (dataflow_core.h, "Versions").
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/dataflow/algorithms/eval_trigger.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {

using core_internal::VersionToJson;
using nlohmann::json;

Status DataflowCore::AnnounceLocked(std::string_view policy, const VersionInfo& version) {
  PolicyState* p = FindPolicy(policy);
  if (p == nullptr) return Status::NotFound("no policy " + std::string(policy));
  if (version.number <= p->version.number) {
    if (p->announced && version == p->version) return Status::Ok();
    if (p->announced && version.number == p->version.number) {
      if (!version.digest.empty() && version.digest == p->version.digest &&
          version.evaluate == p->version.evaluate) {
        // The same image from a restarted trainer: only where to fetch it moved.
        dirty_ = true;
        p->version.url = version.url;
        p->version.delta_base = version.delta_base;
        return Status::Ok();
      }
      return Status::Conflict(
          "version " + std::to_string(version.number) + " of " + p->name +
          " is already announced with digest \"" + p->version.digest + "\" (evaluate " +
          (p->version.evaluate ? "true" : "false") + "), not \"" + version.digest +
          "\" (evaluate " + (version.evaluate ? "true" : "false") +
          "): a version number names one weight image; announce a version above " +
          std::to_string(p->version.number));
    }
    return Status::Conflict("version " + std::to_string(version.number) +
                            " is not newer than the current version " +
                            std::to_string(p->version.number) + " of " + p->name);
  }
  dirty_ = true;
  auto lowest = [&] {
    int64_t v = p->version.number;
    for (const auto& q : policies_) v = std::min(v, q->version.number);
    return v;
  };
  EvalTriggerFacts facts;
  facts.every_versions = config_.eval.every_versions;
  facts.at_start = config_.eval.at_start;
  facts.barrier = config_.version_barrier;
  facts.policies = static_cast<int64_t>(policies_.size());
  facts.primary = p == policies_.front().get();
  facts.evaluate = version.evaluate;
  facts.previous = p->version.number;
  facts.announced = version.number;
  facts.lowest_before = lowest();
  p->version = version;
  p->announced = true;
  p->acked_since_announce = false;
  facts.lowest_after = lowest();
  if (facts.primary) curator_->OnVersion(version.number);
  if (const std::optional<int64_t> round = EvalRoundToQueue(facts)) {
    QueueEvalRoundLocked(*policies_.front(), *round);
  }
  return Status::Ok();
}

Status DataflowCore::AnnounceVersion(std::string_view policy, const VersionInfo& version) {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;
  const int64_t now = NowNs();
  Status s = AnnounceLocked(policy, version);
  if (dirty_) {
    json payload = VersionToJson(version);
    payload["now"] = now;
    payload["policy"] = policy;
    Emit(RecordType::kAnnounce, std::move(payload));
    changed_.notify_all();
  }
  return s;
}

int64_t DataflowCore::CurrentVersion(std::string_view policy) const {
  std::lock_guard<std::mutex> lock(mu_);
  const PolicyState* p = FindPolicy(policy);
  return p == nullptr ? -1 : p->version.number;
}

std::vector<PolicyVersion> DataflowCore::AnnouncedVersions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PolicyVersion> out;
  for (const auto& p : policies_) {
    if (p->announced) out.push_back({p->name, p->version});
  }
  return out;
}

}  // namespace sluice::dataflow
