// DataflowCore's snapshots: the whole state serialized as CBOR, and restoring it, built aside
// and swapped in so that a bad snapshot changes nothing. A snapshot plus the records after it
// reproduces the original core (dataflow_core.h, "Durability").
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workers/dataflow/algorithms/curators.h"
#include "workers/dataflow/algorithms/eval_episodes.h"
#include "workers/dataflow/algorithms/eval_metrics.h"
#include "workers/dataflow/buffered_group.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"
#include "workers/dataflow/recent_ids.h"

namespace sluice::dataflow {

using core_internal::CoreCounters;
using core_internal::CountersToJson;
using core_internal::kPolicyCounterFields;
using core_internal::VersionFromJson;
using core_internal::VersionToJson;
using nlohmann::json;

namespace {

constexpr std::pair<const char*, int64_t CoreCounters::*> kCoreCounterFields[] = {
    {"next_task", &CoreCounters::next_task},
    {"next_lease", &CoreCounters::next_lease},
    {"next_group", &CoreCounters::next_group},
    {"next_arrival", &CoreCounters::next_arrival},
    {"next_batch", &CoreCounters::next_batch},
    {"next_round", &CoreCounters::next_round},
    {"submits_accepted", &CoreCounters::submits_accepted},
    {"submits_late", &CoreCounters::submits_late},
    {"duplicates", &CoreCounters::duplicates},
    {"leases_granted", &CoreCounters::leases_granted},
    {"lease_expiries", &CoreCounters::lease_expiries},
    {"releases", &CoreCounters::releases},
    {"tasks_failed", &CoreCounters::tasks_failed},
    {"prompts_skipped", &CoreCounters::prompts_skipped},
    {"curator_forced", &CoreCounters::curator_forced},
    {"evals_completed", &CoreCounters::evals_completed},
};

template <typename T, size_t N>
void CountersFromJson(const json& j, T& c,
                      const std::pair<const char*, int64_t T::*> (&fields)[N]) {
  for (const auto& [name, member] : fields) c.*member = j.at(name).template get<int64_t>();
}

json TaskFieldsToJson(const std::string& id, bool eval, uint64_t row, int64_t round,
                      uint32_t attempt, int failures, const std::string& error, int state,
                      const std::string& lease) {
  return {{"id", id},       {"eval", eval},       {"row", row},
          {"round", round}, {"attempt", attempt}, {"failures", failures},
          {"error", error}, {"state", state},     {"lease", lease}};
}

Result<json> GroupsToJson(const std::vector<BufferedGroup>& groups) {
  json out = json::array();
  for (const BufferedGroup& g : groups) {
    SLUICE_ASSIGN_OR_RETURN(json e, EncodeBufferedGroup(g));
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<BufferedGroup>> GroupsFromJson(const json& j) {
  std::vector<BufferedGroup> out;
  for (const json& e : j) {
    SLUICE_ASSIGN_OR_RETURN(BufferedGroup g, DecodeBufferedGroup(e));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

json DataflowCore::BatchToJson(const OutstandingBatch& b) {
  return {{"id", b.id},
          {"policy", b.policy},
          {"version", b.version},
          {"served_at", b.served_at_ns},
          {"serves", b.serves},
          {"fresh", b.fresh_groups},
          {"replayed", b.replayed},
          {"stats", b.stats},
          {"groups", GroupsToJson(b.groups).value()}};
}

Result<std::shared_ptr<DataflowCore::OutstandingBatch>> DataflowCore::BatchFromJson(const json& j) {
  auto b = std::make_shared<OutstandingBatch>();
  b->id = j.at("id").get<std::string>();
  b->policy = j.at("policy").get<std::string>();
  b->version = j.at("version").get<int64_t>();
  b->served_at_ns = j.at("served_at").get<int64_t>();
  b->serves = j.at("serves").get<int64_t>();
  b->fresh_groups = j.at("fresh").get<int64_t>();
  b->replayed = j.at("replayed").get<std::vector<uint8_t>>();
  b->stats = j.at("stats");
  SLUICE_ASSIGN_OR_RETURN(b->groups, GroupsFromJson(j.at("groups")));
  if (b->replayed.size() != b->groups.size()) {
    return Status::Corruption("malformed batch " + b->id, "outstanding");
  }
  return b;
}

json DataflowCore::SnapshotJsonLocked() const {
  json j;
  j["format"] = 1;
  j["fingerprint"] = dataset_->fingerprint();
  j["policies_config"] = config_.policies;
  std::ostringstream rng;
  rng << rng_;
  j["rng"] = rng.str();
  const DatasetCursor::State cs = cursor_.state();
  j["cursor"] = {cs.epoch, cs.position};
  j["curator"] = curator_->Serialize();
  j["counters"] = CountersToJson(static_cast<const CoreCounters&>(*counters_), kCoreCounterFields);
  json tasks = json::array();
  for (const auto& [id, t] : tasks_) {
    tasks.push_back(TaskFieldsToJson(t->id, t->eval, t->row, t->eval_round, t->attempt, t->failures,
                                     t->last_error, static_cast<int>(t->state), t->lease_id));
  }
  j["tasks"] = std::move(tasks);
  j["pending"] = pending_;
  j["eval_pending"] = eval_pending_;
  j["completed"] = completed_.ToJson();
  json leases = json::array();
  for (const auto& [id, l] : leases_) {
    leases.push_back({{"id", l->id},
                      {"seq", l->seq},
                      {"task", l->task_id},
                      {"worker", l->worker_id},
                      {"attempt", l->attempt},
                      {"deadline", l->deadline_ns}});
  }
  j["leases"] = std::move(leases);
  json policies = json::array();
  for (const auto& p : policies_) {
    json pj = {
        {"name", p->name}, {"version", VersionToJson(p->version)}, {"announced", p->announced}};
    pj["buffer"] = GroupsToJson(p->buffer).value();
    pj["replay"] = p->replay.Serialize();
    std::vector<BufferedGroup> replay_groups;
    for (const auto& [id, g] : p->replay_groups) replay_groups.push_back(g);
    pj["replay_groups"] = GroupsToJson(replay_groups).value();
    pj["counters"] = CountersToJson(p->counters, kPolicyCounterFields);
    pj["acked_since_announce"] = p->acked_since_announce;
    json held = json::array();
    for (const auto& [seq, b] : p->held) held.push_back({{"seq", seq}, {"batch", BatchToJson(*b)}});
    pj["held"] = std::move(held);
    pj["held_seq"] = p->held_seq;
    json filters = json::array();
    for (const FilterCounters& f : p->filters) {
      filters.push_back({f.type, f.groups_dropped, f.samples_dropped});
    }
    pj["filters"] = std::move(filters);
    policies.push_back(std::move(pj));
  }
  j["policies"] = std::move(policies);
  json outstanding = json::array();
  for (const auto& [id, b] : outstanding_) outstanding.push_back(BatchToJson(*b));
  j["outstanding"] = std::move(outstanding);
  j["acked"] = acked_.ToJson();
  json rounds = json::array();
  for (const auto& [id, r] : eval_rounds_) {
    json items = json::array();
    for (const EvalItem& item : r->items) {
      items.push_back({{"dataset", item.dataset},
                       {"prompt", item.prompt_id},
                       {"rewards", item.rewards},
                       {"correct", item.correct},
                       {"episodes", EvalEpisodesToJson(item.episodes)}});
    }
    rounds.push_back({{"id", r->id},
                      {"policy", r->policy},
                      {"version", r->version},
                      {"outstanding", r->outstanding},
                      {"failed", r->failed},
                      {"items", std::move(items)}});
  }
  j["eval_rounds"] = std::move(rounds);
  j["last_eval"] = last_eval_;
  return j;
}

std::string DataflowCore::Snapshot(const std::function<void()>& under_lock) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (under_lock) under_lock();
  const std::vector<uint8_t> bytes = json::to_cbor(SnapshotJsonLocked());
  return std::string(bytes.begin(), bytes.end());
}

Status DataflowCore::RestoreSnapshot(std::string_view snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    const json j = json::from_cbor(snapshot);
    if (j.at("format").get<int>() != 1) return Status::Corruption("unknown snapshot format");
    if (j.at("fingerprint").get<uint64_t>() != dataset_->fingerprint()) {
      return Status::Conflict("the snapshot was taken with a different dataset");
    }
    if (j.at("policies_config").get<std::vector<std::string>>() != config_.policies) {
      return Status::Conflict("the snapshot was taken with different policies");
    }
    // Build everything aside, then swap in, so a bad snapshot changes nothing.
    std::mt19937_64 rng;
    std::istringstream rng_in(j.at("rng").get<std::string>());
    rng_in >> rng;
    if (rng_in.fail()) return Status::Corruption("bad generator state", "rng");
    DatasetCursor cursor(*dataset_, config_.shuffle, config_.shuffle_seed, config_.epochs);
    SLUICE_RETURN_IF_ERROR(cursor.Restore(
        {j.at("cursor").at(0).get<int64_t>(), j.at("cursor").at(1).get<uint64_t>()}));
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<PromptCurator> curator,
                            MakeCurator(config_.curator, config_.curator_options));
    SLUICE_RETURN_IF_ERROR(curator->Deserialize(j.at("curator")));
    auto counters = std::make_unique<Counters>();
    CountersFromJson(j.at("counters"), static_cast<CoreCounters&>(*counters), kCoreCounterFields);

    std::map<std::string, std::unique_ptr<Task>> tasks;
    for (const json& tj : j.at("tasks")) {
      auto t = std::make_unique<Task>();
      t->id = tj.at("id").get<std::string>();
      t->eval = tj.at("eval").get<bool>();
      t->row = tj.at("row").get<uint64_t>();
      t->eval_round = tj.at("round").get<int64_t>();
      t->attempt = tj.at("attempt").get<uint32_t>();
      t->failures = tj.at("failures").get<int>();
      t->last_error = tj.at("error").get<std::string>();
      const int state = tj.at("state").get<int>();
      if (state < 0 || state > 2) return Status::Corruption("bad task state", "tasks");
      t->state = static_cast<Task::State>(state);
      t->lease_id = tj.at("lease").get<std::string>();
      if (t->row >= (EvalFromEvalSplit(*t) ? dataset_->eval_size() : dataset_->train_size())) {
        return Status::Corruption("task row out of range", "tasks");
      }
      tasks.emplace(t->id, std::move(t));
    }
    auto pending = j.at("pending").get<std::deque<std::string>>();
    auto eval_pending = j.at("eval_pending").get<std::deque<std::string>>();
    for (const auto* q : {&pending, &eval_pending}) {
      for (const std::string& id : *q) {
        if (tasks.count(id) == 0) return Status::Corruption("queued task unknown", "pending");
      }
    }
    SLUICE_ASSIGN_OR_RETURN(
        RecentIds completed,
        RecentIds::FromJson(j.at("completed"),
                            static_cast<size_t>(config_.remember_completed_tasks)));
    std::map<std::string, std::unique_ptr<LeaseEntry>> leases;
    for (const json& lj : j.at("leases")) {
      auto l = std::make_unique<LeaseEntry>();
      l->id = lj.at("id").get<std::string>();
      l->seq = lj.at("seq").get<uint64_t>();
      l->task_id = lj.at("task").get<std::string>();
      l->worker_id = lj.at("worker").get<std::string>();
      l->attempt = lj.at("attempt").get<uint32_t>();
      l->deadline_ns = lj.at("deadline").get<int64_t>();
      if (tasks.count(l->task_id) == 0) return Status::Corruption("lease task unknown", "leases");
      leases.emplace(l->id, std::move(l));
    }
    const json& pjs = j.at("policies");
    if (pjs.size() != policies_.size()) return Status::Corruption("policy count", "policies");
    std::vector<std::unique_ptr<PolicyState>> policies;
    for (size_t i = 0; i < pjs.size(); ++i) {
      const json& pj = pjs[i];
      auto p = std::make_unique<PolicyState>(PolicyState{.name = policies_[i]->name,
                                                         .version = {},
                                                         .announced = false,
                                                         .buffer = {},
                                                         .replay = policies_[i]->replay,
                                                         .replay_groups = {},
                                                         .counters = {},
                                                         .filters = policies_[i]->filters,
                                                         .acked_since_announce = false,
                                                         .held = {},
                                                         .held_seq = 0});
      if (pj.at("name").get<std::string>() != p->name) {
        return Status::Corruption("policy order differs", "policies");
      }
      p->version = VersionFromJson(pj.at("version"));
      p->announced = pj.at("announced").get<bool>();
      SLUICE_ASSIGN_OR_RETURN(p->buffer, GroupsFromJson(pj.at("buffer")));
      SLUICE_RETURN_IF_ERROR(p->replay.Deserialize(pj.at("replay")));
      SLUICE_ASSIGN_OR_RETURN(std::vector<BufferedGroup> replay_groups,
                              GroupsFromJson(pj.at("replay_groups")));
      for (BufferedGroup& g : replay_groups) {
        const uint64_t id = g.group_id;
        p->replay_groups.emplace(id, std::move(g));
      }
      for (const ReplayEntry& e : p->replay.entries()) {
        if (p->replay_groups.count(e.group_id) == 0) {
          return Status::Corruption("replay entry without its group", "replay_groups");
        }
      }
      CountersFromJson(pj.at("counters"), p->counters, kPolicyCounterFields);
      // Absent in snapshots written before it was kept.
      p->acked_since_announce = pj.value("acked_since_announce", false);
      // Absent in snapshots written before held acknowledgements: none held.
      p->held_seq = pj.value("held_seq", int64_t{0});
      for (const json& hj : pj.value("held", json::array())) {
        SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<OutstandingBatch> b, BatchFromJson(hj.at("batch")));
        if (b->policy != p->name) {
          return Status::Corruption("held batch " + b->id + " of another policy", "held");
        }
        p->held.emplace(hj.at("seq").get<int64_t>(), std::move(b));
      }
      const json& fj = pj.at("filters");
      if (fj.size() != p->filters.size()) return Status::Corruption("filter count", "filters");
      for (size_t f = 0; f < fj.size(); ++f) {
        p->filters[f].groups_dropped = fj[f].at(1).get<int64_t>();
        p->filters[f].samples_dropped = fj[f].at(2).get<int64_t>();
      }
      policies.push_back(std::move(p));
    }
    std::map<std::string, std::shared_ptr<OutstandingBatch>> outstanding;
    for (const json& bj : j.at("outstanding")) {
      SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<OutstandingBatch> b, BatchFromJson(bj));
      if (FindPolicy(b->policy) == nullptr) {
        return Status::Corruption("batch " + b->id + " of an unknown policy", "outstanding");
      }
      outstanding.emplace(b->id, std::move(b));
    }
    SLUICE_ASSIGN_OR_RETURN(
        RecentIds acked,
        RecentIds::FromJson(j.at("acked"), static_cast<size_t>(config_.remember_acked_batches)));
    std::map<int64_t, std::unique_ptr<EvalRound>> rounds;
    for (const json& rj : j.at("eval_rounds")) {
      auto r = std::make_unique<EvalRound>();
      r->id = rj.at("id").get<int64_t>();
      r->policy = rj.at("policy").get<std::string>();
      r->version = rj.at("version").get<int64_t>();
      r->outstanding = rj.at("outstanding").get<int64_t>();
      r->failed = rj.at("failed").get<int64_t>();
      for (const json& ij : rj.at("items")) {
        EvalItem item;
        item.dataset = ij.at("dataset").get<std::string>();
        item.prompt_id = ij.at("prompt").get<std::string>();
        item.rewards = ij.at("rewards").get<std::vector<double>>();
        item.correct = ij.at("correct").get<std::vector<uint8_t>>();
        // Snapshots written before episodes were kept have none: the round reports no figures.
        if (auto e = ij.find("episodes"); e != ij.end()) item.episodes = EvalEpisodesFromJson(*e);
        r->items.push_back(std::move(item));
      }
      rounds.emplace(r->id, std::move(r));
    }

    rng_ = rng;
    cursor_ = std::move(cursor);
    curator_ = std::move(curator);
    counters_ = std::move(counters);
    tasks_ = std::move(tasks);
    pending_ = std::move(pending);
    eval_pending_ = std::move(eval_pending);
    completed_ = std::move(completed);
    leases_ = std::move(leases);
    policies_ = std::move(policies);
    outstanding_ = std::move(outstanding);
    acked_ = std::move(acked);
    eval_rounds_ = std::move(rounds);
    last_eval_ = j.at("last_eval");
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("snapshot: ") + e.what());
  }
  changed_.notify_all();
  return Status::Ok();
}

}  // namespace sluice::dataflow
