#include "workers/weights/weight_store.h"

#include <algorithm>
#include <utility>

#include "common/check.h"

namespace sluice::weights {

WeightStore::WeightStore(size_t keep_versions) : keep_(keep_versions) {
  SLUICE_CHECK(keep_versions >= 1);
}

Status WeightStore::Publish(std::span<const model::TensorView> tensors, int64_t version,
                            bool encode_delta) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Checked before the (expensive) build too, so a stale trainer learns at once.
    if (last_published_ && version <= *last_published_) {
      return Status::InvalidArgument("version " + std::to_string(version) +
                                         " is not newer than the last published version " +
                                         std::to_string(*last_published_),
                                     "version");
    }
  }
  SLUICE_ASSIGN_OR_RETURN(WeightSnapshot snapshot, WeightSnapshot::Build(tensors, version));
  return Publish(std::move(snapshot), encode_delta);
}

Status WeightStore::Publish(WeightSnapshot snapshot, bool encode_delta) {
  std::lock_guard<std::mutex> publishing(publish_mu_);
  std::shared_ptr<const WeightSnapshot> previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (last_published_ && snapshot.version() <= *last_published_) {
      return Status::InvalidArgument("version " + std::to_string(snapshot.version()) +
                                         " is not newer than the last published version " +
                                         std::to_string(*last_published_),
                                     "version");
    }
    if (encode_delta && !versions_.empty()) previous = versions_.back().snapshot;
  }
  StoredVersion stored;
  stored.snapshot = std::make_shared<const WeightSnapshot>(std::move(snapshot));
  if (previous) {
    DeltaEncodeOptions options;
    options.max_bytes = stored.snapshot->size_bytes();
    DeltaStats stats;
    // A failure here (new tensors, a delta larger than the image) only means this version is
    // reachable by full download alone; the publish itself succeeds.
    Result<std::string> delta = EncodeDelta(*previous, *stored.snapshot, &stats, options);
    if (delta.ok()) {
      stored.delta = std::make_shared<const std::string>(std::move(delta).value());
      stored.delta_from = previous->version();
      stored.delta_stats = stats;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  last_published_ = stored.snapshot->version();
  versions_.push_back(std::move(stored));
  if (versions_.size() > keep_) {
    versions_.erase(versions_.begin(),
                    versions_.begin() + static_cast<ptrdiff_t>(versions_.size() - keep_));
  }
  return Status::Ok();
}

const StoredVersion* WeightStore::FindLocked(int64_t version) const {
  auto it =
      std::lower_bound(versions_.begin(), versions_.end(), version,
                       [](const StoredVersion& s, int64_t v) { return s.snapshot->version() < v; });
  return it != versions_.end() && it->snapshot->version() == version ? &*it : nullptr;
}

std::shared_ptr<const WeightSnapshot> WeightStore::Full(int64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  const StoredVersion* s = FindLocked(version);
  return s ? s->snapshot : nullptr;
}

Result<std::string> WeightStore::Digest(int64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  const StoredVersion* s = FindLocked(version);
  if (s == nullptr)
    return Status::NotFound("weights version " + std::to_string(version) + " is not held");
  return s->snapshot->digest();
}

std::vector<VersionInfo> WeightStore::Versions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<VersionInfo> out;
  out.reserve(versions_.size());
  for (const StoredVersion& s : versions_) {
    out.push_back({s.snapshot->version(), s.snapshot->digest(), s.snapshot->size_bytes(),
                   s.delta_from, s.delta ? s.delta_stats : DeltaStats{}});
  }
  return out;
}

std::optional<int64_t> WeightStore::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (versions_.empty()) return std::nullopt;
  return versions_.back().snapshot->version();
}

Result<DeltaPlan> WeightStore::PlanDelta(int64_t from, int64_t to) const {
  std::lock_guard<std::mutex> lock(mu_);
  const StoredVersion* target = FindLocked(to);
  if (target == nullptr) {
    return Status::NotFound("weights version " + std::to_string(to) + " is not held");
  }
  if (from > to) {
    return Status::InvalidArgument(
        "from version " + std::to_string(from) + " is newer than version " + std::to_string(to),
        "from");
  }
  DeltaPlan plan;
  plan.from = from;
  plan.to = to;
  plan.full_bytes = target->snapshot->size_bytes();
  plan.to_digest = target->snapshot->digest();
  auto full = [&](std::string reason) {
    plan.use_full = true;
    plan.reason = std::move(reason);
    plan.deltas.clear();
    plan.bytes = 0;
    return plan;
  };
  if (FindLocked(from) == nullptr) {
    return full("version " + std::to_string(from) +
                " is not held (held: " + std::to_string(versions_.front().snapshot->version()) +
                ".." + std::to_string(versions_.back().snapshot->version()) + ")");
  }
  // Walk back from `to` along delta links; each link names the version it starts from.
  for (const StoredVersion* s = target; s->snapshot->version() != from;) {
    if (!s->delta) {
      return full("no delta into version " + std::to_string(s->snapshot->version()) +
                  " is kept (its tensors changed, or the delta was larger than the image)");
    }
    plan.deltas.push_back(s->delta);
    plan.bytes += s->delta->size();
    s = FindLocked(*s->delta_from);
    // Versions only go up and `from` is held, so the walk meets `from` or a gap before it.
    if (s == nullptr) return full("the delta chain has a gap before version " + std::to_string(to));
  }
  if (plan.bytes > plan.full_bytes) {
    return full("the chain of " + std::to_string(plan.deltas.size()) + " deltas is " +
                std::to_string(plan.bytes) + " bytes, the full image " +
                std::to_string(plan.full_bytes));
  }
  std::reverse(plan.deltas.begin(), plan.deltas.end());
  return plan;
}

uint64_t WeightStore::bytes_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const StoredVersion& s : versions_) {
    n += s.snapshot->size_bytes() + (s.delta ? s.delta->size() : 0);
  }
  return n;
}

}  // namespace sluice::weights
