#include "localcluster/apiserver/table.h"

#include <cstdio>
#include <ctime>

#include "localcluster/apiserver/jsonpath.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// Seconds since the epoch of an RFC 3339 UTC timestamp ("2026-11-22T10:00:00Z"); -1 if not one.
int64_t ParseTimestamp(const std::string& s) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return -1;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm));
}

// kube-apiserver's cell: only the first value a path selects counts, whatever the type, so a
// `[*]` path shows one item of a list (its table convertor takes results[0][0]).
json Cell(const PrinterColumn& column, const std::vector<json>& values, Clock::WallTime now) {
  if (values.empty() || values[0].is_null()) return nullptr;
  const json& v = values[0];
  if (column.type == "integer") {
    return v.is_number() ? json(v.get<int64_t>()) : json(nullptr);
  }
  if (column.type == "number") return v.is_number() ? v : json(nullptr);
  if (column.type == "boolean") return v.is_boolean() ? v : json(nullptr);
  if (column.type == "date") {
    if (!v.is_string()) return nullptr;
    const int64_t t = ParseTimestamp(v.get<std::string>());
    if (t < 0) return nullptr;
    const int64_t now_s =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    return HumanDuration(std::chrono::seconds(now_s - t));
  }
  // Strings: the value as text; a list or an object as compact JSON, as kube's JSONPath printer
  // writes them.
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::vector<PrinterColumn> PrinterColumnsFor(const json& crd, std::string_view version) {
  std::vector<PrinterColumn> columns = {
      {"Name", "string", "name", "Name must be unique within a namespace.", "", 0}};
  const json* declared = nullptr;
  const json::json_pointer versions_path("/spec/versions");
  if (crd.contains(versions_path) && crd.at(versions_path).is_array()) {
    for (const json& v : crd.at(versions_path)) {
      if (v.value("name", "") == version && v.contains("additionalPrinterColumns")) {
        declared = &v.at("additionalPrinterColumns");
      }
    }
  }
  if (declared == nullptr || declared->empty()) {
    columns.push_back({"Age", "date", "", "Time since the object was created.",
                       ".metadata.creationTimestamp", 0});
    return columns;
  }
  for (const json& c : *declared) {
    columns.push_back({c.value("name", ""), c.value("type", "string"), c.value("format", ""),
                       c.value("description", ""), c.value("jsonPath", ""),
                       c.value("priority", 0)});
  }
  return columns;
}

std::string HumanDuration(std::chrono::seconds d) {
  const int64_t s = d.count();
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 60 * 2) return std::to_string(s) + "s";
  const int64_t minutes = s / 60;
  if (minutes < 10) {
    const int64_t rest = s % 60;
    return std::to_string(minutes) + "m" + (rest == 0 ? "" : std::to_string(rest) + "s");
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    const int64_t rest = minutes % 60;
    return std::to_string(hours) + "h" + (rest == 0 ? "" : std::to_string(rest) + "m");
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const int64_t rest = hours % 24;
    return std::to_string(hours / 24) + "d" + (rest == 0 ? "" : std::to_string(rest) + "h");
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t days = (hours / 24) % 365;
    return std::to_string(hours / 24 / 365) + "y" + (days == 0 ? "" : std::to_string(days) + "d");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

Result<json> BuildTable(const std::vector<PrinterColumn>& columns, const std::vector<json>& objects,
                        Clock::WallTime now, std::string_view resource_version,
                        IncludeObject include) {
  json definitions = json::array();
  for (const PrinterColumn& c : columns) {
    definitions.push_back({{"name", c.name},
                           {"type", c.type},
                           {"format", c.format},
                           {"description", c.description},
                           {"priority", c.priority}});
  }
  json rows = json::array();
  for (const json& object : objects) {
    json cells = json::array();
    for (const PrinterColumn& c : columns) {
      if (c.json_path.empty()) {
        cells.push_back(object.value("/metadata/name"_json_pointer, std::string()));
        continue;
      }
      Result<std::vector<json>> values = EvalJsonPath(c.json_path, object);
      if (!values.ok()) return values.status().WithContext("printer column \"" + c.name + "\"");
      cells.push_back(Cell(c, *values, now));
    }
    json row = {{"cells", std::move(cells)}};
    if (include != IncludeObject::kNone) row["object"] = TableRowObject(object, include);
    rows.push_back(std::move(row));
  }
  return MakeTable(std::move(definitions), std::move(rows), resource_version);
}

json TableRowObject(const json& object, IncludeObject include) {
  switch (include) {
    case IncludeObject::kObject:
      return object;
    case IncludeObject::kMetadata:
      return {{"apiVersion", "meta.k8s.io/v1"},
              {"kind", "PartialObjectMetadata"},
              {"metadata", object.value("metadata", json::object())}};
    case IncludeObject::kNone:
      break;
  }
  return nullptr;
}

json MakeTable(json column_definitions, json rows, std::string_view resource_version) {
  return json{{"kind", "Table"},
              {"apiVersion", "meta.k8s.io/v1"},
              {"metadata", {{"resourceVersion", std::string(resource_version)}}},
              {"columnDefinitions", std::move(column_definitions)},
              {"rows", std::move(rows)}};
}

}  // namespace sluice::apiserver
