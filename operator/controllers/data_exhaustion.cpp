#include "operator/controllers/data_exhaustion.h"

#include <algorithm>
#include <cstdint>

#include "common/json/fields.h"

namespace sluice::controllers {

using nlohmann::json;

DataflowExhaustion ExhaustionFromWorker(const json& worker) {
  DataflowExhaustion out;
  if (!worker.is_object() || !BoolField(worker, "exhausted")) return out;
  out.exhausted = true;
  const int64_t epochs = IntField(worker, "epochs", -1);
  const std::string of_epochs =
      epochs > 0 ? " of its " + std::to_string(epochs) + (epochs == 1 ? " epoch" : " epochs") : "";
  int64_t prompts = -1;
  if (auto it = worker.find("prompts"); it != worker.end() && it->is_object()) {
    prompts = IntField(*it, "total", -1);
  }
  std::string message = "the dataset is exhausted: ";
  message += prompts >= 0 ? "all " + std::to_string(prompts) + " prompts" + of_epochs + " were"
                          : "every prompt" + of_epochs + " was";
  message += " handed out and no train task is in flight";
  std::string reasons;
  auto policies = worker.find("policies");
  if (policies != worker.end() && policies->is_object()) {
    for (const auto& [name, p] : policies->items()) {
      if (!p.is_object() || !BoolField(p, "drained")) continue;
      out.drained.push_back(name);
      const std::string reason = StringField(p, "drain_reason");
      reasons += (reasons.empty() ? "" : "; ") + (reason.empty() ? "policy " + name : reason);
    }
  }
  message += out.drained.empty() ? "; the buffered groups are still being served"
                                 : "; drained: " + reasons;
  out.message = std::move(message);
  return out;
}

std::optional<std::string> StarvedMessage(const json& report, const std::string& dataflow) {
  if (!report.is_object() || StringField(report, "phase") != "Starved") return std::nullopt;
  std::string message = StringField(report, "message");
  if (message.empty()) {
    message = "it can no longer feed the trainer (rank 0 is Starved at step " +
              std::to_string(std::max<int64_t>(IntField(report, "step", -1), 0)) + ")";
  }
  return "Dataflow " + dataflow + ": " + message;
}

}  // namespace sluice::controllers
