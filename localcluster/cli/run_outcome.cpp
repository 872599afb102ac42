#include "localcluster/cli/run_outcome.h"

#include "common/json/fields.h"
#include "localcluster/cli/progress_render.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

std::string Phase(const json& trainerjob) {
  auto status = trainerjob.find("status");
  if (status == trainerjob.end() || !status->is_object()) return "";
  return StringField(*status, "phase");
}

const json* Conditions(const json& trainerjob) {
  auto status = trainerjob.find("status");
  if (status == trainerjob.end() || !status->is_object()) return nullptr;
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return nullptr;
  return &*conditions;
}

std::string Join(const std::string& head, const std::string& message) {
  if (head.empty()) return message;
  if (message.empty()) return head;
  return head + ": " + message;
}

}  // namespace

ExperimentOutcome DecideOutcome(const std::vector<json>& trainerjobs) {
  ExperimentOutcome outcome;
  bool all_succeeded = !trainerjobs.empty();
  for (const json& job : trainerjobs) {
    const std::string phase = Phase(job);
    if (phase == "Failed") {
      outcome.state = ExperimentState::kFailed;
      auto name = job.find("metadata");
      outcome.failed = name != job.end() && name->is_object() ? StringField(*name, "name") : "";
      outcome.reason = FailureReason(job);
      return outcome;
    }
    if (phase != "Succeeded") all_succeeded = false;
  }
  if (all_succeeded) outcome.state = ExperimentState::kSucceeded;
  return outcome;
}

std::string FailureReason(const json& trainerjob) {
  const json* conditions = Conditions(trainerjob);
  if (conditions == nullptr) return "no condition says why";
  for (const json& c : *conditions) {
    if (!c.is_object()) continue;
    if (StringField(c, "type") == "Failed" && StringField(c, "status") == "True") {
      return Join(StringField(c, "reason"), StringField(c, "message"));
    }
  }
  for (const json& c : *conditions) {
    if (!c.is_object()) continue;
    if (StringField(c, "status") == "False" && !StringField(c, "message").empty()) {
      return Join(StringField(c, "type") + " " + StringField(c, "reason"),
                  StringField(c, "message"));
    }
  }
  return "no condition says why";
}

std::string SuccessSummary(const std::vector<ProgressRow>& last_rows) {
  std::string out;
  for (const ProgressRow& row : last_rows) {
    out += row.trainer + " succeeded: " + FormatStepProgress(row.step, row.steps) +
           " steps, version " + FormatInt(row.version) + ", reward " +
           FormatNumber(row.reward_mean) + "\n";
  }
  return out;
}

}  // namespace sluice::cli
