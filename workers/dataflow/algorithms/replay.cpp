#include "workers/dataflow/algorithms/replay.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::dataflow {

Result<ReplaySelector> ParseReplaySelector(std::string_view name) {
  if (name == "latest") return ReplaySelector::kLatest;
  if (name == "prioritized") return ReplaySelector::kPrioritized;
  return Status::InvalidArgument(
      "unknown replaySelector '" + std::string(name) + "' (want latest or prioritized)",
      "replaySelector");
}

Status ValidateReplayOptions(const ReplayOptions& o) {
  if (!(o.replay_ratio >= 0.0 && o.replay_ratio <= 0.95)) {
    return Status::InvalidArgument("must be in [0, 0.95]", "replayRatio");
  }
  if (o.capacity < 1) return Status::InvalidArgument("must be >= 1", "replayCapacity");
  if (!std::isfinite(o.alpha) || o.alpha < 0) {
    return Status::InvalidArgument("must be finite and >= 0", "replayAlpha");
  }
  if (!std::isfinite(o.epsilon) || o.epsilon <= 0) {
    return Status::InvalidArgument("must be finite and > 0", "replayEpsilon");
  }
  return Status::Ok();
}

double GroupPriority(std::span<const Sample> group) {
  if (group.empty()) return 0.0;
  double sum = 0.0;
  for (const Sample& s : group) {
    if (s.advantage) {
      sum += std::fabs(*s.advantage);
    } else if (s.group_mean) {
      sum += std::fabs(s.reward - *s.group_mean);
    }
  }
  return sum / static_cast<double>(group.size());
}

size_t PickProportional(std::span<const double> weights, double unit_random) {
  double total = 0.0;
  for (double w : weights) total += w;
  const double target = unit_random * total;
  double prefix = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0.0) continue;
    last_positive = i;
    prefix += weights[i];
    if (target < prefix) return i;
  }
  return last_positive;  // Rounding left target at the very top.
}

double UnitRandom(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Result<ReplayMemory> ReplayMemory::Create(const ReplayOptions& options) {
  SLUICE_RETURN_IF_ERROR(ValidateReplayOptions(options));
  return ReplayMemory(options);
}

void ReplayMemory::Add(uint64_t group_id, double priority) {
  if (!std::isfinite(priority) || priority < 0) priority = 0.0;
  if (entries_.size() == options_.capacity) entries_.pop_front();
  entries_.push_back(ReplayEntry{group_id, priority, 0});
}

bool ReplayMemory::Remove(uint64_t group_id) {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const ReplayEntry& e) { return e.group_id == group_id; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

size_t ReplayMemory::ReplayCount(size_t batch_groups) const {
  const auto wanted =
      static_cast<size_t>(std::floor(static_cast<double>(batch_groups) * options_.replay_ratio));
  return std::min(wanted, entries_.size());
}

std::vector<uint64_t> ReplayMemory::Select(size_t count, std::mt19937_64& rng) {
  count = std::min(count, entries_.size());
  std::vector<uint64_t> out;
  out.reserve(count);
  if (options_.selector == ReplaySelector::kLatest) {
    for (size_t i = 0; i < count; ++i) {
      ReplayEntry& e = entries_[entries_.size() - 1 - i];
      ++e.reuse_count;
      out.push_back(e.group_id);
    }
    return out;
  }
  std::vector<double> weights;
  weights.reserve(entries_.size());
  for (const ReplayEntry& e : entries_) {
    weights.push_back(std::pow(e.priority + options_.epsilon, options_.alpha));
  }
  for (size_t n = 0; n < count; ++n) {
    const size_t i = PickProportional(weights, UnitRandom(rng));
    weights[i] = 0.0;  // Without replacement.
    ++entries_[i].reuse_count;
    out.push_back(entries_[i].group_id);
  }
  return out;
}

nlohmann::json ReplayMemory::Serialize() const {
  nlohmann::json entries = nlohmann::json::array();
  for (const ReplayEntry& e : entries_) {
    entries.push_back(
        {{"groupId", e.group_id}, {"priority", e.priority}, {"reuse", e.reuse_count}});
  }
  return {{"entries", std::move(entries)}};
}

Status ReplayMemory::Deserialize(const nlohmann::json& state) {
  auto it = state.is_object() ? state.find("entries") : state.end();
  if (!state.is_object() || it == state.end() || !it->is_array()) {
    return Status::InvalidArgument("must be a list", "state.entries");
  }
  std::deque<ReplayEntry> parsed;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& e = (*it)[i];
    const std::string where = "state.entries[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::InvalidArgument("must be an object", where);
    auto id = e.find("groupId");
    auto priority = e.find("priority");
    auto reuse = e.find("reuse");
    if (id == e.end() || !id->is_number_unsigned()) {
      return Status::InvalidArgument("must be an integer >= 0", where + ".groupId");
    }
    if (priority == e.end() || !priority->is_number() || priority->get<double>() < 0) {
      return Status::InvalidArgument("must be a number >= 0", where + ".priority");
    }
    if (reuse == e.end() || !reuse->is_number_integer() || reuse->get<int64_t>() < 0) {
      return Status::InvalidArgument("must be an integer >= 0", where + ".reuse");
    }
    parsed.push_back(
        ReplayEntry{id->get<uint64_t>(), priority->get<double>(), reuse->get<int64_t>()});
  }
  while (parsed.size() > options_.capacity) parsed.pop_front();
  entries_ = std::move(parsed);
  return Status::Ok();
}

}  // namespace sluice::dataflow
