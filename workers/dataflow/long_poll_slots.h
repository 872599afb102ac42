// LongPollSlots: a cap on the long polls that may wait at once.
//
// Every waiting long poll holds one of the HTTP server's worker threads. Capping the lease polls
// below the thread count keeps threads free for everything else (a trainer's batch request,
// submits, acks), whatever the number of idle rollout replicas asking for work.
//
// Thread safety: every method from any thread; a Slot is released by the thread holding it.
#pragma once

#include <atomic>
#include <cstddef>

namespace sluice::dataflow {

class LongPollSlots {
 public:
  explicit LongPollSlots(size_t capacity) : capacity_(capacity) {}

  // A place among the waiting polls, given back when it is destroyed; empty when none was free.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Slot& operator=(Slot&& other) noexcept {
      if (this != &other) {
        Release();
        owner_ = other.owner_;
        other.owner_ = nullptr;
      }
      return *this;
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }
    bool held() const { return owner_ != nullptr; }

   private:
    friend class LongPollSlots;
    explicit Slot(LongPollSlots* owner) : owner_(owner) {}
    void Release() {
      if (owner_ != nullptr) owner_->waiting_.fetch_sub(1);
      owner_ = nullptr;
    }
    LongPollSlots* owner_ = nullptr;
  };

  // Takes a slot when fewer than capacity() are held; an empty Slot otherwise.
  Slot TryTake() {
    if (waiting_.fetch_add(1) >= capacity_) {
      waiting_.fetch_sub(1);
      return Slot();
    }
    return Slot(this);
  }

  size_t capacity() const { return capacity_; }
  size_t waiting() const { return waiting_.load(); }

 private:
  const size_t capacity_;
  std::atomic<size_t> waiting_{0};
};

}  // namespace sluice::dataflow
