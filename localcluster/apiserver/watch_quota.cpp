#include "localcluster/apiserver/watch_quota.h"

#include <utility>

namespace sluice::apiserver {

WatchQuota::Slot::Slot(WatchQuota* quota, std::string identity)
    : quota_(quota), identity_(std::move(identity)) {}

WatchQuota::Slot::Slot(Slot&& other) noexcept
    : quota_(std::exchange(other.quota_, nullptr)), identity_(std::move(other.identity_)) {}

WatchQuota::Slot& WatchQuota::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    quota_ = std::exchange(other.quota_, nullptr);
    identity_ = std::move(other.identity_);
  }
  return *this;
}

WatchQuota::Slot::~Slot() { Release(); }

void WatchQuota::Slot::Release() {
  if (quota_ != nullptr) std::exchange(quota_, nullptr)->Give(identity_);
}

WatchQuota::Slot WatchQuota::TryAcquire(const std::string& identity) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t& n = open_[identity];
  if (per_identity_ > 0 && n >= per_identity_) {
    if (n == 0) open_.erase(identity);
    return Slot();
  }
  ++n;
  return Slot(this, identity);
}

size_t WatchQuota::open(const std::string& identity) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(identity);
  return it == open_.end() ? 0 : it->second;
}

void WatchQuota::Give(const std::string& identity) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(identity);
  if (it == open_.end()) return;
  if (--it->second == 0) open_.erase(it);
}

}  // namespace sluice::apiserver
