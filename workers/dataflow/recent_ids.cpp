#include "workers/dataflow/recent_ids.h"

#include <utility>

namespace sluice::dataflow {

// Moving a deque moves its element storage, so the views in index_ stay valid; the set is moved
// along with it.
RecentIds::RecentIds(RecentIds&& other) noexcept
    : capacity_(other.capacity_),
      order_(std::move(other.order_)),
      index_(std::move(other.index_)),
      forgotten_(other.forgotten_) {}

RecentIds& RecentIds::operator=(RecentIds&& other) noexcept {
  capacity_ = other.capacity_;
  order_ = std::move(other.order_);
  index_ = std::move(other.index_);
  forgotten_ = other.forgotten_;
  return *this;
}

void RecentIds::Insert(std::string id) {
  if (Contains(id)) return;
  order_.push_back(std::move(id));
  index_.insert(order_.back());
  while (order_.size() > capacity_) {
    index_.erase(order_.front());
    order_.pop_front();
    ++forgotten_;
  }
}

nlohmann::json RecentIds::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& id : order_) out.push_back(id);
  return out;
}

Result<RecentIds> RecentIds::FromJson(const nlohmann::json& j, size_t capacity) {
  if (!j.is_array()) return Status::Corruption("recent ids: not an array");
  RecentIds ids(capacity);
  for (const nlohmann::json& e : j) {
    if (!e.is_string()) return Status::Corruption("recent ids: an element is not a string");
    ids.Insert(e.get<std::string>());
  }
  ids.forgotten_ = 0;  // Forgotten before the snapshot, not by this set.
  return ids;
}

}  // namespace sluice::dataflow
