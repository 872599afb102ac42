#include "workers/dataflow/settings/dataflow_settings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "api/validation.h"
#include "common/file/read_file.h"
#include "common/json/options_reader.h"
#include "common/yaml/yaml_json.h"
#include "workers/dataflow/algorithms/curators.h"
#include "workers/dataflow/algorithms/filters.h"
#include "workers/dataflow/algorithms/group_stats.h"
#include "workers/dataflow/algorithms/replay.h"
#include "workers/dataflow/algorithms/staleness.h"

namespace sluice::dataflow {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kMaxLogBytes = 64 * kMiB;

Status Bad(std::string message, std::string field) {
  return Status::InvalidArgument(std::move(message), std::move(field));
}

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

// "a/b/../c" has a ".." segment; so does "..".
bool HasDotDotSegment(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

std::string TrimTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

Status ResolveDataset(const api::DataflowSpecDataset& in, const DataflowMounts& mounts,
                      DatasetSource* out) {
  const int sources = (in.builtin ? 1 : 0) + (in.config_map ? 1 : 0) + (in.pvc ? 1 : 0);
  if (sources != 1) {
    return Bad("must set exactly one of builtin, configMap and pvc", "spec.dataset");
  }
  if (in.builtin) {
    out->builtin = BuiltinDataset{in.builtin->generator,
                                  in.builtin->count,
                                  in.builtin->max_operand,
                                  static_cast<uint64_t>(in.builtin->seed),
                                  "",
                                  in.builtin->prompt_style,
                                  in.builtin->length.value_or(BuiltinDataset{}.length)};
    for (const std::string& op : in.builtin->operations) {
      if (op.size() != 1)
        return Bad("unknown operation '" + op + "'", "spec.dataset.builtin.operations");
      out->builtin->operations += op;
    }
  } else {
    if (in.format != "jsonl") {
      return Bad("unsupported format '" + in.format + "' (want jsonl)", "spec.dataset.format");
    }
    if (in.config_map) {
      const std::string& key = in.config_map->key;
      if (key.empty() || key == "." || key == ".." || key.find('/') != std::string::npos) {
        return Bad("must be a ConfigMap key, not '" + key + "'", "spec.dataset.configMap.key");
      }
      out->file = TrimTrailingSlashes(mounts.dataset_dir) + "/" + key;
    } else {
      const std::string& path = in.pvc->path;
      if (path.empty() || path.front() != '/') {
        return Bad("must start with '/'", "spec.dataset.pvc.path");
      }
      if (path.back() == '/') {
        return Bad("must name a JSONL file inside the claim, not a directory ('" + path + "')",
                   "spec.dataset.pvc.path");
      }
      if (HasDotDotSegment(path)) {
        return Bad("must not contain '..' segments", "spec.dataset.pvc.path");
      }
      out->file = TrimTrailingSlashes(mounts.pvc_dir) + path;
    }
  }
  out->fields = {in.fields.prompt, in.fields.answer, in.fields.id};
  if (in.eval_split < 0 || in.eval_split > 0.5) {
    return Bad("must be in [0, 0.5]", "spec.dataset.evalSplit");
  }
  if (in.shuffle_seed < 0) return Bad("must be >= 0", "spec.dataset.shuffleSeed");
  if (in.epochs < 1) return Bad("must be >= 1", "spec.dataset.epochs");
  out->eval_split = in.eval_split;
  out->shuffle = in.shuffle;
  out->shuffle_seed = static_cast<uint64_t>(in.shuffle_seed);
  out->epochs = in.epochs;
  return Status::Ok();
}

bool IsCurator(std::string_view type) { return type == "greso" || type == "filter-solved"; }

// Filters in list order; a curator entry (greso, filter-solved) also selects that prompt curator
// with its options (the filter chain skips it, so it stays in the list for ordering and status).
// At most one curator entry: there is one curator.
Status ResolveFilters(const std::vector<api::DataflowSpecBufferFilter>& filters,
                      DataflowConfig* c) {
  std::set<std::string> seen;
  std::string curator_at;  // Where the curator entry is, once one was seen.
  for (size_t i = 0; i < filters.size(); ++i) {
    const std::string where = Index("spec.buffer.filters", i);
    const api::DataflowSpecBufferFilter& f = filters[i];
    if (!seen.insert(f.type).second) {
      return Bad("duplicate filter type '" + f.type + "'", where + ".type");
    }
    const json options = f.options.value_or(json::object());
    if (!options.is_object()) return Bad("must be an object", where + ".options");
    if (IsCurator(f.type)) {
      if (!curator_at.empty()) {
        return Bad("'" + f.type + "' and '" + c->curator + "' (" + curator_at +
                       ") are both prompt curators; list at most one",
                   where + ".type");
      }
      Result<std::unique_ptr<PromptCurator>> curator = MakeCurator(f.type, options);
      if (!curator.ok()) return PrefixField(curator.status(), where + ".options");
      c->curator = f.type;
      c->curator_options = options;
      curator_at = where;
    } else {
      Result<std::unique_ptr<GroupFilter>> made = MakeGroupFilter(f.type, options);
      if (!made.ok()) {
        const bool about_type = made.status().field() == "type";
        return about_type ? Bad(made.status().message(), where + ".type")
                          : PrefixField(made.status(), where + ".options");
      }
    }
    c->filters.push_back(FilterSpec{f.type, options});
  }
  return Status::Ok();
}

// spec.buffer.replayRatio and spec.buffer.replay. The validator names its knobs as the flags do
// (replayCapacity); errors name the CR's field (spec.buffer.replay.capacity).
Status ResolveReplay(const api::DataflowSpecBuffer& b, ReplayOptions* replay) {
  replay->replay_ratio = b.replay_ratio;
  Result<ReplaySelector> selector = ParseReplaySelector(b.replay.selector);
  if (!selector.ok()) return Bad(selector.status().message(), "spec.buffer.replay.selector");
  replay->selector = *selector;
  if (b.replay.capacity < 1) return Bad("must be >= 1", "spec.buffer.replay.capacity");
  replay->capacity = static_cast<size_t>(b.replay.capacity);
  replay->alpha = b.replay.alpha;
  replay->epsilon = b.replay.epsilon;
  const Status st = ValidateReplayOptions(*replay);
  if (st.ok()) return st;
  static const std::map<std::string, std::string> kFields = {
      {"replayRatio", "spec.buffer.replayRatio"},
      {"replayCapacity", "spec.buffer.replay.capacity"},
      {"replayAlpha", "spec.buffer.replay.alpha"},
      {"replayEpsilon", "spec.buffer.replay.epsilon"}};
  const auto it = kFields.find(st.field());
  return Bad(st.message(), it != kFields.end() ? it->second : "spec.buffer.replay");
}

Status ResolveBatch(const api::DataflowSpecBatch& batch, const std::vector<std::string>& policies,
                    DataflowSettings* s) {
  if (batch.groups_per_batch < 1) return Bad("must be >= 1", "spec.batch.groupsPerBatch");
  if (batch.minibatches < 1 || batch.minibatches > batch.groups_per_batch) {
    return Bad("must be in [1, spec.batch.groupsPerBatch]", "spec.batch.minibatches");
  }
  s->config.groups_per_batch = batch.groups_per_batch;
  s->minibatches = batch.minibatches;
  if (!batch.per_policy) return Status::Ok();
  for (size_t i = 0; i < batch.per_policy->size(); ++i) {
    const api::DataflowSpecBatchPerPolicyItem& item = (*batch.per_policy)[i];
    const std::string where = Index("spec.batch.perPolicy", i);
    if (std::find(policies.begin(), policies.end(), item.policy) == policies.end()) {
      return Bad("'" + item.policy + "' is not a Policy of spec.workflow.roles", where + ".policy");
    }
    if (s->groups_per_batch_by_policy.count(item.policy) > 0 ||
        s->minibatches_by_policy.count(item.policy) > 0) {
      return Bad("duplicate entry for '" + item.policy + "'", where + ".policy");
    }
    const int64_t groups = item.groups_per_batch.value_or(batch.groups_per_batch);
    if (groups < 1) return Bad("must be >= 1", where + ".groupsPerBatch");
    const int64_t minibatches = item.minibatches.value_or(batch.minibatches);
    if (minibatches < 1 || minibatches > groups) {
      return Bad("must be in [1, groupsPerBatch]", where + ".minibatches");
    }
    if (item.groups_per_batch) s->groups_per_batch_by_policy[item.policy] = groups;
    if (item.minibatches) s->minibatches_by_policy[item.policy] = minibatches;
  }
  return Status::Ok();
}

Status ResolveEvaluation(const api::DataflowSpec& spec, EvalOptions* eval) {
  if (!spec.evaluation) {
    eval->every_versions = 0;
    return Status::Ok();
  }
  const api::DataflowSpecEvaluation& e = *spec.evaluation;
  if (e.split != "eval" && e.split != "train") {
    return Bad("must be eval or train, got '" + e.split + "'", "spec.evaluation.split");
  }
  if (e.split == "eval" && spec.dataset.eval_split <= 0) {
    return Bad("split eval needs spec.dataset.evalSplit > 0", "spec.evaluation.split");
  }
  eval->from_train = e.split == "train";
  if (e.every_versions < 1) return Bad("must be >= 1", "spec.evaluation.everyVersions");
  if (e.repeat < 1) return Bad("must be >= 1", "spec.evaluation.repeat");
  if (e.samples < 1) return Bad("must be >= 1", "spec.evaluation.samples");
  eval->every_versions = e.every_versions;
  eval->k = e.repeat;
  eval->samples = e.samples;
  eval->at_start = e.at_start;
  // Merged over spec.sampling per eval task; an unset field inherits the training setting.
  eval->sampling = e.sampling ? api::ToJson(*e.sampling) : json::object();
  return Status::Ok();
}

void ResolveStorage(const api::DataflowSpecStorage& storage, DataflowSettings* s) {
  const std::string* text = std::get_if<std::string>(&storage.size);
  if (text != nullptr) {
    s->storage_bytes = QuantityBytes(*text);
  } else if (std::get<int64_t>(storage.size) >= 0) {
    s->storage_bytes = static_cast<uint64_t>(std::get<int64_t>(storage.size));
  }
  if (!s->storage_bytes) return;
  s->segment_bytes = std::clamp(*s->storage_bytes / 16, kMiB, kMaxLogBytes);
  s->snapshot_bytes = std::clamp(*s->storage_bytes / 8, kMiB, kMaxLogBytes);
}

}  // namespace

std::optional<uint64_t> QuantityBytes(std::string_view quantity) {
  size_t digits = 0;
  while (digits < quantity.size() &&
         (std::isdigit(static_cast<unsigned char>(quantity[digits])) || quantity[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string number(quantity.substr(0, digits));
  if (std::count(number.begin(), number.end(), '.') > 1 || number == ".") return std::nullopt;
  const std::string_view suffix = quantity.substr(digits);
  static const std::vector<std::pair<std::string_view, double>> kSuffixes = {
      {"", 1},        {"k", 1e3},     {"M", 1e6},     {"G", 1e9},     {"T", 1e12},
      {"P", 1e15},    {"E", 1e18},    {"Ki", 1024.0}, {"Mi", 0x1p20}, {"Gi", 0x1p30},
      {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix != name) continue;
    const double bytes = std::ceil(std::strtod(number.c_str(), nullptr) * factor);
    if (!std::isfinite(bytes) || bytes < 0 || bytes >= 0x1p63) return std::nullopt;
    return static_cast<uint64_t>(bytes);
  }
  return std::nullopt;
}

Result<DataflowSettings> SettingsFromDataflow(const api::Dataflow& df,
                                              const DataflowMounts& mounts) {
  const api::DataflowSpec& spec = df.spec;
  DataflowSettings s;
  s.name = df.metadata.name;
  SLUICE_RETURN_IF_ERROR(ResolveDataset(spec.dataset, mounts, &s.dataset));

  DataflowConfig& c = s.config;
  // Policies: one per distinct Policy of the roles, in role order; the first is the primary.
  if (spec.workflow.roles.empty()) return Bad("must have at least one role", "spec.workflow.roles");
  c.policies.clear();
  for (size_t i = 0; i < spec.workflow.roles.size(); ++i) {
    const std::string& policy = spec.workflow.roles[i].policy;
    if (policy.empty())
      return Bad("must not be empty", Index("spec.workflow.roles", i) + ".policy");
    if (std::find(c.policies.begin(), c.policies.end(), policy) == c.policies.end()) {
      c.policies.push_back(policy);
    }
  }
  if (spec.sampling.group_size < 1) return Bad("must be >= 1", "spec.sampling.groupSize");
  c.group_size = spec.sampling.group_size;
  // Tasks carry the generation settings and the episode definition in the CR's spelling.
  c.sampling = api::ToJson(spec.sampling);
  c.sampling.erase("groupSize");  // A task says how many completions it wants (`samples`).
  c.workflow = api::ToJson(spec.workflow);
  c.workflow["reward"] = api::ToJson(spec.reward);

  // Buffers. The CRD counts trajectories; the core's admission limit counts groups.
  const api::DataflowSpecBuffer& b = spec.buffer;
  if (b.capacity < 1) return Bad("must be >= 1", "spec.buffer.capacity");
  c.capacity_groups = std::max<int64_t>(1, b.capacity / c.group_size);
  c.staleness.max_staleness = b.max_staleness;
  Result<StaleAction> action = ParseStaleAction(b.stale_action);
  if (!action.ok()) return Bad(action.status().message(), "spec.buffer.staleAction");
  c.staleness.stale_action = *action;
  Result<QueueOrder> order = ParseQueueOrder(b.order);
  if (!order.ok()) return Bad(order.status().message(), "spec.buffer.order");
  c.staleness.order = *order;
  c.staleness.down_weight_decay = b.down_weight_decay;
  if (Status st = ValidateStalenessOptions(c.staleness); !st.ok()) {
    return PrefixField(st, "spec.buffer");  // spec.buffer.downWeightDecay, ...
  }
  SLUICE_RETURN_IF_ERROR(ResolveReplay(b, &c.replay));
  Result<AdvantageMode> advantage = ParseAdvantageMode(b.advantage);
  if (!advantage.ok()) return Bad(advantage.status().message(), "spec.buffer.advantage");
  c.group_stats.advantage = *advantage;
  c.curator = "accept-all";
  c.curator_options = json::object();
  if (b.filters) {
    SLUICE_RETURN_IF_ERROR(ResolveFilters(*b.filters, &c));
  }
  for (const FilterSpec& f : c.filters) {
    if (f.type == "dynamic-sampling" && c.group_size < 2) {
      return Bad("must be at least 2 when spec.buffer.filters has dynamic-sampling",
                 "spec.sampling.groupSize");
    }
  }

  SLUICE_RETURN_IF_ERROR(ResolveBatch(spec.batch, c.policies, &s));
  c.version_barrier = spec.version_barrier;
  SLUICE_RETURN_IF_ERROR(ResolveEvaluation(spec, &c.eval));
  c.shuffle = s.dataset.shuffle;
  c.shuffle_seed = s.dataset.shuffle_seed;
  c.epochs = s.dataset.epochs;
  ResolveStorage(spec.storage, &s);
  return s;
}

Result<api::Dataflow> LoadDataflowManifest(std::string_view yaml, std::string_view name) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<json> documents, yaml::ParseDocuments(yaml));
  std::vector<json*> dataflows;
  std::string names;
  for (json& doc : documents) {
    if (!doc.is_object() || doc.value("kind", "") != api::kDataflowKind) continue;
    const json& meta = doc.contains("metadata") ? doc["metadata"] : json::object();
    const std::string doc_name =
        meta.is_object() && meta.contains("name") && meta["name"].is_string()
            ? meta["name"].get<std::string>()
            : "";
    names += (names.empty() ? "" : ", ") + doc_name;
    if (name.empty() || doc_name == name) dataflows.push_back(&doc);
  }
  if (dataflows.empty()) {
    return Status::InvalidArgument(
        name.empty() ? std::string("no Dataflow in the manifest")
                     : "no Dataflow named '" + std::string(name) + "' in the manifest" +
                           (names.empty() ? "" : " (it has: " + names + ")"),
        "metadata.name");
  }
  if (dataflows.size() > 1) {
    return Status::InvalidArgument(
        "the manifest has several Dataflows (" + names + "); pick one with --dataflow-name",
        "metadata.name");
  }
  json& object = *dataflows.front();
  SLUICE_RETURN_IF_ERROR(api::DefaultAndValidate(object));
  return api::DataflowFromJson(object);
}

Result<api::Dataflow> LoadDataflowManifestFile(const std::string& path, std::string_view name) {
  Result<std::string> text = file::ReadWholeFile(path);
  if (!text.ok()) return Status::NotFound(path + ": cannot open the Dataflow manifest");
  Result<api::Dataflow> df = LoadDataflowManifest(*text, name);
  if (!df.ok()) return df.status().WithContext(path);
  return df;
}

}  // namespace sluice::dataflow
