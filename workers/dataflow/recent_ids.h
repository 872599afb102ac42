// RecentIds: a set of string ids that remembers only the newest `capacity` of them, forgetting
// the oldest first. The dataflow core remembers completed task ids (so a late or repeated submit
// is answered "duplicate") and acked batch ids (so a repeated ack is a no-op) this way: their
// number otherwise grows with dataset size x epochs for the life of a job.
//
// Deterministic: what is forgotten depends only on the insertion order, so replaying the same
// records gives the same set (the core's snapshot and replay equivalence relies on it).
// Not thread-safe (the core's lock guards it).
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>

#include "common/status.h"

namespace sluice::dataflow {

class RecentIds {
 public:
  explicit RecentIds(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}
  RecentIds(RecentIds&& other) noexcept;
  RecentIds& operator=(RecentIds&& other) noexcept;
  RecentIds(const RecentIds&) = delete;
  RecentIds& operator=(const RecentIds&) = delete;

  bool Contains(std::string_view id) const { return index_.count(id) > 0; }
  // Adds `id` (a no-op when present), forgetting the oldest id when over capacity.
  void Insert(std::string id);

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }
  // Ids forgotten so far (since construction or FromJson).
  int64_t forgotten() const { return forgotten_; }

  // Oldest first.
  nlohmann::json ToJson() const;
  // From ToJson's array (or any array of strings, e.g. an older snapshot's sorted set); keeps the
  // newest `capacity` of them. Corruption for anything but an array of strings.
  static Result<RecentIds> FromJson(const nlohmann::json& j, size_t capacity);

 private:
  size_t capacity_;
  std::deque<std::string> order_;  // Oldest first; deque keeps elements in place on push/pop.
  std::unordered_set<std::string_view> index_;  // Views of order_'s strings.
  int64_t forgotten_ = 0;
};

}  // namespace sluice::dataflow
