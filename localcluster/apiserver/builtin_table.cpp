#include "localcluster/apiserver/builtin_table.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "localcluster/apiserver/workload_table.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// ---- JSON access: absent or mistyped fields read as empty, as Go's zero values do. ----

const json& Null() {
  static const json kNull;
  return kNull;
}

const json& EmptyArray() {
  static const json kEmpty = json::array();
  return kEmpty;
}

// The value at obj.k1.k2...; null when any step is missing or not an object.
const json& Get(const json& obj, std::initializer_list<const char*> keys) {
  const json* cur = &obj;
  for (const char* key : keys) {
    if (!cur->is_object()) return Null();
    auto it = cur->find(key);
    if (it == cur->end()) return Null();
    cur = &*it;
  }
  return *cur;
}

std::string Str(const json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

int64_t Int(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) return static_cast<int64_t>(v.get<double>());
  return 0;
}

const json& Items(const json& v) { return v.is_array() ? v : EmptyArray(); }

// Present and not null (a Go pointer or struct field that is set).
bool Has(const json& v) { return !v.is_null(); }

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string TrimSpace(const std::string& s) {
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  return s.substr(begin, end - begin);
}

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
  return Since(Get(obj, {"metadata", "creationTimestamp"}), now);
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

std::string Name(const json& obj) { return Str(Get(obj, {"metadata", "name"})); }

bool ConditionTrue(const json& conditions, std::string_view type) {
  for (const json& c : Items(conditions)) {
    if (Str(Get(c, {"type"})) == type) return Str(Get(c, {"status"})) == "True";
  }
  return false;
}

// labels.FormatLabels: "a=1,b=2" (sorted), "<none>" when empty.
std::string FormatLabels(const json& labels) {
  std::vector<std::string> parts;
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) parts.push_back(key + "=" + Str(value));
  }
  return parts.empty() ? "<none>" : Join(parts, ",");
}

std::string Quantity(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  return "0";  // A zero resource.Quantity prints as "0".
}

json PodRow(const json& pod, Clock::WallTime now) {
  const json& spec = Get(pod, {"spec"});
  const json& status = Get(pod, {"status"});
  const std::string phase = Str(Get(status, {"phase"}));
  std::string reason = phase;
  if (!Str(Get(status, {"reason"})).empty()) reason = Str(Get(status, {"reason"}));
  for (const json& c : Items(Get(status, {"conditions"}))) {
    if (Str(Get(c, {"type"})) == "PodScheduled" && Str(Get(c, {"reason"})) == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }

  int64_t total = static_cast<int64_t>(Items(Get(spec, {"containers"})).size());
  int64_t ready = 0;
  // Init containers with restartPolicy Always are sidecars: they count as pod containers.
  std::set<std::string> sidecars;
  const json& init_specs = Items(Get(spec, {"initContainers"}));
  for (const json& c : init_specs) {
    if (Str(Get(c, {"restartPolicy"})) == "Always") {
      sidecars.insert(Str(Get(c, {"name"})));
      ++total;
    }
  }

  int64_t restarts = 0;
  int64_t sidecar_restarts = 0;
  std::optional<Clock::WallTime> last_restart;
  std::optional<Clock::WallTime> last_sidecar_restart;
  bool initializing = false;
  const json& init_statuses = Items(Get(status, {"initContainerStatuses"}));
  for (size_t i = 0; i < init_statuses.size(); ++i) {
    const json& c = init_statuses[i];
    const bool sidecar = sidecars.count(Str(Get(c, {"name"}))) > 0;
    const json& finished = Get(c, {"lastState", "terminated", "finishedAt"});
    restarts += Int(Get(c, {"restartCount"}));
    KeepLatest(last_restart, finished);
    if (sidecar) {
      sidecar_restarts += Int(Get(c, {"restartCount"}));
      KeepLatest(last_sidecar_restart, finished);
    }
    const json& terminated = Get(c, {"state", "terminated"});
    const json& waiting = Get(c, {"state", "waiting"});
    if (Has(terminated) && Int(Get(terminated, {"exitCode"})) == 0) continue;
    if (sidecar && Get(c, {"started"}) == true) {
      if (Get(c, {"ready"}) == true) ++ready;
      continue;
    }
    if (Has(terminated)) {
      const std::string why = Str(Get(terminated, {"reason"}));
      if (!why.empty()) {
        reason = "Init:" + why;
      } else if (Int(Get(terminated, {"signal"})) != 0) {
        reason = "Init:Signal:" + std::to_string(Int(Get(terminated, {"signal"})));
      } else {
        reason = "Init:ExitCode:" + std::to_string(Int(Get(terminated, {"exitCode"})));
      }
    } else if (Has(waiting) && !Str(Get(waiting, {"reason"})).empty() &&
               Str(Get(waiting, {"reason"})) != "PodInitializing") {
      reason = "Init:" + Str(Get(waiting, {"reason"}));
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(init_specs.size());
    }
    initializing = true;
    break;
  }

  if (!initializing || ConditionTrue(Get(status, {"conditions"}), "Initialized")) {
    restarts = sidecar_restarts;
    last_restart = last_sidecar_restart;
    bool has_running = false;
    const json& statuses = Items(Get(status, {"containerStatuses"}));
    for (size_t i = statuses.size(); i-- > 0;) {
      const json& c = statuses[i];
      restarts += Int(Get(c, {"restartCount"}));
      KeepLatest(last_restart, Get(c, {"lastState", "terminated", "finishedAt"}));
      const json& waiting = Get(c, {"state", "waiting"});
      const json& terminated = Get(c, {"state", "terminated"});
      if (Has(waiting) && !Str(Get(waiting, {"reason"})).empty()) {
        reason = Str(Get(waiting, {"reason"}));
      } else if (Has(terminated) && !Str(Get(terminated, {"reason"})).empty()) {
        reason = Str(Get(terminated, {"reason"}));
      } else if (Has(terminated)) {
        const int64_t signal = Int(Get(terminated, {"signal"}));
        reason = signal != 0 ? "Signal:" + std::to_string(signal)
                             : "ExitCode:" + std::to_string(Int(Get(terminated, {"exitCode"})));
      } else if (Get(c, {"ready"}) == true && Has(Get(c, {"state", "running"}))) {
        has_running = true;
        ++ready;
      }
    }
    // A pod whose last container completed but another still runs is not "Completed".
    if (reason == "Completed" && has_running) {
      reason = ConditionTrue(Get(status, {"conditions"}), "Ready") ? "Running" : "NotReady";
    }
  }

  if (Has(Get(pod, {"metadata", "deletionTimestamp"}))) {
    if (Str(Get(status, {"reason"})) == "NodeLost") {
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
  const json& ips = Items(Get(status, {"podIPs"}));
  if (!ips.empty()) {
    ip = Str(Get(ips[0], {"ip"}));
  } else {
    ip = Str(Get(status, {"podIP"}));  // v1 objects written before podIPs existed.
  }
  std::string node = Str(Get(spec, {"nodeName"}));
  std::string nominated = Str(Get(status, {"nominatedNodeName"}));
  std::string gates = "<none>";
  const json& gate_specs = Items(Get(spec, {"readinessGates"}));
  if (!gate_specs.empty()) {
    int64_t passing = 0;
    for (const json& gate : gate_specs) {
      const std::string type = Str(Get(gate, {"conditionType"}));
      for (const json& c : Items(Get(status, {"conditions"}))) {
        if (Str(Get(c, {"type"})) == type) {
          if (Str(Get(c, {"status"})) == "True") ++passing;
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
  std::string phase = Str(Get(ns, {"status", "phase"}));
  // A real server sets the phase on create; objects written without one read as it would.
  if (phase.empty()) {
    phase = Has(Get(ns, {"metadata", "deletionTimestamp"})) ? "Terminating" : "Active";
  }
  return {{"cells", {Name(ns), phase, Age(ns, now)}}};
}

std::string NodeAddress(const json& node, std::string_view type) {
  for (const json& a : Items(Get(node, {"status", "addresses"}))) {
    if (Str(Get(a, {"type"})) == type) return Str(Get(a, {"address"}));
  }
  return "<none>";
}

json NodeRow(const json& node, Clock::WallTime now) {
  std::string status = "Unknown";
  for (const json& c : Items(Get(node, {"status", "conditions"}))) {
    if (Str(Get(c, {"type"})) == "Ready") {
      status = Str(Get(c, {"status"})) == "True" ? "Ready" : "NotReady";
    }
  }
  if (Get(node, {"spec", "unschedulable"}) == true) status += ",SchedulingDisabled";

  std::set<std::string> roles;
  const json& labels = Get(node, {"metadata", "labels"});
  if (labels.is_object()) {
    static constexpr std::string_view kRolePrefix = "node-role.kubernetes.io/";
    for (const auto& [key, value] : labels.items()) {
      if (key.size() > kRolePrefix.size() && key.compare(0, kRolePrefix.size(), kRolePrefix) == 0) {
        roles.insert(key.substr(kRolePrefix.size()));
      } else if (key == "kubernetes.io/role" && !Str(value).empty()) {
        roles.insert(Str(value));
      }
    }
  }
  const std::string role_text = Join(std::vector<std::string>(roles.begin(), roles.end()), ",");

  const json& info = Get(node, {"status", "nodeInfo"});
  auto known = [&](const char* field) {
    std::string v = Str(Get(info, {field}));
    return v.empty() ? std::string("<unknown>") : v;
  };
  return {{"cells",
           {Name(node), status, role_text.empty() ? "<none>" : role_text, Age(node, now),
            Str(Get(info, {"kubeletVersion"})), NodeAddress(node, "InternalIP"),
            NodeAddress(node, "ExternalIP"), known("osImage"), known("kernelVersion"),
            known("containerRuntimeVersion")}}};
}

std::string ServiceExternalIp(const json& spec, const json& status, const std::string& type) {
  std::vector<std::string> external;
  for (const json& ip : Items(Get(spec, {"externalIPs"}))) external.push_back(Str(ip));
  if (type == "ClusterIP" || type == "NodePort") {
    return external.empty() ? "<none>" : Join(external, ",");
  }
  if (type == "LoadBalancer") {
    std::set<std::string> ingress;  // Sorted and de-duplicated, as kube's string set.
    for (const json& in : Items(Get(status, {"loadBalancer", "ingress"}))) {
      if (!Str(Get(in, {"ip"})).empty()) {
        ingress.insert(Str(Get(in, {"ip"})));
      } else if (!Str(Get(in, {"hostname"})).empty()) {
        ingress.insert(Str(Get(in, {"hostname"})));
      }
    }
    std::vector<std::string> all(ingress.begin(), ingress.end());
    if (!external.empty()) {
      all.insert(all.end(), external.begin(), external.end());
      return Join(all, ",");
    }
    return all.empty() ? "<pending>" : Join(all, ",");
  }
  if (type == "ExternalName") return Str(Get(spec, {"externalName"}));
  return "<unknown>";
}

json ServiceRow(const json& svc, Clock::WallTime now) {
  const json& spec = Get(svc, {"spec"});
  // A real server defaults the type to ClusterIP and port protocols to TCP.
  std::string type = Str(Get(spec, {"type"}));
  if (type.empty()) type = "ClusterIP";
  std::string cluster_ip;
  const json& cluster_ips = Items(Get(spec, {"clusterIPs"}));
  cluster_ip = cluster_ips.empty() ? Str(Get(spec, {"clusterIP"})) : Str(cluster_ips[0]);
  std::vector<std::string> ports;
  for (const json& p : Items(Get(spec, {"ports"}))) {
    std::string protocol = Str(Get(p, {"protocol"}));
    if (protocol.empty()) protocol = "TCP";
    std::string text = std::to_string(Int(Get(p, {"port"})));
    if (Int(Get(p, {"nodePort"})) > 0) text += ":" + std::to_string(Int(Get(p, {"nodePort"})));
    ports.push_back(text + "/" + protocol);
  }
  return {{"cells",
           {Name(svc), type, cluster_ip.empty() ? "<none>" : cluster_ip,
            ServiceExternalIp(spec, Get(svc, {"status"}), type),
            ports.empty() ? "<none>" : Join(ports, ","), Age(svc, now),
            FormatLabels(Get(spec, {"selector"}))}}};
}

// "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...": at most three addresses.
std::string FormatEndpoints(const json& endpoints) {
  const json& subsets = Items(Get(endpoints, {"subsets"}));
  if (subsets.empty()) return "<none>";
  constexpr size_t kMax = 3;
  std::vector<std::string> shown;
  size_t count = 0;
  auto add = [&](std::string text) {
    ++count;
    if (shown.size() < kMax) shown.push_back(std::move(text));
  };
  for (const json& subset : subsets) {
    const json& addresses = Items(Get(subset, {"addresses"}));
    const json& ports = Items(Get(subset, {"ports"}));
    if (ports.empty()) {  // Headless services may have no ports.
      for (const json& a : addresses) add(Str(Get(a, {"ip"})));
      continue;
    }
    for (const json& port : ports) {
      const std::string number = std::to_string(Int(Get(port, {"port"})));
      for (const json& a : addresses) {
        const std::string ip = Str(Get(a, {"ip"}));
        add(ip.find(':') == std::string::npos ? ip + ":" + number : "[" + ip + "]:" + number);
      }
    }
  }
  std::string text = Join(shown, ",");
  if (count > kMax) text += " + " + std::to_string(count - kMax) + " more...";
  return text;
}

json EndpointsRow(const json& ep, Clock::WallTime now) {
  return {{"cells", {Name(ep), FormatEndpoints(ep), Age(ep, now)}}};
}

size_t Size(const json& v) { return v.is_object() ? v.size() : 0; }

json ConfigMapRow(const json& cm, Clock::WallTime now) {
  const int64_t data =
      static_cast<int64_t>(Size(Get(cm, {"data"})) + Size(Get(cm, {"binaryData"})));
  return {{"cells", {Name(cm), data, Age(cm, now)}}};
}

json SecretRow(const json& secret, Clock::WallTime now) {
  std::string type = Str(Get(secret, {"type"}));
  if (type.empty()) type = "Opaque";  // The server's default.
  // stringData is write-only in a real server (merged into data); count its keys the same way.
  std::set<std::string> keys;
  for (const char* field : {"data", "stringData"}) {
    const json& m = Get(secret, {field});
    if (m.is_object()) {
      for (const auto& [key, value] : m.items()) keys.insert(key);
    }
  }
  return {{"cells", {Name(secret), type, static_cast<int64_t>(keys.size()), Age(secret, now)}}};
}

json ServiceAccountRow(const json& account, Clock::WallTime now) {
  const json& secrets = Get(account, {"secrets"});
  const int64_t count = secrets.is_array() ? static_cast<int64_t>(secrets.size()) : 0;
  return {{"cells", {Name(account), count, Age(account, now)}}};
}

// GetAccessModesAsString: "RWO,ROX,RWX,RWOP" in that order, each once.
std::string AccessModes(const json& modes) {
  std::set<std::string> present;
  for (const json& m : Items(modes)) present.insert(Str(m));
  std::vector<std::string> out;
  const std::pair<const char*, const char*> kShort[] = {{"ReadWriteOnce", "RWO"},
                                                        {"ReadOnlyMany", "ROX"},
                                                        {"ReadWriteMany", "RWX"},
                                                        {"ReadWriteOncePod", "RWOP"}};
  for (const auto& [mode, abbreviation] : kShort) {
    if (present.count(mode)) out.push_back(abbreviation);
  }
  return Join(out, ",");
}

json PvcRow(const json& pvc, Clock::WallTime now) {
  const json& spec = Get(pvc, {"spec"});
  const json& status = Get(pvc, {"status"});
  std::string phase = Str(Get(status, {"phase"}));
  if (Has(Get(pvc, {"metadata", "deletionTimestamp"}))) phase = "Terminating";
  const std::string volume = Str(Get(spec, {"volumeName"}));
  std::string capacity;
  std::string modes;
  if (!volume.empty()) {
    capacity = Quantity(Get(status, {"capacity", "storage"}));
    modes = AccessModes(Get(status, {"accessModes"}));
  }
  // The beta annotation wins over spec.storageClassName, as in kube.
  std::string storage_class = Str(Get(spec, {"storageClassName"}));
  const json& annotations = Get(pvc, {"metadata", "annotations"});
  if (annotations.is_object() && annotations.contains("volume.beta.kubernetes.io/storage-class")) {
    storage_class = Str(annotations.at("volume.beta.kubernetes.io/storage-class"));
  }
  const json& attributes_class = Get(spec, {"volumeAttributesClassName"});
  const json& volume_mode = Get(spec, {"volumeMode"});
  return {{"cells",
           {Name(pvc), phase, volume, capacity, modes, storage_class,
            attributes_class.is_string() ? Str(attributes_class) : "<unset>", Age(pvc, now),
            volume_mode.is_string() ? Str(volume_mode) : "<unset>"}}};
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
    last_seen = Since(Get(f.series, {"lastObservedTime"}), now);
    count = Int(Get(f.series, {"count"}));
  } else if (count == 0) {
    count = 1;  // Singleton events carry no count in the new API.
  }

  const std::string kind = Lower(Str(Get(f.regarding, {"kind"})));
  const std::string name = Str(Get(f.regarding, {"name"}));
  const std::string target = name.empty() ? kind : kind + "/" + name;

  std::string component = Str(Get(f.source, {"component"}));
  if (component.empty()) component = f.reporting_controller;
  std::string instance = Str(Get(f.source, {"host"}));
  if (instance.empty()) instance = f.reporting_instance;
  const std::string source = instance.empty() ? component : component + ", " + instance;

  return {{"cells",
           {last_seen, Str(Get(event, {"type"})), Str(Get(event, {"reason"})), target,
            Str(Get(f.regarding, {"fieldPath"})), source, TrimSpace(f.message), first_seen, count,
            Name(event)}}};
}

json CoreEventRow(const json& event, Clock::WallTime now) {
  EventFields f;
  f.first_timestamp = Get(event, {"firstTimestamp"});
  f.last_timestamp = Get(event, {"lastTimestamp"});
  f.event_time = Get(event, {"eventTime"});
  f.series = Get(event, {"series"});
  f.count = Int(Get(event, {"count"}));
  f.regarding = Get(event, {"involvedObject"});
  f.source = Get(event, {"source"});
  f.reporting_controller = Str(Get(event, {"reportingComponent"}));
  f.reporting_instance = Str(Get(event, {"reportingInstance"}));
  f.message = Str(Get(event, {"message"}));
  return EventRowFrom(event, f, now);
}

json EventsV1EventRow(const json& event, Clock::WallTime now) {
  EventFields f;
  f.first_timestamp = Get(event, {"deprecatedFirstTimestamp"});
  f.last_timestamp = Get(event, {"deprecatedLastTimestamp"});
  f.event_time = Get(event, {"eventTime"});
  f.series = Get(event, {"series"});
  f.count = Int(Get(event, {"deprecatedCount"}));
  f.regarding = Get(event, {"regarding"});
  f.source = Get(event, {"deprecatedSource"});
  f.reporting_controller = Str(Get(event, {"reportingController"}));
  f.reporting_instance = Str(Get(event, {"reportingInstance"}));
  f.message = Str(Get(event, {"note"}));
  return EventRowFrom(event, f, now);
}

json LeaseRow(const json& lease, Clock::WallTime now) {
  return {{"cells", {Name(lease), Str(Get(lease, {"spec", "holderIdentity"})), Age(lease, now)}}};
}

json CrdRow(const json& crd, Clock::WallTime /*now*/) {
  return {{"cells", {Name(crd), Rfc3339(Get(crd, {"metadata", "creationTimestamp"}))}}};
}

// Role, Age, then (wide) the users, groups and ServiceAccounts ("ns/name") it is granted to.
json BindingRow(const json& binding, Clock::WallTime now) {
  std::string kinds[3];  // User, Group, ServiceAccount.
  for (const json& subject : binding.value("subjects", json::array())) {
    const std::string kind = Str(Get(subject, {"kind"}));
    std::string name = Str(Get(subject, {"name"}));
    const int i = kind == "User" ? 0 : kind == "Group" ? 1 : kind == "ServiceAccount" ? 2 : -1;
    if (i < 0) continue;
    if (i == 2) name = Str(Get(subject, {"namespace"})) + "/" + name;
    kinds[i] += (kinds[i].empty() ? "" : ", ") + name;
  }
  const std::string role =
      Str(Get(binding, {"roleRef", "kind"})) + "/" + Str(Get(binding, {"roleRef", "name"}));
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
