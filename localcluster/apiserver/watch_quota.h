// WatchQuota: how many watches each identity may hold open at once.
//
// Every open watch holds one of the API server's worker threads for as long as it lasts (up to
// max_watch_duration), so a client that opens watches without end would leave none for the
// operator and the node agent. Each identity (the authenticated user's name: one ServiceAccount,
// the admin, the node agent) may hold at most `per_identity` watches; the next one is refused
// with 429 and Retry-After until one of its watches ends.
//
// Thread safety: TryAcquire from any thread; a Slot may be released (destroyed) on any thread.
// Ownership: a Slot refers to its quota, which must outlive it.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sluice::apiserver {

class WatchQuota {
 public:
  // An open watch's place in the quota; gives it back when destroyed. Movable, not copyable.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot();
    // True when it holds a place (TryAcquire succeeded and it was not moved from).
    bool held() const { return quota_ != nullptr; }

   private:
    friend class WatchQuota;
    Slot(WatchQuota* quota, std::string identity);
    void Release();
    WatchQuota* quota_ = nullptr;
    std::string identity_;
  };

  // `per_identity` 0 means no limit.
  explicit WatchQuota(size_t per_identity) : per_identity_(per_identity) {}
  WatchQuota(const WatchQuota&) = delete;
  WatchQuota& operator=(const WatchQuota&) = delete;

  // A place for one more watch of `identity`, or a Slot that is not held when it has
  // `per_identity` open already.
  Slot TryAcquire(const std::string& identity);

  // Watches `identity` holds open now.
  size_t open(const std::string& identity) const;
  size_t per_identity() const { return per_identity_; }

 private:
  void Give(const std::string& identity);

  const size_t per_identity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, size_t> open_;  // Identities with at least one open watch.
};

}  // namespace sluice::apiserver
