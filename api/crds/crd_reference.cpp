#include "api/crds/crd_reference.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

namespace sluice::api {
namespace {

constexpr std::array<std::string_view, 4> kKindOrder = {"Policy", "RolloutPool", "Dataflow",
                                                        "TrainerJob"};

// Checks that the operator makes across objects, which CEL (it sees one object) cannot.
constexpr std::string_view kCrossObjectChecks =
    "## Checks across objects\n"
    "\n"
    "CEL rules see only the object they belong to. The operator checks these relations between\n"
    "objects and reports a violation as condition `Ready=False` with reason `InvalidReference`\n"
    "on the object that refers to the other one:\n"
    "\n"
    "- Every `policyRef`, `dataflowRef`, `spec.policies[]` and `spec.workflow.roles[].policy`\n"
    "  names an existing object of the right kind in the same namespace.\n"
    "- A TrainerJob whose `spec.algorithm.type` is `grpo`, `dapo`, `gspo` or `m2po` "
    "(group-relative\n"
    "  advantages) needs `spec.sampling.groupSize >= 2` in its Dataflow.\n"
    "- A TrainerJob's Policy is one of the Policies in its Dataflow's `spec.workflow.roles`, and\n"
    "  at most one TrainerJob that is not finished trains each Policy of a Dataflow.\n"
    "- A RolloutPool hosts every Policy of its Dataflow's roles (`spec.policies` covers them).\n"
    "- `spec.model.source.builtin.hiddenSize` is a multiple of `heads`, and `heads` a multiple of\n"
    "  `kvHeads` (checked on the Policy itself; CEL lacks the modulo operator in the subset the\n"
    "  local API server implements).\n"
    "- When `spec.autoscaling.maxReplicas` exceeds the sum of "
    "`spec.placement.regions[].maxReplicas`\n"
    "  (with every region limited), the pool reports `ScalingLimited=True` rather than rejecting\n"
    "  the object.\n";

std::string Cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    if (c == '|') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string Code(std::string_view text) { return "`" + Cell(text) + "`"; }

bool Has(const YAML::Node& node, const char* key) {
  return node.IsMap() && node[key].IsDefined() && !node[key].IsNull();
}

std::string ScalarOf(const YAML::Node& node, const char* key) {
  if (!Has(node, key) || !node[key].IsScalar()) return {};
  return node[key].Scalar();
}

bool IsTrue(const YAML::Node& node, const char* key) { return ScalarOf(node, key) == "true"; }

// A default or other value in flow style: 1, "x", [0.9, 0.999], {}.
std::string Flow(const YAML::Node& value) {
  if (value.IsScalar()) return value.Scalar();
  if (value.IsSequence()) {
    std::string out = "[";
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out += ", ";
      out += Flow(value[i]);
    }
    return out + "]";
  }
  if (value.IsMap()) {
    std::string out = "{";
    bool first = true;
    for (const auto& kv : value) {
      if (!first) out += ", ";
      first = false;
      out += kv.first.Scalar() + ": " + Flow(kv.second);
    }
    return out + "}";
  }
  return "null";
}

bool IsIntOrString(const YAML::Node& schema) {
  return IsTrue(schema, "x-kubernetes-int-or-string");
}

bool HasProperties(const YAML::Node& schema) {
  return Has(schema, "properties") && schema["properties"].IsMap();
}

std::string TypeName(const YAML::Node& schema) {
  if (IsIntOrString(schema)) return "int-or-string";
  const std::string type = ScalarOf(schema, "type");
  const std::string format = ScalarOf(schema, "format");
  if (type == "array") {
    return Has(schema, "items") ? "[]" + TypeName(schema["items"]) : "[]";
  }
  if (type == "object") {
    if (Has(schema, "additionalProperties") && schema["additionalProperties"].IsMap()) {
      return "map[string]" + TypeName(schema["additionalProperties"]);
    }
    if (!HasProperties(schema) && IsTrue(schema, "x-kubernetes-preserve-unknown-fields")) {
      return "object (free-form)";
    }
    return "object";
  }
  if (type == "integer" && !format.empty()) return "integer (" + format + ")";
  if (type == "string" && !format.empty()) return "string (" + format + ")";
  return type;
}

// Value constraints of one node (not the CEL rules), without "required".
std::vector<std::string> Constraints(const YAML::Node& schema) {
  std::vector<std::string> parts;
  if (Has(schema, "enum") && schema["enum"].IsSequence()) {
    std::string values;
    for (std::size_t i = 0; i < schema["enum"].size(); ++i) {
      if (i > 0) values += ", ";
      values += Code(Flow(schema["enum"][i]));
    }
    parts.push_back("one of " + values);
  }
  if (Has(schema, "minimum")) {
    parts.push_back((IsTrue(schema, "exclusiveMinimum") ? "> " : ">= ") +
                    ScalarOf(schema, "minimum"));
  }
  if (Has(schema, "maximum")) {
    parts.push_back((IsTrue(schema, "exclusiveMaximum") ? "< " : "<= ") +
                    ScalarOf(schema, "maximum"));
  }
  if (Has(schema, "minLength")) parts.push_back("length >= " + ScalarOf(schema, "minLength"));
  if (Has(schema, "maxLength")) parts.push_back("length <= " + ScalarOf(schema, "maxLength"));
  if (Has(schema, "pattern")) parts.push_back("pattern " + Code(ScalarOf(schema, "pattern")));
  if (Has(schema, "minItems")) parts.push_back("items >= " + ScalarOf(schema, "minItems"));
  if (Has(schema, "maxItems")) parts.push_back("items <= " + ScalarOf(schema, "maxItems"));
  const std::string list_type = ScalarOf(schema, "x-kubernetes-list-type");
  if (list_type == "set") parts.push_back("unique items");
  if (list_type == "map" && Has(schema, "x-kubernetes-list-map-keys")) {
    std::string keys;
    const YAML::Node key_list = schema["x-kubernetes-list-map-keys"];
    for (std::size_t i = 0; i < key_list.size(); ++i) {
      if (i > 0) keys += ", ";
      keys += Code(key_list[i].Scalar());
    }
    parts.push_back("keyed by " + keys);
  }
  if (Has(schema, "x-kubernetes-validations")) {
    const YAML::Node rules = schema["x-kubernetes-validations"];
    bool immutable = false;
    for (const auto& rule : rules) {
      if (ScalarOf(rule, "rule") == "self == oldSelf") immutable = true;
    }
    if (immutable) parts.push_back("immutable");
    const std::size_t others = rules.size() - (immutable ? 1 : 0);
    if (others > 0) {
      parts.push_back(std::to_string(others) + (others == 1 ? " CEL rule" : " CEL rules"));
    }
  }
  return parts;
}

std::string Validation(const YAML::Node& schema, bool required) {
  std::vector<std::string> parts;
  if (required) parts.push_back("required");
  for (auto& part : Constraints(schema)) parts.push_back(std::move(part));
  if (ScalarOf(schema, "type") == "array" && Has(schema, "items") &&
      !HasProperties(schema["items"])) {
    for (auto& part : Constraints(schema["items"])) parts.push_back("each " + std::move(part));
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += "; ";
    out += parts[i];
  }
  return out;
}

struct RuleRow {
  std::string path;
  std::string rule;
  std::string message;
  std::string field_path;
};

// Collects the CEL rules of `schema` and everything below it, pre-order.
void CollectRules(const YAML::Node& schema, const std::string& path, std::vector<RuleRow>& out) {
  if (!schema.IsMap()) return;
  if (Has(schema, "x-kubernetes-validations")) {
    for (const auto& rule : schema["x-kubernetes-validations"]) {
      out.push_back(
          {path, ScalarOf(rule, "rule"), ScalarOf(rule, "message"), ScalarOf(rule, "fieldPath")});
    }
  }
  if (HasProperties(schema)) {
    for (const auto& kv : schema["properties"]) {
      const std::string name = kv.first.Scalar();
      CollectRules(kv.second, path.empty() ? name : path + "." + name, out);
    }
  }
  if (Has(schema, "items")) CollectRules(schema["items"], path + "[]", out);
}

bool IsRequired(const YAML::Node& schema, const std::string& name) {
  if (!Has(schema, "required")) return false;
  for (const auto& item : schema["required"]) {
    if (item.Scalar() == name) return true;
  }
  return false;
}

// One `### path` section for an object with properties, then its object children.
void RenderObject(const YAML::Node& schema, const std::string& path, std::string& out) {
  out += "### " + path + "\n\n";
  const std::string description = ScalarOf(schema, "description");
  if (!description.empty()) out += Cell(description) + "\n\n";
  out += "| Field | Type | Default | Validation | Description |\n";
  out += "|---|---|---|---|---|\n";
  std::vector<std::pair<std::string, YAML::Node>> children;
  for (const auto& kv : schema["properties"]) {
    const std::string name = kv.first.Scalar();
    const YAML::Node field = kv.second;
    const std::string default_value = Has(field, "default") ? Code(Flow(field["default"])) : "";
    out += "| " + Code(name) + " | " + Cell(TypeName(field)) + " | " + default_value + " | " +
           Validation(field, IsRequired(schema, name)) + " | " +
           Cell(ScalarOf(field, "description")) + " |\n";
    if (HasProperties(field)) {
      children.emplace_back(path + "." + name, field);
    } else if (ScalarOf(field, "type") == "array" && Has(field, "items") &&
               HasProperties(field["items"])) {
      children.emplace_back(path + "." + name + "[]", field["items"]);
    }
  }
  out += "\n";
  for (const auto& [child_path, child] : children) RenderObject(child, child_path, out);
}

Status RequireMap(const YAML::Node& node, const std::string& what, const std::string& crd) {
  if (node.IsMap()) return Status::Ok();
  return Status::InvalidArgument("CRD " + crd + ": " + what + " is missing or not a map", what);
}

std::string JoinScalars(const YAML::Node& list) {
  std::string out;
  if (!list.IsSequence()) return out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ", ";
    out += Code(list[i].Scalar());
  }
  return out;
}

Result<std::string> RenderKind(const YAML::Node& crd) {
  const std::string crd_name = Has(crd, "metadata") ? ScalarOf(crd["metadata"], "name") : "";
  const YAML::Node spec = crd["spec"];
  SLUICE_RETURN_IF_ERROR(RequireMap(spec, "spec", crd_name));
  const YAML::Node names = spec["names"];
  SLUICE_RETURN_IF_ERROR(RequireMap(names, "spec.names", crd_name));
  const std::string kind = ScalarOf(names, "kind");
  if (kind.empty()) {
    return Status::InvalidArgument("CRD " + crd_name + ": spec.names.kind is missing",
                                   "spec.names.kind");
  }
  if (!Has(spec, "versions") || !spec["versions"].IsSequence() || spec["versions"].size() == 0) {
    return Status::InvalidArgument("CRD " + crd_name + ": spec.versions is missing or empty",
                                   "spec.versions");
  }
  std::string out = "## " + kind + "\n\n";
  for (const auto& version : spec["versions"]) {
    const std::string version_name = ScalarOf(version, "name");
    const YAML::Node schema =
        Has(version, "schema") ? version["schema"]["openAPIV3Schema"] : YAML::Node();
    if (!schema.IsDefined() || !schema.IsMap()) {
      return Status::InvalidArgument(
          "CRD " + crd_name + ": version " + version_name + " has no schema.openAPIV3Schema",
          "spec.versions[].schema.openAPIV3Schema");
    }
    const std::string description = ScalarOf(schema, "description");
    if (!description.empty()) out += Cell(description) + "\n\n";
    out += "- API version: " + Code(ScalarOf(spec, "group") + "/" + version_name) + "\n";
    out += "- Scope: " + ScalarOf(spec, "scope") + "\n";
    out += "- Plural: " + Code(ScalarOf(names, "plural")) +
           "; short names: " + JoinScalars(names["shortNames"]) +
           "; categories: " + JoinScalars(names["categories"]) + "\n";
    std::string subresources;
    if (Has(version, "subresources") && version["subresources"].IsMap()) {
      for (const auto& kv : version["subresources"]) {
        if (!subresources.empty()) subresources += ", ";
        subresources += Code(kv.first.Scalar());
        if (kv.first.Scalar() == "scale") {
          const YAML::Node scale = kv.second;
          subresources += " (" + Code(ScalarOf(scale, "specReplicasPath")) + ", " +
                          Code(ScalarOf(scale, "statusReplicasPath")) + ", selector " +
                          Code(ScalarOf(scale, "labelSelectorPath")) + ")";
        }
      }
    }
    out += "- Subresources: " + (subresources.empty() ? std::string("none") : subresources) + "\n";
    if (Has(version, "additionalPrinterColumns")) {
      std::string columns;
      for (const auto& column : version["additionalPrinterColumns"]) {
        if (!columns.empty()) columns += ", ";
        columns += ScalarOf(column, "name") + " " + Code(ScalarOf(column, "jsonPath"));
        if (Has(column, "priority") && ScalarOf(column, "priority") != "0") columns += " (wide)";
      }
      out += "- Printer columns: " + columns + "\n";
    }
    out += "\n";
    if (HasProperties(schema)) {
      for (const char* top : {"spec", "status"}) {
        const YAML::Node part = schema["properties"][top];
        if (part.IsDefined() && HasProperties(part)) RenderObject(part, top, out);
      }
    }
    std::vector<RuleRow> rules;
    CollectRules(schema, "", rules);
    if (!rules.empty()) {
      out += "### " + kind + " validation rules\n\n";
      out +=
          "CEL rules (`x-kubernetes-validations`). A rule applies to the object at Path; a\n"
          "violation is reported at Path followed by Field path, when one is given.\n\n";
      out += "| Path | Rule | Message | Field path |\n";
      out += "|---|---|---|---|\n";
      for (const auto& row : rules) {
        out += "| " + Code(row.path) + " | " + Code(row.rule) + " | " + Cell(row.message) + " | " +
               (row.field_path.empty() ? std::string() : Code(row.field_path)) + " |\n";
      }
      out += "\n";
    }
  }
  return out;
}

std::size_t KindRank(const YAML::Node& crd) {
  const std::string kind =
      Has(crd, "spec") && Has(crd["spec"], "names") ? ScalarOf(crd["spec"]["names"], "kind") : "";
  for (std::size_t i = 0; i < kKindOrder.size(); ++i) {
    if (kKindOrder[i] == kind) return i;
  }
  return kKindOrder.size();
}

}  // namespace

Result<std::string> RenderApiReference(const std::vector<YAML::Node>& crds) {
  try {
    // Sort indices, not nodes: assigning a YAML::Node writes through to the node it refers to.
    std::vector<std::size_t> order(crds.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&crds](std::size_t a, std::size_t b) {
      return KindRank(crds[a]) < KindRank(crds[b]);
    });
    std::string out =
        "# API reference\n"
        "\n"
        "<!-- Generated from crds/*.yaml by api/tools/crd_docs.cpp; do not edit by hand. -->\n"
        "\n"
        "Sluice's custom resources, all namespaced, in the API group `sluice.dev`. The CRDs in\n"
        "`crds/` are the source of truth; this page is rendered from them. Types follow the\n"
        "OpenAPI schema: `integer (int32)`, `integer (int64)`, `number` (a double), `[]T` for a\n"
        "list, `map[string]string`, `int-or-string` (a Kubernetes quantity or a percentage), and\n"
        "`object (free-form)` for settings passed through unchanged. Defaults are applied by the\n"
        "API server (and by the operator, identically) when a field is absent; an object field\n"
        "with default `{}` is created so that its own defaults apply.\n"
        "\n";
    std::string toc = "Kinds:";
    std::vector<std::string> sections;
    for (const std::size_t index : order) {
      const YAML::Node& crd = crds[index];
      if (!crd.IsMap()) return Status::InvalidArgument("a CRD document is not a map");
      auto rendered = RenderKind(crd);
      if (!rendered.ok()) return rendered.status();
      sections.push_back(std::move(rendered).value());
      toc += " " + ScalarOf(crd["spec"]["names"], "kind") + ",";
    }
    if (!sections.empty()) toc.back() = '.';
    out += toc + "\n\n";
    for (const auto& section : sections) out += section;
    out += kCrossObjectChecks;
    return out;
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("reading a CRD: ") + e.what());
  }
}

}  // namespace sluice::api
