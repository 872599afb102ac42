// The private state of DataflowCore (tasks, leases, policy buffers, outstanding batches, eval
// rounds, counters) and the small conversions its implementation files share. DataflowCore's
// methods are defined across dataflow_core*.cpp, one concern each; this header lets them all see
// the same state. Internal to those files: nothing else includes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "workers/dataflow/algorithms/eval_metrics.h"
#include "workers/dataflow/algorithms/filters.h"
#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/buffered_group.h"
#include "workers/dataflow/dataflow_core.h"

namespace sluice::dataflow {

namespace core_internal {

// Wall times as nanoseconds since the Unix epoch (records and snapshots), and back.
inline int64_t ToNs(Clock::WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

inline Clock::WallTime FromNs(int64_t ns) {
  return Clock::WallTime(
      std::chrono::duration_cast<Clock::WallTime::duration>(std::chrono::nanoseconds(ns)));
}

// A duration in nanoseconds (lease durations, ack timeouts).
inline int64_t Ns(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(s).count();
}

struct PolicyCounters {
  int64_t accepted_groups = 0;
  int64_t accepted_samples = 0;
  int64_t filtered_groups = 0;
  int64_t filtered_samples = 0;
  int64_t stale_dropped_groups = 0;
  int64_t stale_dropped_samples = 0;
  int64_t stale_dropped_tokens = 0;
  int64_t down_weighted_samples = 0;
  int64_t served_batches = 0;
  int64_t served_groups = 0;
  int64_t reserved_batches = 0;
  int64_t replayed_groups = 0;
  int64_t acked_batches = 0;
  int64_t acked_groups = 0;
};

inline constexpr std::pair<const char*, int64_t PolicyCounters::*> kPolicyCounterFields[] = {
    {"accepted_groups", &PolicyCounters::accepted_groups},
    {"accepted_samples", &PolicyCounters::accepted_samples},
    {"filtered_groups", &PolicyCounters::filtered_groups},
    {"filtered_samples", &PolicyCounters::filtered_samples},
    {"stale_dropped_groups", &PolicyCounters::stale_dropped_groups},
    {"stale_dropped_samples", &PolicyCounters::stale_dropped_samples},
    {"stale_dropped_tokens", &PolicyCounters::stale_dropped_tokens},
    {"down_weighted_samples", &PolicyCounters::down_weighted_samples},
    {"served_batches", &PolicyCounters::served_batches},
    {"served_groups", &PolicyCounters::served_groups},
    {"reserved_batches", &PolicyCounters::reserved_batches},
    {"replayed_groups", &PolicyCounters::replayed_groups},
    {"acked_batches", &PolicyCounters::acked_batches},
    {"acked_groups", &PolicyCounters::acked_groups},
};

struct CoreCounters {
  int64_t next_task = 0;  // Ids: the n of the last "task-<n>", "lease-<n>", ... handed out.
  int64_t next_lease = 0;
  int64_t next_group = 0;
  int64_t next_arrival = 0;
  int64_t next_batch = 0;
  int64_t next_round = 0;
  int64_t submits_accepted = 0;
  int64_t submits_late = 0;
  int64_t duplicates = 0;
  int64_t leases_granted = 0;
  int64_t lease_expiries = 0;
  int64_t releases = 0;
  int64_t tasks_failed = 0;
  int64_t prompts_skipped = 0;
  int64_t curator_forced = 0;
  int64_t evals_completed = 0;
};

// The counters as a JSON object, one key per field (status and snapshots).
template <typename T, size_t N>
nlohmann::json CountersToJson(const T& c, const std::pair<const char*, int64_t T::*> (&fields)[N]) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, member] : fields) j[name] = c.*member;
  return j;
}

inline nlohmann::json VersionToJson(const VersionInfo& v) {
  return {{"number", v.number},
          {"url", v.url},
          {"digest", v.digest},
          {"delta_base", v.delta_base},
          {"evaluate", v.evaluate}};
}

inline VersionInfo VersionFromJson(const nlohmann::json& j) {
  VersionInfo v;
  v.number = j.at("number").get<int64_t>();
  v.url = j.at("url").get<std::string>();
  v.digest = j.at("digest").get<std::string>();
  v.delta_base = j.at("delta_base").get<int64_t>();
  // Absent in records and snapshots written before the flag existed.
  if (auto it = j.find("evaluate"); it != j.end()) v.evaluate = it->get<bool>();
  return v;
}

}  // namespace core_internal

struct DataflowCore::Task {
  enum class State { kPending = 0, kLeased = 1, kFailed = 2 };
  std::string id;
  bool eval = false;
  uint64_t row = 0;        // Index into the train or eval split.
  int64_t eval_round = 0;  // Eval tasks: their round.
  uint32_t attempt = 0;    // Issuances so far (the newest lease's attempt).
  int failures = 0;        // Expired leases and releases with an error.
  std::string last_error;
  State state = State::kPending;
  std::string lease_id;  // While leased.
};

struct DataflowCore::LeaseEntry {
  std::string id;
  uint64_t seq = 0;  // The n of "lease-<n>".
  std::string task_id;
  std::string worker_id;
  uint32_t attempt = 0;
  int64_t deadline_ns = 0;  // Wall clock.
};

struct DataflowCore::PolicyState {
  std::string name;
  VersionInfo version;  // number 0 until announced.
  bool announced = false;
  std::vector<BufferedGroup> buffer;  // Arrival order.
  ReplayMemory replay;
  std::map<uint64_t, BufferedGroup> replay_groups;  // The groups replay's entries name.
  core_internal::PolicyCounters counters;
  std::vector<FilterCounters> filters;  // Parallel to the filter chain.
  // A batch was acknowledged after the newest announcement: its trainer is about to announce the
  // version it trained (the drain decision's announce_due).
  bool acked_since_announce = false;
  // Batches acknowledged with AckHeld and not yet released, by hold number.
  std::map<int64_t, std::shared_ptr<OutstandingBatch>> held;
  int64_t held_seq = 0;  // The newest hold number given (never reused).
};

struct DataflowCore::OutstandingBatch {
  std::string id;
  std::string policy;
  int64_t version = 0;
  int64_t served_at_ns = 0;
  int64_t serves = 1;
  std::vector<BufferedGroup> groups;  // Fresh groups first, then replayed ones.
  std::vector<uint8_t> replayed;      // Per group.
  int64_t fresh_groups = 0;
  nlohmann::json stats = nlohmann::json::object();
};

struct DataflowCore::EvalRound {
  int64_t id = 0;
  std::string policy;
  int64_t version = 0;
  int64_t outstanding = 0;  // Tasks neither submitted nor set aside.
  int64_t failed = 0;       // Tasks set aside.
  std::vector<EvalItem> items;
};

struct DataflowCore::Counters : core_internal::CoreCounters {};

}  // namespace sluice::dataflow
