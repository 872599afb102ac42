#include "localcluster/cli/eval_wait.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

// The CRD's default of spec.evaluation.everyVersions.
constexpr int64_t kDefaultEveryVersions = 10;

const json* At(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* key : keys) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::optional<int64_t> Int(const json& j, std::initializer_list<const char*> keys) {
  const json* v = At(j, keys);
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  return v->get<int64_t>();
}

std::string String(const json& j, std::initializer_list<const char*> keys) {
  const json* v = At(j, keys);
  if (v == nullptr || !v->is_string()) return "";
  return v->get<std::string>();
}

}  // namespace

std::vector<PendingEvaluation> PendingEvaluations(const std::vector<json>& trainerjobs,
                                                  const std::vector<json>& dataflows) {
  std::vector<PendingEvaluation> pending;
  for (const json& dataflow : dataflows) {
    const json* evaluation = At(dataflow, {"spec", "evaluation"});
    if (evaluation == nullptr || !evaluation->is_object()) continue;
    const int64_t every = Int(*evaluation, {"everyVersions"}).value_or(kDefaultEveryVersions);
    if (every <= 0) continue;
    const std::string name = String(dataflow, {"metadata", "name"});
    if (name.empty()) continue;
    const std::optional<int64_t> evaluated = Int(dataflow, {"status", "evaluation", "version"});
    for (const json& job : trainerjobs) {
      if (String(job, {"spec", "dataflowRef", "name"}) != name) continue;
      const std::optional<int64_t> version = Int(job, {"status", "version"});
      if (!version || *version <= 0 || *version % every != 0) continue;
      if (evaluated && *evaluated >= *version) continue;
      pending.push_back({name, String(job, {"metadata", "name"}), *version, evaluated});
    }
  }
  return pending;
}

std::string DescribePending(const std::vector<PendingEvaluation>& pending) {
  std::string out;
  for (const PendingEvaluation& p : pending) {
    if (!out.empty()) out += ", ";
    out += "version " + std::to_string(p.version) + " of dataflow " + p.dataflow;
    out += p.evaluated ? " (newest evaluated: " + std::to_string(*p.evaluated) + ")"
                       : " (none evaluated yet)";
  }
  return out;
}

}  // namespace sluice::cli
