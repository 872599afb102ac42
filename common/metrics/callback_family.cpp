#include "common/metrics/callback_family.h"

#include <utility>

#include "common/check.h"

namespace sluice::metrics {

CallbackFamily::CallbackFamily(std::string name, std::string help, MetricType type,
                               std::vector<std::string> label_names)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)) {
  SLUICE_CHECK(type == MetricType::kCounter || type == MetricType::kGauge);
}

void CallbackFamily::Set(const std::vector<std::string>& label_values, ValueFunction fn) {
  CheckLabelCount(label_values.size());
  SLUICE_CHECK(fn != nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  functions_.insert_or_assign(label_values, std::move(fn));
}

bool CallbackFamily::Remove(const std::vector<std::string>& label_values) {
  std::lock_guard<std::mutex> lock(mu_);
  return functions_.erase(label_values) > 0;
}

FamilySnapshot CallbackFamily::Collect() const {
  FamilySnapshot snapshot = EmptySnapshot();
  std::lock_guard<std::mutex> lock(mu_);
  snapshot.children.reserve(functions_.size());
  for (const auto& [label_values, fn] : functions_) {
    ChildSnapshot& out = snapshot.children.emplace_back();
    out.label_values = label_values;
    out.value = fn();
  }
  return snapshot;
}

}  // namespace sluice::metrics
