// Registry: owns every metric family of a process (or of a test) and collects them for scrapes.
//
//   metrics::Registry registry;
//   auto& requests = registry.AddCounter("sluice_http_requests_total", "HTTP requests served.",
//                                        {"method", "code"});
//   auto& ok_gets = requests.WithLabels({"GET", "200"});  // Keep this; it stays valid.
//   ok_gets.Inc();
//   std::string body = metrics::ExposeText(registry);   // exposition.h
//
// Names, label names and help are checked against the rules and conventions in names.h, and
// histogram buckets with ValidateBuckets. Registering a name again with the same type, help,
// label names (and buckets) returns the existing family, so several instances of a component can
// each register their metrics and tell themselves apart by a label; anything else under a name
// already taken is an error. Errors come two ways:
//
//   * TryAdd* returns the error as a Status (InvalidArgument for a bad name, label or bucket
//     list; AlreadyExists for a clash with an earlier registration);
//   * Add* treats it as a programming error: metric definitions are constants in code, so a bad
//     one is a bug that the first test constructing the component will hit. It prints the
//     Status and aborts (SLUICE_CHECK). This is the form components use.
//
// Ownership: the Registry owns its families, and families own their children; neither is ever
// removed, so references returned here stay valid until the Registry is destroyed. The
// Registry must outlive every user of those references.
//
// Thread safety: every method may be called from any thread; Collect runs concurrently with
// registrations and metric updates.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics/callback_family.h"
#include "common/metrics/family.h"
#include "common/metrics/snapshot.h"
#include "common/status.h"

namespace sluice::metrics {

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Result<CounterFamily*> TryAddCounter(std::string_view name, std::string_view help,
                                       std::vector<std::string> label_names = {});
  Result<GaugeFamily*> TryAddGauge(std::string_view name, std::string_view help,
                                   std::vector<std::string> label_names = {});
  // `buckets`: finite, strictly increasing upper bounds; +Inf is implicit.
  Result<HistogramFamily*> TryAddHistogram(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names,
                                           std::vector<double> buckets);
  Result<CallbackFamily*> TryAddCallbackCounter(std::string_view name, std::string_view help,
                                                std::vector<std::string> label_names = {});
  Result<CallbackFamily*> TryAddCallbackGauge(std::string_view name, std::string_view help,
                                              std::vector<std::string> label_names = {});

  // As TryAdd*, aborting with the Status printed on error.
  CounterFamily& AddCounter(std::string_view name, std::string_view help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(std::string_view name, std::string_view help,
                        std::vector<std::string> label_names = {});
  HistogramFamily& AddHistogram(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names, std::vector<double> buckets);
  CallbackFamily& AddCallbackCounter(std::string_view name, std::string_view help,
                                     std::vector<std::string> label_names = {});
  CallbackFamily& AddCallbackGauge(std::string_view name, std::string_view help,
                                   std::vector<std::string> label_names = {});

  // Every family, sorted by name, each with its children sorted by label values. Families with
  // no children yet are included (with none); formats decide whether to show them.
  std::vector<FamilySnapshot> Collect() const;

 private:
  // How a family was registered, to tell an identical re-registration from a clash.
  struct Entry {
    std::unique_ptr<FamilyBase> family;
    bool callback = false;
    std::vector<double> buckets;
  };

  // Validates, then returns the existing family when registered identically, or the one
  // `make_family` creates when the name is new.
  Result<FamilyBase*> Add(MetricType type, bool callback, std::string_view name,
                          std::string_view help, const std::vector<std::string>& label_names,
                          const std::vector<double>& buckets,
                          const std::function<std::unique_ptr<FamilyBase>()>& make_family);

  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> families_;
};

}  // namespace sluice::metrics
