#include "operator/controllers/data_exhaustion.h"

#include <algorithm>
#include <cstdint>

namespace sluice::controllers {

using nlohmann::json;

namespace {

bool Flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::string Text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Count(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

}  // namespace

DataflowExhaustion ExhaustionFromWorker(const json& worker) {
  DataflowExhaustion out;
  if (!worker.is_object() || !Flag(worker, "exhausted")) return out;
  out.exhausted = true;
  const int64_t epochs = Count(worker, "epochs");
  const std::string of_epochs =
      epochs > 0 ? " of its " + std::to_string(epochs) + (epochs == 1 ? " epoch" : " epochs") : "";
  int64_t prompts = -1;
  if (auto it = worker.find("prompts"); it != worker.end() && it->is_object()) {
    prompts = Count(*it, "total");
  }
  std::string message = "the dataset is exhausted: ";
  message += prompts >= 0 ? "all " + std::to_string(prompts) + " prompts" + of_epochs + " were"
                          : "every prompt" + of_epochs + " was";
  message += " handed out and no train task is in flight";
  std::string reasons;
  auto policies = worker.find("policies");
  if (policies != worker.end() && policies->is_object()) {
    for (const auto& [name, p] : policies->items()) {
      if (!p.is_object() || !Flag(p, "drained")) continue;
      out.drained.push_back(name);
      const std::string reason = Text(p, "drain_reason");
      reasons += (reasons.empty() ? "" : "; ") + (reason.empty() ? "policy " + name : reason);
    }
  }
  message += out.drained.empty() ? "; the buffered groups are still being served"
                                 : "; drained: " + reasons;
  out.message = std::move(message);
  return out;
}

std::optional<std::string> StarvedMessage(const json& report, const std::string& dataflow) {
  if (!report.is_object() || Text(report, "phase") != "Starved") return std::nullopt;
  std::string message = Text(report, "message");
  if (message.empty()) {
    message = "it can no longer feed the trainer (rank 0 is Starved at step " +
              std::to_string(std::max<int64_t>(Count(report, "step"), 0)) + ")";
  }
  return "Dataflow " + dataflow + ": " + message;
}

}  // namespace sluice::controllers
