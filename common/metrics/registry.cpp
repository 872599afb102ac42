#include "common/metrics/registry.h"

#include <cstdio>
#include <utility>

#include "common/check.h"
#include "common/metrics/histogram.h"
#include "common/metrics/names.h"

namespace sluice::metrics {
namespace {

std::string Describe(MetricType type, bool callback, const std::vector<std::string>& labels) {
  std::string out = callback ? "callback " : "";
  out += MetricTypeName(type);
  out += " with labels [";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ", ";
    out += labels[i];
  }
  out += "]";
  return out;
}

// Add* turn a registration error into a check failure, after saying what the error was.
template <typename T>
T& OrDie(Result<T*> result) {
  if (!result.ok()) {
    std::fprintf(stderr, "metrics registration failed: %s\n", result.status().ToString().c_str());
  }
  SLUICE_CHECK(result.ok());
  return **result;
}

}  // namespace

Result<FamilyBase*> Registry::Add(MetricType type, bool callback, std::string_view name,
                                  std::string_view help,
                                  const std::vector<std::string>& label_names,
                                  const std::vector<double>& buckets,
                                  const std::function<std::unique_ptr<FamilyBase>()>& make_family) {
  SLUICE_RETURN_IF_ERROR(ValidateFamily(type, name, help, label_names));
  const std::string quoted = "metric \"" + std::string(name) + "\"";
  SLUICE_RETURN_IF_ERROR(ValidateBuckets(buckets).WithContext(quoted));

  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = families_.find(name); it != families_.end()) {
    const Entry& entry = it->second;
    const FamilyBase& existing = *entry.family;
    const bool same_kind = existing.type() == type && entry.callback == callback &&
                           existing.label_names() == label_names;
    if (same_kind && existing.help() == help && entry.buckets == buckets) return entry.family.get();
    std::string what;
    if (!same_kind) {
      what = "is already registered as a " +
             Describe(existing.type(), entry.callback, existing.label_names()) +
             "; cannot register it as a " + Describe(type, callback, label_names);
    } else if (existing.help() != help) {
      what = "is already registered with different help text";
    } else {
      what = "is already registered with different buckets";
    }
    return Status::AlreadyExists(quoted + " " + what);
  }
  Entry entry{make_family(), callback, buckets};
  FamilyBase* family = entry.family.get();
  families_.emplace(std::string(name), std::move(entry));
  return family;
}

Result<CounterFamily*> Registry::TryAddCounter(std::string_view name, std::string_view help,
                                               std::vector<std::string> label_names) {
  SLUICE_ASSIGN_OR_RETURN(
      FamilyBase * family, Add(MetricType::kCounter, false, name, help, label_names, {}, [&] {
        return std::make_unique<CounterFamily>(std::string(name), std::string(help),
                                               MetricType::kCounter, label_names,
                                               [] { return std::make_unique<Counter>(); });
      }));
  // Same type and callback flag as registered means the same concrete class.
  return static_cast<CounterFamily*>(family);
}

Result<GaugeFamily*> Registry::TryAddGauge(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names) {
  SLUICE_ASSIGN_OR_RETURN(
      FamilyBase * family, Add(MetricType::kGauge, false, name, help, label_names, {}, [&] {
        return std::make_unique<GaugeFamily>(std::string(name), std::string(help),
                                             MetricType::kGauge, label_names,
                                             [] { return std::make_unique<Gauge>(); });
      }));
  return static_cast<GaugeFamily*>(family);
}

Result<HistogramFamily*> Registry::TryAddHistogram(std::string_view name, std::string_view help,
                                                   std::vector<std::string> label_names,
                                                   std::vector<double> buckets) {
  SLUICE_ASSIGN_OR_RETURN(FamilyBase * family,
                          Add(MetricType::kHistogram, false, name, help, label_names, buckets, [&] {
                            return std::make_unique<HistogramFamily>(
                                std::string(name), std::string(help), MetricType::kHistogram,
                                label_names,
                                [buckets] { return std::make_unique<Histogram>(buckets); });
                          }));
  return static_cast<HistogramFamily*>(family);
}

Result<CallbackFamily*> Registry::TryAddCallbackCounter(std::string_view name,
                                                        std::string_view help,
                                                        std::vector<std::string> label_names) {
  SLUICE_ASSIGN_OR_RETURN(
      FamilyBase * family, Add(MetricType::kCounter, true, name, help, label_names, {}, [&] {
        return std::make_unique<CallbackFamily>(std::string(name), std::string(help),
                                                MetricType::kCounter, label_names);
      }));
  return static_cast<CallbackFamily*>(family);
}

Result<CallbackFamily*> Registry::TryAddCallbackGauge(std::string_view name, std::string_view help,
                                                      std::vector<std::string> label_names) {
  SLUICE_ASSIGN_OR_RETURN(
      FamilyBase * family, Add(MetricType::kGauge, true, name, help, label_names, {}, [&] {
        return std::make_unique<CallbackFamily>(std::string(name), std::string(help),
                                                MetricType::kGauge, label_names);
      }));
  return static_cast<CallbackFamily*>(family);
}

CounterFamily& Registry::AddCounter(std::string_view name, std::string_view help,
                                    std::vector<std::string> label_names) {
  return OrDie(TryAddCounter(name, help, std::move(label_names)));
}

GaugeFamily& Registry::AddGauge(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names) {
  return OrDie(TryAddGauge(name, help, std::move(label_names)));
}

HistogramFamily& Registry::AddHistogram(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> buckets) {
  return OrDie(TryAddHistogram(name, help, std::move(label_names), std::move(buckets)));
}

CallbackFamily& Registry::AddCallbackCounter(std::string_view name, std::string_view help,
                                             std::vector<std::string> label_names) {
  return OrDie(TryAddCallbackCounter(name, help, std::move(label_names)));
}

CallbackFamily& Registry::AddCallbackGauge(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names) {
  return OrDie(TryAddCallbackGauge(name, help, std::move(label_names)));
}

std::vector<FamilySnapshot> Registry::Collect() const {
  // Families are never removed, so the pointers outlive the lock; collecting outside it keeps
  // slow callbacks from blocking registrations.
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    families.reserve(families_.size());
    for (const auto& [name, entry] : families_) families.push_back(entry.family.get());
  }
  std::vector<FamilySnapshot> snapshots;
  snapshots.reserve(families.size());
  for (const FamilyBase* family : families) snapshots.push_back(family->Collect());
  return snapshots;
}

}  // namespace sluice::metrics
