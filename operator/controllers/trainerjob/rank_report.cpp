#include "operator/controllers/trainerjob/rank_report.h"

#include "common/json/fields.h"
#include "operator/controllers/trainerjob/final_progress.h"
#include "operator/controllers/trainerjob/skipped_checkpoints.h"

namespace sluice::controllers::trainerjob {

using nlohmann::json;

std::vector<json> ApplyRankZeroReport(const json& report, json& status) {
  if (!report.is_object()) return {};
  const json phase = report.value("phase", json(""));
  const TrainerProgress shown =
      ReportedProgress({IntField(status, "step"), IntField(status, "version")},
                       phase.is_string() ? phase.get<std::string>() : "",
                       {IntField(report, "step"), IntField(report, "version")});
  status["step"] = shown.step;
  status["version"] = shown.version;
  if (report.contains("lastCheckpointStep")) {
    status["lastCheckpointStep"] = report["lastCheckpointStep"];
  }
  std::vector<json> fresh;
  if (report.contains("skippedCheckpoints")) {
    SkippedCheckpointsMerge merged = MergeSkippedCheckpoints(
        status.value("skippedCheckpoints", json::array()), report["skippedCheckpoints"]);
    if (!merged.status.empty()) status["skippedCheckpoints"] = std::move(merged.status);
    fresh = std::move(merged.fresh);
  }
  if (report.contains("metrics") && report["metrics"].is_object()) {
    json metrics = json::object();
    for (const char* k : {"loss", "rewardMean", "kl", "entropy", "tokensPerSecond", "stalenessMean",
                          "dataWaitFraction"}) {
      if (report["metrics"].contains(k) && report["metrics"][k].is_number()) {
        metrics[k] = report["metrics"][k];
      }
    }
    status["lastMetrics"] = metrics;
  }
  return fresh;
}

}  // namespace sluice::controllers::trainerjob
