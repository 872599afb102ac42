#include "workers/rollout/lease_planner.h"

#include <algorithm>
#include <charconv>

namespace sluice::rollout {

int64_t TasksToLease(const CapacityInputs& in) {
  if (in.draining) return 0;
  if (in.kv_usage >= in.kv_high_watermark) return 0;
  const int64_t episode_slots = std::max<int64_t>(0, in.max_episodes - in.episodes_in_flight);
  if (episode_slots == 0) return 0;
  const int64_t per_task = std::max<int64_t>(1, in.samples_per_task);
  const int64_t free_sequences = std::max<int64_t>(0, in.max_sequences - in.sequences_in_flight);
  int64_t tasks = std::min(episode_slots, free_sequences / per_task);
  if (tasks == 0 && in.episodes_in_flight == 0) tasks = 1;
  return tasks;
}

std::vector<std::string> PoliciesBehind(const std::map<std::string, int64_t>& announced,
                                        const std::map<std::string, int64_t>& held) {
  std::vector<std::string> out;
  for (const auto& [policy, version] : held) {
    auto a = announced.find(policy);
    if (a != announced.end() && a->second > version) out.push_back(policy);
  }
  return out;
}

int ChooseRelay(int self, const std::vector<int>& ready_lower) {
  int best = self;
  for (int i : ready_lower) {
    if (i >= 0 && i < best) best = i;
  }
  return best;
}

std::optional<int> ReplicaIndex(std::string_view pod_name) {
  const size_t dash = pod_name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == pod_name.size()) return std::nullopt;
  int value = 0;
  const char* first = pod_name.data() + dash + 1;
  const char* last = pod_name.data() + pod_name.size();
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last || value < 0) return std::nullopt;
  return value;
}

std::string PeerPodName(std::string_view pod_name, int index) {
  const size_t dash = pod_name.rfind('-');
  std::string prefix(dash == std::string_view::npos ? pod_name : pod_name.substr(0, dash));
  return prefix + "-" + std::to_string(index);
}

Result<WeightUrl> SplitWeightUrl(std::string_view url, std::string_view field) {
  constexpr std::string_view kPath = "/v1/weights/";
  const size_t at = url.rfind(kPath);
  const size_t scheme = url.find("://");
  if (at == std::string_view::npos || scheme == std::string_view::npos || at <= scheme + 3) {
    return Status::InvalidArgument(
        "\"" + std::string(url) + "\" is not a weights URL (http://host:port/v1/weights/<version>)",
        std::string(field));
  }
  WeightUrl out;
  out.base = std::string(url.substr(0, at));
  const std::string_view digits = url.substr(at + kPath.size());
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.version);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
      out.version < 0) {
    return Status::InvalidArgument("\"" + std::string(url) + "\" does not end in a version number",
                                   std::string(field));
  }
  return out;
}

}  // namespace sluice::rollout
