#include "localcluster/cli/eval_wait.h"

#include "common/json/fields.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

// The CRD's default of spec.evaluation.everyVersions.
constexpr int64_t kDefaultEveryVersions = 10;

}  // namespace

std::vector<PendingEvaluation> PendingEvaluations(const std::vector<json>& trainerjobs,
                                                  const std::vector<json>& dataflows) {
  std::vector<PendingEvaluation> pending;
  for (const json& dataflow : dataflows) {
    const json* evaluation = ValueAt(dataflow, "/spec/evaluation");
    if (evaluation == nullptr || !evaluation->is_object()) continue;
    const int64_t every =
        OptionalIntAt(*evaluation, "/everyVersions").value_or(kDefaultEveryVersions);
    if (every <= 0) continue;
    const std::string name = StringAt(dataflow, "/metadata/name");
    if (name.empty()) continue;
    const std::optional<int64_t> evaluated = OptionalIntAt(dataflow, "/status/evaluation/version");
    for (const json& job : trainerjobs) {
      if (StringAt(job, "/spec/dataflowRef/name") != name) continue;
      const std::optional<int64_t> version = OptionalIntAt(job, "/status/version");
      if (!version || *version <= 0 || *version % every != 0) continue;
      if (evaluated && *evaluated >= *version) continue;
      pending.push_back({name, StringAt(job, "/metadata/name"), *version, evaluated});
    }
  }
  return pending;
}

std::string DescribePending(const std::vector<PendingEvaluation>& pending) {
  std::string out;
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingEvaluation& p = pending[i];
    // Several TrainerJobs on one Dataflow (solve-and-verify) can owe the same round: name it once.
    bool seen = false;
    for (size_t j = 0; j < i; ++j) {
      seen = seen || (pending[j].dataflow == p.dataflow && pending[j].version == p.version);
    }
    if (seen) continue;
    if (!out.empty()) out += ", ";
    out += "version " + std::to_string(p.version) + " of dataflow " + p.dataflow;
    out += p.evaluated ? " (newest evaluated: " + std::to_string(*p.evaluated) + ")"
                       : " (none evaluated yet)";
  }
  return out;
}

}  // namespace sluice::cli
