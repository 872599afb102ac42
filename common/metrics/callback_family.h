// CallbackFamily: a counter or gauge whose values are computed at scrape time by functions,
// for state that already lives elsewhere (queue depth, cache size, open connections).
//
//   auto& depth = registry.AddCallbackGauge("sluice_workqueue_depth", "Items queued.", {"name"});
//   depth.Set({name_}, [this] { return static_cast<double>(Len()); });
//   ...  // in ~Workqueue(): depth.Remove({name_});
//
// Owned by a Registry (registry.h) and valid for its lifetime. The family owns the functions,
// not what they capture: whoever installs a function that captures an object must Remove it
// before that object dies. Values are in the base unit named by the metric. For a callback
// counter the function must return values that never decrease.
//
// Thread safety: every method may be called from any thread. Functions run on the scraping
// thread with the family's lock held, which is what makes Remove safe: once Remove returns,
// the function is not running and will not run again. A function must therefore not call
// Set or Remove on its own family (deadlock), and should be quick.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics/family.h"
#include "common/metrics/snapshot.h"

namespace sluice::metrics {

class CallbackFamily final : public FamilyBase {
 public:
  using ValueFunction = std::function<double()>;

  // Called by the Registry, which has validated the names. `type` is kCounter or kGauge.
  CallbackFamily(std::string name, std::string help, MetricType type,
                 std::vector<std::string> label_names);

  // Installs `fn` for `label_values` (one per label name, checked), replacing any previous one.
  void Set(const std::vector<std::string>& label_values, ValueFunction fn);
  // Uninstalls the function for `label_values`; false when there was none.
  bool Remove(const std::vector<std::string>& label_values);

  FamilySnapshot Collect() const override;

 private:
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, ValueFunction> functions_;
};

}  // namespace sluice::metrics
