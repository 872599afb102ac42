#include "localcluster/apiserver/builtin_table.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/ascii.h"
#include "common/join_strings.h"
#include "common/json/fields.h"
#include "localcluster/apiserver/workload_table.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// ---- JSON access: absent or mistyped fields read as empty, as Go's zero values do. ----

// A number as kubectl prints it: an integer, or a fraction cut to one.
int64_t Int(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) return static_cast<int64_t>(v.get<double>());
  return 0;
}

// Present and not null (a Go pointer or struct field that is set).
bool Has(const json& v) { return !v.is_null(); }

// ---- Time. ----

// An RFC 3339 timestamp ("2026-01-01T00:00:00Z", "...T00:00:00.123456Z", "...+02:00").
std::optional<Clock::WallTime> ParseTime(const json& v) {
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  size_t pos = static_cast<size_t>(consumed);
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (digits < 9) {
        nanos = nanos * 10 + (s[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    for (; digits < 9; ++digits) nanos *= 10;
  }
  int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
    int hours = 0;
    int minutes = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &hours, &minutes) != 2) return std::nullopt;
    offset = (s[pos] == '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const int64_t secs = static_cast<int64_t>(timegm(&tm)) - offset;
  return Clock::WallTime(std::chrono::duration_cast<Clock::WallTime::duration>(
      std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

// kube's translateTimestampSince: "5m", or "<unknown>" for an unset timestamp.
std::string Since(const json& timestamp, Clock::WallTime now) {
  std::optional<Clock::WallTime> t = ParseTime(timestamp);
  if (!t) return "<unknown>";
  return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

std::string Age(const json& obj, Clock::WallTime now) {
  return Since(AnyAt(obj, "/metadata/creationTimestamp"), now);
}

// Go's time.Time.UTC().Format(time.RFC3339); the zero time for an unset timestamp.
std::string Rfc3339(const json& timestamp) {
  std::optional<Clock::WallTime> t = ParseTime(timestamp);
  if (!t) return "0001-01-01T00:00:00Z";
  const std::time_t secs = static_cast<std::time_t>(
      std::chrono::floor<std::chrono::seconds>(t->time_since_epoch()).count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Keeps the later of `latest` and `timestamp` (an unset timestamp changes nothing).
void KeepLatest(std::optional<Clock::WallTime>& latest, const json& timestamp) {
  std::optional<Clock::WallTime> t = ParseTime(timestamp);
  if (t && (!latest || *latest < *t)) latest = t;
}

// ---- Printers. ----

std::string Name(const json& obj) { return StringAt(obj, "/metadata/name"); }

bool ConditionTrue(const json& conditions, std::string_view type) {
  for (const json& c : ArrayValue(conditions)) {
    if (StringAt(c, "/type") == type) return StringAt(c, "/status") == "True";
  }
  return false;
}

// labels.FormatLabels: "a=1,b=2" (sorted), "<none>" when empty.
std::string FormatLabels(const json& labels) {
  std::vector<std::string> parts;
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) parts.push_back(key + "=" + StringValue(value));
  }
  return parts.empty() ? "<none>" : JoinStrings(parts, ",");
}

std::string Quantity(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  return "0";  // A zero resource.Quantity prints as "0".
}

json PodRow(const json& pod, Clock::WallTime now) {
  const json& spec = AnyAt(pod, "/spec");
  const json& status = AnyAt(pod, "/status");
  const std::string phase = StringAt(status, "/phase");
  std::string reason = phase;
  if (!StringAt(status, "/reason").empty()) reason = StringAt(status, "/reason");
  for (const json& c : ArrayValue(AnyAt(status, "/conditions"))) {
    if (StringAt(c, "/type") == "PodScheduled" && StringAt(c, "/reason") == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }

  int64_t total = static_cast<int64_t>(ArrayValue(AnyAt(spec, "/containers")).size());
  int64_t ready = 0;
  // Init containers with restartPolicy Always are sidecars: they count as pod containers.
  std::set<std::string> sidecars;
  const json& init_specs = ArrayValue(AnyAt(spec, "/initContainers"));
  for (const json& c : init_specs) {
    if (StringAt(c, "/restartPolicy") == "Always") {
      sidecars.insert(StringAt(c, "/name"));
      ++total;
    }
  }

  int64_t restarts = 0;
  int64_t sidecar_restarts = 0;
  std::optional<Clock::WallTime> last_restart;
  std::optional<Clock::WallTime> last_sidecar_restart;
  bool initializing = false;
  const json& init_statuses = ArrayValue(AnyAt(status, "/initContainerStatuses"));
  for (size_t i = 0; i < init_statuses.size(); ++i) {
    const json& c = init_statuses[i];
    const bool sidecar = sidecars.count(StringAt(c, "/name")) > 0;
    const json& finished = AnyAt(c, "/lastState/terminated/finishedAt");
    restarts += Int(AnyAt(c, "/restartCount"));
    KeepLatest(last_restart, finished);
    if (sidecar) {
      sidecar_restarts += Int(AnyAt(c, "/restartCount"));
      KeepLatest(last_sidecar_restart, finished);
    }
    const json& terminated = AnyAt(c, "/state/terminated");
    const json& waiting = AnyAt(c, "/state/waiting");
    if (Has(terminated) && Int(AnyAt(terminated, "/exitCode")) == 0) continue;
    if (sidecar && AnyAt(c, "/started") == true) {
      if (AnyAt(c, "/ready") == true) ++ready;
      continue;
    }
    if (Has(terminated)) {
      const std::string why = StringAt(terminated, "/reason");
      if (!why.empty()) {
        reason = "Init:" + why;
      } else if (Int(AnyAt(terminated, "/signal")) != 0) {
        reason = "Init:Signal:" + std::to_string(Int(AnyAt(terminated, "/signal")));
      } else {
        reason = "Init:ExitCode:" + std::to_string(Int(AnyAt(terminated, "/exitCode")));
      }
    } else if (Has(waiting) && !StringAt(waiting, "/reason").empty() &&
               StringAt(waiting, "/reason") != "PodInitializing") {
      reason = "Init:" + StringAt(waiting, "/reason");
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(init_specs.size());
    }
    initializing = true;
    break;
  }

  if (!initializing || ConditionTrue(AnyAt(status, "/conditions"), "Initialized")) {
    restarts = sidecar_restarts;
    last_restart = last_sidecar_restart;
    bool has_running = false;
    const json& statuses = ArrayValue(AnyAt(status, "/containerStatuses"));
    for (size_t i = statuses.size(); i-- > 0;) {
      const json& c = statuses[i];
      restarts += Int(AnyAt(c, "/restartCount"));
      KeepLatest(last_restart, AnyAt(c, "/lastState/terminated/finishedAt"));
      const json& waiting = AnyAt(c, "/state/waiting");
      const json& terminated = AnyAt(c, "/state/terminated");
      if (Has(waiting) && !StringAt(waiting, "/reason").empty()) {
        reason = StringAt(waiting, "/reason");
      } else if (Has(terminated) && !StringAt(terminated, "/reason").empty()) {
        reason = StringAt(terminated, "/reason");
      } else if (Has(terminated)) {
        const int64_t signal = Int(AnyAt(terminated, "/signal"));
        reason = signal != 0 ? "Signal:" + std::to_string(signal)
                             : "ExitCode:" + std::to_string(Int(AnyAt(terminated, "/exitCode")));
      } else if (AnyAt(c, "/ready") == true && Has(AnyAt(c, "/state/running"))) {
        has_running = true;
        ++ready;
      }
    }
    // A pod whose last container completed but another still runs is not "Completed".
    if (reason == "Completed" && has_running) {
      reason = ConditionTrue(AnyAt(status, "/conditions"), "Ready") ? "Running" : "NotReady";
    }
  }

  if (Has(AnyAt(pod, "/metadata/deletionTimestamp"))) {
    if (StringAt(status, "/reason") == "NodeLost") {
      reason = "Unknown";
    } else if (phase != "Succeeded" && phase != "Failed") {
      reason = "Terminating";
    }
  }

  std::string restarts_text = std::to_string(restarts);
  if (restarts != 0 && last_restart) {
    restarts_text +=
        " (" +
        HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *last_restart)) +
        " ago)";
  }

  std::string ip;
  const json& ips = ArrayValue(AnyAt(status, "/podIPs"));
  if (!ips.empty()) {
    ip = StringAt(ips[0], "/ip");
  } else {
    ip = StringAt(status, "/podIP");  // v1 objects written before podIPs existed.
  }
  std::string node = StringAt(spec, "/nodeName");
  std::string nominated = StringAt(status, "/nominatedNodeName");
  std::string gates = "<none>";
  const json& gate_specs = ArrayValue(AnyAt(spec, "/readinessGates"));
  if (!gate_specs.empty()) {
    int64_t passing = 0;
    for (const json& gate : gate_specs) {
      const std::string type = StringAt(gate, "/conditionType");
      for (const json& c : ArrayValue(AnyAt(status, "/conditions"))) {
        if (StringAt(c, "/type") == type) {
          if (StringAt(c, "/status") == "True") ++passing;
          break;
        }
      }
    }
    gates = std::to_string(passing) + "/" + std::to_string(gate_specs.size());
  }

  json row = {{"cells",
               {Name(pod), std::to_string(ready) + "/" + std::to_string(total), reason,
                restarts_text, Age(pod, now), ip.empty() ? "<none>" : ip,
                node.empty() ? "<none>" : node, nominated.empty() ? "<none>" : nominated, gates}}};
  if (phase == "Succeeded" || phase == "Failed") {
    row["conditions"] =
        json::array({{{"type", "Completed"},
                      {"status", "True"},
                      {"reason", phase},
                      {"message", phase == "Succeeded" ? "The pod has completed successfully."
                                                       : "The pod failed."}}});
  }
  return row;
}

json NamespaceRow(const json& ns, Clock::WallTime now) {
  std::string phase = StringAt(ns, "/status/phase");
  // A real server sets the phase on create; objects written without one read as it would.
  if (phase.empty()) {
    phase = Has(AnyAt(ns, "/metadata/deletionTimestamp")) ? "Terminating" : "Active";
  }
  return {{"cells", {Name(ns), phase, Age(ns, now)}}};
}

std::string NodeAddress(const json& node, std::string_view type) {
  for (const json& a : ArrayValue(AnyAt(node, "/status/addresses"))) {
    if (StringAt(a, "/type") == type) return StringAt(a, "/address");
  }
  return "<none>";
}

json NodeRow(const json& node, Clock::WallTime now) {
  std::string status = "Unknown";
  for (const json& c : ArrayValue(AnyAt(node, "/status/conditions"))) {
    if (StringAt(c, "/type") == "Ready") {
      status = StringAt(c, "/status") == "True" ? "Ready" : "NotReady";
    }
  }
  if (AnyAt(node, "/spec/unschedulable") == true) status += ",SchedulingDisabled";

  std::set<std::string> roles;
  const json& labels = AnyAt(node, "/metadata/labels");
  if (labels.is_object()) {
    static constexpr std::string_view kRolePrefix = "node-role.kubernetes.io/";
    for (const auto& [key, value] : labels.items()) {
      if (key.size() > kRolePrefix.size() && key.compare(0, kRolePrefix.size(), kRolePrefix) == 0) {
        roles.insert(key.substr(kRolePrefix.size()));
      } else if (key == "kubernetes.io/role" && !StringValue(value).empty()) {
        roles.insert(StringValue(value));
      }
    }
  }
  const std::string role_text =
      JoinStrings(std::vector<std::string>(roles.begin(), roles.end()), ",");

  const json& info = AnyAt(node, "/status/nodeInfo");
  auto known = [&](const char* field) {
    std::string v = StringValue(AnyField(info, field));
    return v.empty() ? std::string("<unknown>") : v;
  };
  return {{"cells",
           {Name(node), status, role_text.empty() ? "<none>" : role_text, Age(node, now),
            StringAt(info, "/kubeletVersion"), NodeAddress(node, "InternalIP"),
            NodeAddress(node, "ExternalIP"), known("osImage"), known("kernelVersion"),
            known("containerRuntimeVersion")}}};
}

std::string ServiceExternalIp(const json& spec, const json& status, const std::string& type) {
  std::vector<std::string> external;
  for (const json& ip : ArrayValue(AnyAt(spec, "/externalIPs")))
    external.push_back(StringValue(ip));
  if (type == "ClusterIP" || type == "NodePort") {
    return external.empty() ? "<none>" : JoinStrings(external, ",");
  }
  if (type == "LoadBalancer") {
    std::set<std::string> ingress;  // Sorted and de-duplicated, as kube's string set.
    for (const json& in : ArrayValue(AnyAt(status, "/loadBalancer/ingress"))) {
      if (!StringAt(in, "/ip").empty()) {
        ingress.insert(StringAt(in, "/ip"));
      } else if (!StringAt(in, "/hostname").empty()) {
        ingress.insert(StringAt(in, "/hostname"));
      }
    }
    std::vector<std::string> all(ingress.begin(), ingress.end());
    if (!external.empty()) {
      all.insert(all.end(), external.begin(), external.end());
      return JoinStrings(all, ",");
    }
    return all.empty() ? "<pending>" : JoinStrings(all, ",");
  }
  if (type == "ExternalName") return StringAt(spec, "/externalName");
  return "<unknown>";
}

json ServiceRow(const json& svc, Clock::WallTime now) {
  const json& spec = AnyAt(svc, "/spec");
  // A real server defaults the type to ClusterIP and port protocols to TCP.
  std::string type = StringAt(spec, "/type");
  if (type.empty()) type = "ClusterIP";
  std::string cluster_ip;
  const json& cluster_ips = ArrayValue(AnyAt(spec, "/clusterIPs"));
  cluster_ip = cluster_ips.empty() ? StringAt(spec, "/clusterIP") : StringValue(cluster_ips[0]);
  std::vector<std::string> ports;
  for (const json& p : ArrayValue(AnyAt(spec, "/ports"))) {
    std::string protocol = StringAt(p, "/protocol");
    if (protocol.empty()) protocol = "TCP";
    std::string text = std::to_string(Int(AnyAt(p, "/port")));
    if (Int(AnyAt(p, "/nodePort")) > 0) text += ":" + std::to_string(Int(AnyAt(p, "/nodePort")));
    ports.push_back(text + "/" + protocol);
  }
  return {{"cells",
           {Name(svc), type, cluster_ip.empty() ? "<none>" : cluster_ip,
            ServiceExternalIp(spec, AnyAt(svc, "/status"), type),
            ports.empty() ? "<none>" : JoinStrings(ports, ","), Age(svc, now),
            FormatLabels(AnyAt(spec, "/selector"))}}};
}

// "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...": at most three addresses.
std::string FormatEndpoints(const json& endpoints) {
  const json& subsets = ArrayValue(AnyAt(endpoints, "/subsets"));
  if (subsets.empty()) return "<none>";
  constexpr size_t kMax = 3;
  std::vector<std::string> shown;
  size_t count = 0;
  auto add = [&](std::string text) {
    ++count;
    if (shown.size() < kMax) shown.push_back(std::move(text));
  };
  for (const json& subset : subsets) {
    const json& addresses = ArrayValue(AnyAt(subset, "/addresses"));
    const json& ports = ArrayValue(AnyAt(subset, "/ports"));
    if (ports.empty()) {  // Headless services may have no ports.
      for (const json& a : addresses) add(StringAt(a, "/ip"));
      continue;
    }
    for (const json& port : ports) {
      const std::string number = std::to_string(Int(AnyAt(port, "/port")));
      for (const json& a : addresses) {
        const std::string ip = StringAt(a, "/ip");
        add(ip.find(':') == std::string::npos ? ip + ":" + number : "[" + ip + "]:" + number);
      }
    }
  }
  std::string text = JoinStrings(shown, ",");
  if (count > kMax) text += " + " + std::to_string(count - kMax) + " more...";
  return text;
}

json EndpointsRow(const json& ep, Clock::WallTime now) {
  return {{"cells", {Name(ep), FormatEndpoints(ep), Age(ep, now)}}};
}

size_t Size(const json& v) { return v.is_object() ? v.size() : 0; }

json ConfigMapRow(const json& cm, Clock::WallTime now) {
  const int64_t data =
      static_cast<int64_t>(Size(AnyAt(cm, "/data")) + Size(AnyAt(cm, "/binaryData")));
  return {{"cells", {Name(cm), data, Age(cm, now)}}};
}

json SecretRow(const json& secret, Clock::WallTime now) {
  std::string type = StringAt(secret, "/type");
  if (type.empty()) type = "Opaque";  // The server's default.
  // stringData is write-only in a real server (merged into data); count its keys the same way.
  std::set<std::string> keys;
  for (const char* field : {"data", "stringData"}) {
    const json& m = AnyField(secret, field);
    if (m.is_object()) {
      for (const auto& [key, value] : m.items()) keys.insert(key);
    }
  }
  return {{"cells", {Name(secret), type, static_cast<int64_t>(keys.size()), Age(secret, now)}}};
}

json ServiceAccountRow(const json& account, Clock::WallTime now) {
  const json& secrets = AnyAt(account, "/secrets");
  const int64_t count = secrets.is_array() ? static_cast<int64_t>(secrets.size()) : 0;
  return {{"cells", {Name(account), count, Age(account, now)}}};
}

// GetAccessModesAsString: "RWO,ROX,RWX,RWOP" in that order, each once.
std::string AccessModes(const json& modes) {
  std::set<std::string> present;
  for (const json& m : ArrayValue(modes)) present.insert(StringValue(m));
  std::vector<std::string> out;
  const std::pair<const char*, const char*> kShort[] = {{"ReadWriteOnce", "RWO"},
                                                        {"ReadOnlyMany", "ROX"},
                                                        {"ReadWriteMany", "RWX"},
                                                        {"ReadWriteOncePod", "RWOP"}};
  for (const auto& [mode, abbreviation] : kShort) {
    if (present.count(mode)) out.push_back(abbreviation);
  }
  return JoinStrings(out, ",");
}

json PvcRow(const json& pvc, Clock::WallTime now) {
  const json& spec = AnyAt(pvc, "/spec");
  const json& status = AnyAt(pvc, "/status");
  std::string phase = StringAt(status, "/phase");
  if (Has(AnyAt(pvc, "/metadata/deletionTimestamp"))) phase = "Terminating";
  const std::string volume = StringAt(spec, "/volumeName");
  std::string capacity;
  std::string modes;
  if (!volume.empty()) {
    capacity = Quantity(AnyAt(status, "/capacity/storage"));
    modes = AccessModes(AnyAt(status, "/accessModes"));
  }
  // The beta annotation wins over spec.storageClassName, as in kube.
  std::string storage_class = StringAt(spec, "/storageClassName");
  const json& annotations = AnyAt(pvc, "/metadata/annotations");
  if (annotations.is_object() && annotations.contains("volume.beta.kubernetes.io/storage-class")) {
    storage_class = StringValue(annotations.at("volume.beta.kubernetes.io/storage-class"));
  }
  const json& attributes_class = AnyAt(spec, "/volumeAttributesClassName");
  const json& volume_mode = AnyAt(spec, "/volumeMode");
  return {{"cells",
           {Name(pvc), phase, volume, capacity, modes, storage_class,
            attributes_class.is_string() ? StringValue(attributes_class) : "<unset>", Age(pvc, now),
            volume_mode.is_string() ? StringValue(volume_mode) : "<unset>"}}};
}

// The fields kube's event printer reads, from either event schema.
struct EventFields {
  json first_timestamp;
  json last_timestamp;
  json event_time;
  json series;
  int64_t count = 0;
  json regarding;  // kind, name, fieldPath.
  json source;     // component, host.
  std::string reporting_controller;
  std::string reporting_instance;
  std::string message;
};

json EventRowFrom(const json& event, const EventFields& f, Clock::WallTime now) {
  std::string first_seen = Since(f.first_timestamp, now);
  if (!ParseTime(f.first_timestamp)) first_seen = Since(f.event_time, now);
  std::string last_seen = Since(f.last_timestamp, now);
  if (!ParseTime(f.last_timestamp)) last_seen = first_seen;
  int64_t count = f.count;
  if (f.series.is_object()) {
    last_seen = Since(AnyAt(f.series, "/lastObservedTime"), now);
    count = Int(AnyAt(f.series, "/count"));
  } else if (count == 0) {
    count = 1;  // Singleton events carry no count in the new API.
  }

  const std::string kind = AsciiLower(StringAt(f.regarding, "/kind"));
  const std::string name = StringAt(f.regarding, "/name");
  const std::string target = name.empty() ? kind : kind + "/" + name;

  std::string component = StringAt(f.source, "/component");
  if (component.empty()) component = f.reporting_controller;
  std::string instance = StringAt(f.source, "/host");
  if (instance.empty()) instance = f.reporting_instance;
  const std::string source = instance.empty() ? component : component + ", " + instance;

  return {{"cells",
           {last_seen, StringAt(event, "/type"), StringAt(event, "/reason"), target,
            StringAt(f.regarding, "/fieldPath"), source, std::string(StripAsciiSpace(f.message)),
            first_seen, count, Name(event)}}};
}

json CoreEventRow(const json& event, Clock::WallTime now) {
  EventFields f;
  f.first_timestamp = AnyAt(event, "/firstTimestamp");
  f.last_timestamp = AnyAt(event, "/lastTimestamp");
  f.event_time = AnyAt(event, "/eventTime");
  f.series = AnyAt(event, "/series");
  f.count = Int(AnyAt(event, "/count"));
  f.regarding = AnyAt(event, "/involvedObject");
  f.source = AnyAt(event, "/source");
  f.reporting_controller = StringAt(event, "/reportingComponent");
  f.reporting_instance = StringAt(event, "/reportingInstance");
  f.message = StringAt(event, "/message");
  return EventRowFrom(event, f, now);
}

json EventsV1EventRow(const json& event, Clock::WallTime now) {
  EventFields f;
  f.first_timestamp = AnyAt(event, "/deprecatedFirstTimestamp");
  f.last_timestamp = AnyAt(event, "/deprecatedLastTimestamp");
  f.event_time = AnyAt(event, "/eventTime");
  f.series = AnyAt(event, "/series");
  f.count = Int(AnyAt(event, "/deprecatedCount"));
  f.regarding = AnyAt(event, "/regarding");
  f.source = AnyAt(event, "/deprecatedSource");
  f.reporting_controller = StringAt(event, "/reportingController");
  f.reporting_instance = StringAt(event, "/reportingInstance");
  f.message = StringAt(event, "/note");
  return EventRowFrom(event, f, now);
}

json LeaseRow(const json& lease, Clock::WallTime now) {
  return {{"cells", {Name(lease), StringAt(lease, "/spec/holderIdentity"), Age(lease, now)}}};
}

json CrdRow(const json& crd, Clock::WallTime /*now*/) {
  return {{"cells", {Name(crd), Rfc3339(AnyAt(crd, "/metadata/creationTimestamp"))}}};
}

// Role, Age, then (wide) the users, groups and ServiceAccounts ("ns/name") it is granted to.
json BindingRow(const json& binding, Clock::WallTime now) {
  std::string kinds[3];  // User, Group, ServiceAccount.
  for (const json& subject : binding.value("subjects", json::array())) {
    const std::string kind = StringAt(subject, "/kind");
    std::string name = StringAt(subject, "/name");
    const int i = kind == "User" ? 0 : kind == "Group" ? 1 : kind == "ServiceAccount" ? 2 : -1;
    if (i < 0) continue;
    if (i == 2) name = StringAt(subject, "/namespace") + "/" + name;
    kinds[i] += (kinds[i].empty() ? "" : ", ") + name;
  }
  const std::string role =
      StringAt(binding, "/roleRef/kind") + "/" + StringAt(binding, "/roleRef/name");
  return {{"cells", {Name(binding), role, Age(binding, now), kinds[0], kinds[1], kinds[2]}}};
}

json DefaultRow(const json& obj, Clock::WallTime now) {
  return {{"cells", {Name(obj), Age(obj, now)}}};
}

// ---- Column definitions. ----

struct Printer {
  std::vector<PrinterColumn> columns;
  json (*row)(const json& object, Clock::WallTime now);
};

PrinterColumn Col(const char* name, const char* description, int priority = 0,
                  const char* type = "string") {
  return {name, type, "", description, "", priority};
}

PrinterColumn NameCol() {
  return {"Name", "string",
          "name", "Name must be unique within a namespace. Is required when creating resources.",
          "",     0};
}

PrinterColumn AgeCol() {
  return Col("Age",
             "CreationTimestamp is a timestamp representing the server time when this object was "
             "created.");
}

const Printer& PrinterFor(const ResourceInfo& info) {
  static const std::map<std::string, Printer> kPrinters = [] {
    std::map<std::string, Printer> m;
    m["/pods"] = {
        {NameCol(),
         Col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
         Col("Status", "The aggregate status of the containers in this pod."),
         Col("Restarts",
             "The number of times the containers in this pod have been restarted and when the "
             "last container in this pod has restarted."),
         AgeCol(), Col("IP", "IP address allocated to the pod.", 1),
         Col("Node", "The node this pod is scheduled onto.", 1),
         Col("Nominated Node", "The node the scheduler nominated for this pod when preempting.", 1),
         Col("Readiness Gates", "Readiness gates that are true, of those the pod declares.", 1)},
        PodRow};
    m["/namespaces"] = {{NameCol(), Col("Status", "The status of the namespace"), AgeCol()},
                        NamespaceRow};
    m["/nodes"] = {
        {NameCol(), Col("Status", "The status of the node"), Col("Roles", "The roles of the node"),
         AgeCol(), Col("Version", "Kubelet Version reported by the node."),
         Col("Internal-IP", "The node's first InternalIP address.", 1),
         Col("External-IP", "The node's first ExternalIP address.", 1),
         Col("OS-Image", "OS Image reported by the node.", 1),
         Col("Kernel-Version", "Kernel Version reported by the node.", 1),
         Col("Container-Runtime", "Container runtime version reported by the node.", 1)},
        NodeRow};
    m["/services"] = {
        {NameCol(), Col("Type", "type determines how the Service is exposed."),
         Col("Cluster-IP", "The IP address of the service, usually assigned by the control plane."),
         Col("External-IP", "External IPs or load-balancer ingress points of the service."),
         Col("Port(s)", "The list of ports that are exposed by this service."), AgeCol(),
         Col("Selector",
             "Route service traffic to pods with label keys and values matching this "
             "selector.",
             1)},
        ServiceRow};
    m["/endpoints"] = {
        {NameCol(), Col("Endpoints", "The set of all endpoints (address:port) of the service."),
         AgeCol()},
        EndpointsRow};
    m["/configmaps"] = {
        {NameCol(), Col("Data", "The number of keys in data and binaryData."), AgeCol()},
        ConfigMapRow};
    m["/secrets"] = {{NameCol(),
                      Col("Type",
                          "Used to facilitate programmatic handling of secret "
                          "data."),
                      Col("Data", "The number of keys in data."), AgeCol()},
                     SecretRow};
    m["/serviceaccounts"] = {
        {NameCol(), Col("Secrets", "The number of secrets listed in secrets (legacy)."), AgeCol()},
        ServiceAccountRow};
    m["/persistentvolumeclaims"] = {
        {NameCol(), Col("Status", "The current phase of the claim."),
         Col("Volume", "The binding reference to the PersistentVolume backing this claim."),
         Col("Capacity", "The actual resources of the underlying volume."),
         Col("Access Modes", "The actual access modes the volume backing the claim has."),
         Col("StorageClass", "StorageClass of the pvc"),
         Col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"), AgeCol(),
         Col("VolumeMode", "What type of volume is required by the claim.", 1)},
        PvcRow};
    std::vector<PrinterColumn> event_columns = {
        Col("Last Seen",
            "The time at which the most recent occurrence of this event was recorded."),
        Col("Type", "Type of this event (Normal, Warning)."),
        Col("Reason", "A short, machine understandable string for the transition."),
        Col("Object", "The object that this event is about."),
        Col("Subobject", "The part of the object this event is about (fieldPath).", 1),
        Col("Source", "The component reporting this event.", 1),
        Col("Message", "A human-readable description of the status of this operation."),
        Col("First Seen", "The time at which the event was first recorded.", 1),
        Col("Count", "The number of times this event has occurred.", 1),
        {"Name", "string", "name", "Name must be unique within a namespace.", "", 1}};
    m["/events"] = {event_columns, CoreEventRow};
    m["events.k8s.io/events"] = {event_columns, EventsV1EventRow};
    m["coordination.k8s.io/leases"] = {
        {NameCol(), Col("Holder", "The identity of the holder of a current lease."), AgeCol()},
        LeaseRow};
    const Printer roles = {{NameCol(), Col("Created At", "When the role was created.", 0, "date")},
                           CrdRow};
    m["rbac.authorization.k8s.io/roles"] = roles;
    m["rbac.authorization.k8s.io/clusterroles"] = roles;
    const Printer bindings = {
        {NameCol(), Col("Role", "The Role or ClusterRole granted."), AgeCol(),
         Col("Users", "Users in the binding.", 1), Col("Groups", "Groups in the binding.", 1),
         Col("ServiceAccounts", "ServiceAccounts in the binding.", 1)},
        BindingRow};
    m["rbac.authorization.k8s.io/rolebindings"] = bindings;
    m["rbac.authorization.k8s.io/clusterrolebindings"] = bindings;
    for (const auto& [key, p] : WorkloadPrinters()) m[key] = {p.columns, p.row};
    m["apiextensions.k8s.io/customresourcedefinitions"] = {
        {NameCol(),
         Col("Created At",
             "CreationTimestamp is a timestamp representing the server time when this object was "
             "created.",
             0, "date")},
        CrdRow};
    return m;
  }();
  static const Printer kDefault = {{NameCol(), AgeCol()}, DefaultRow};
  if (!info.crd_name.empty()) return kDefault;
  auto it = kPrinters.find(info.group + "/" + info.plural);
  return it == kPrinters.end() ? kDefault : it->second;
}

}  // namespace

std::vector<PrinterColumn> BuiltinPrinterColumns(const ResourceInfo& info) {
  return PrinterFor(info).columns;
}

Result<json> BuildBuiltinTable(const ResourceInfo& info, const std::vector<json>& objects,
                               Clock::WallTime now, std::string_view resource_version,
                               IncludeObject include) {
  const Printer& printer = PrinterFor(info);
  json definitions = json::array();
  for (const PrinterColumn& c : printer.columns) {
    definitions.push_back({{"name", c.name},
                           {"type", c.type},
                           {"format", c.format},
                           {"description", c.description},
                           {"priority", c.priority}});
  }
  json rows = json::array();
  for (size_t i = 0; i < objects.size(); ++i) {
    const json& object = objects[i];
    if (!object.is_object()) {
      return Status::InvalidArgument("table: item " + std::to_string(i) + " of " + info.plural +
                                     " is not a JSON object");
    }
    json row = printer.row(object, now);
    if (include != IncludeObject::kNone) row["object"] = TableRowObject(object, include);
    rows.push_back(std::move(row));
  }
  return MakeTable(std::move(definitions), std::move(rows), resource_version);
}

}  // namespace sluice::apiserver
