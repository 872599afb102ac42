#include "localcluster/apiserver/workload_table.h"

#include <optional>

#include "common/json/fields.h"
#include "common/time_format.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/network_policy_table.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

std::string WorkloadAge(const json& object, Clock::WallTime now) {
  const std::string created = object.value("/metadata/creationTimestamp"_json_pointer, "");
  std::optional<Clock::WallTime> t = TryParseTime(created);
  if (!t) return "<unknown>";
  return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

// Containers and Images of a pod template: comma-joined names and images.
std::pair<std::string, std::string> ContainersAndImages(const json& object) {
  std::string names, images;
  for (const json& c : object.value("/spec/template/spec/containers"_json_pointer, json::array())) {
    names += (names.empty() ? "" : ",") + c.value("name", "");
    images += (images.empty() ? "" : ",") + c.value("image", "");
  }
  return {names, images};
}

json DeploymentRow(const json& d, Clock::WallTime now) {
  const auto [names, images] = ContainersAndImages(d);
  const int64_t desired = IntAt(d, "/spec/replicas");
  return {{"cells",
           {d.value("/metadata/name"_json_pointer, ""),
            std::to_string(IntAt(d, "/status/readyReplicas")) + "/" + std::to_string(desired),
            IntAt(d, "/status/updatedReplicas"), IntAt(d, "/status/availableReplicas"),
            WorkloadAge(d, now), names, images,
            FormatLabelSelector(d.value("/spec/selector"_json_pointer, json::object()))}}};
}

json ReplicaSetRow(const json& rs, Clock::WallTime now) {
  const auto [names, images] = ContainersAndImages(rs);
  return {{"cells",
           {rs.value("/metadata/name"_json_pointer, ""), IntAt(rs, "/spec/replicas"),
            IntAt(rs, "/status/replicas"), IntAt(rs, "/status/readyReplicas"), WorkloadAge(rs, now),
            names, images,
            FormatLabelSelector(rs.value("/spec/selector"_json_pointer, json::object()))}}};
}

PrinterColumn Column(const char* name, const char* type, const char* description,
                     int priority = 0) {
  return {name, type, "", description, "", priority};
}

std::vector<PrinterColumn> WithNameAgeAndWide(std::vector<PrinterColumn> middle) {
  std::vector<PrinterColumn> columns = {
      {"Name", "string", "name", "Name must be unique within a namespace.", "", 0}};
  columns.insert(columns.end(), middle.begin(), middle.end());
  columns.push_back(Column("Age", "string", "When the object was created."));
  columns.push_back(Column("Containers", "string", "Names of each container in the template.", 1));
  columns.push_back(Column("Images", "string", "Images referenced by each container.", 1));
  columns.push_back(Column("Selector", "string", "Label selector of the managed pods.", 1));
  return columns;
}

}  // namespace

std::string FormatLabelSelector(const json& selector) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ",") + part; };
  const json labels = selector.value("matchLabels", json::object());
  for (const auto& [key, value] : labels.items()) {
    add(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
  for (const json& e : selector.value("matchExpressions", json::array())) {
    const std::string key = e.value("key", "");
    const std::string op = e.value("operator", "");
    std::string values;
    for (const json& v : e.value("values", json::array())) {
      values += (values.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
    }
    if (op == "In") add(key + " in (" + values + ")");
    if (op == "NotIn") add(key + " notin (" + values + ")");
    if (op == "Exists") add(key);
    if (op == "DoesNotExist") add("!" + key);
  }
  return out.empty() ? "<none>" : out;
}

const std::map<std::string, WorkloadPrinter>& WorkloadPrinters() {
  static const std::map<std::string, WorkloadPrinter> kPrinters = {
      {"apps/deployments",
       {WithNameAgeAndWide(
            {Column("Ready", "string", "Number of the pod with ready state"),
             Column("Up-to-date", "string",
                    "Total number of non-terminated pods targeted by this "
                    "deployment that have the desired template spec."),
             Column("Available", "string",
                    "Total number of available pods (ready for at least minReadySeconds) "
                    "targeted by this deployment.")}),
        DeploymentRow}},
      {"apps/replicasets",
       {WithNameAgeAndWide({Column("Desired", "integer", "Number of desired pods."),
                            Column("Current", "integer", "Number of actually running pods."),
                            Column("Ready", "integer", "Number of ready pods.")}),
        ReplicaSetRow}},
      {"networking.k8s.io/networkpolicies", NetworkPolicyPrinter()},
  };
  return kPrinters;
}

}  // namespace sluice::apiserver
