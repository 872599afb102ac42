#include "localcluster/apiserver/network_policy_table.h"

#include <chrono>
#include <optional>
#include <string>

#include "common/time_format.h"
#include "localcluster/apiserver/deletion.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

json NetworkPolicyRow(const json& policy, Clock::WallTime now) {
  const std::string created = policy.value("/metadata/creationTimestamp"_json_pointer, "");
  const std::optional<Clock::WallTime> t = TryParseTime(created);
  const std::string age =
      t ? HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t))
        : std::string("<unknown>");
  json selector = policy.value("/spec/podSelector"_json_pointer, json::object());
  if (!selector.is_object()) selector = json::object();
  return {{"cells",
           {policy.value("/metadata/name"_json_pointer, ""), FormatLabelSelector(selector), age}}};
}

}  // namespace

WorkloadPrinter NetworkPolicyPrinter() {
  return {{{"Name", "string", "name", "Name must be unique within a namespace.", "", 0},
           {"Pod-Selector", "string", "",
            "Selects the pods to which this NetworkPolicy object applies; an empty selector "
            "selects every pod in the namespace.",
            "", 0},
           {"Age", "string", "", "When the object was created.", "", 0}},
          NetworkPolicyRow};
}

}  // namespace sluice::apiserver
