#include "api/crds/codegen.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace sluice::api {
namespace {

using nlohmann::json;

std::string Capitalize(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// "maxBatchTokens" -> "max_batch_tokens"; C++ keywords get a trailing underscore.
std::string SnakeCase(const std::string& camel) {
  std::string out;
  for (size_t i = 0; i < camel.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(camel[i]);
    if (std::isupper(c)) {
      // Runs of capitals ("URL", "GPUs") stay one word: split before the last of the run.
      const bool prev_lower = i > 0 && !std::isupper(static_cast<unsigned char>(camel[i - 1]));
      const bool next_lower =
          i + 1 < camel.size() && std::islower(static_cast<unsigned char>(camel[i + 1]));
      const bool prev_upper = i > 0 && std::isupper(static_cast<unsigned char>(camel[i - 1]));
      if (i > 0 && (prev_lower || (prev_upper && next_lower))) out += '_';
      out += static_cast<char>(std::tolower(c));
    } else {
      out += static_cast<char>(c);
    }
  }
  static const std::set<std::string> kKeywords = {
      "namespace", "template", "default", "operator", "class", "new",    "delete",
      "int",       "double",   "float",   "bool",     "char",  "long",   "short",
      "register",  "return",   "switch",  "case",     "this",  "public", "private",
      "protected", "union",    "struct",  "auto",     "const", "export", "static"};
  if (kKeywords.count(out)) out += '_';
  return out;
}

// "policies" -> "Policy", "regions" -> "Region", "metrics" -> "Metric", "status" stays.
std::string Singular(const std::string& plural) {
  auto ends = [&](const std::string& suffix) {
    return plural.size() > suffix.size() &&
           plural.compare(plural.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends("ies")) return plural.substr(0, plural.size() - 3) + "y";
  if (ends("sses") || ends("shes") || ends("ches") || ends("xes")) {
    return plural.substr(0, plural.size() - 2);
  }
  if (ends("ss") || ends("us")) return plural;
  if (ends("s")) return plural.substr(0, plural.size() - 1);
  return plural + "Item";
}

std::string Comment(const std::string& text, const std::string& indent) {
  if (text.empty()) return "";
  constexpr size_t kWidth = 100;
  std::string out;
  std::string line;
  std::istringstream words(text);
  const std::string prefix = indent + "// ";
  for (std::string word; words >> word;) {
    if (!line.empty() && prefix.size() + line.size() + 1 + word.size() > kWidth) {
      out += prefix + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += prefix + line + "\n";
  return out;
}

struct Field {
  std::string json_name;
  std::string cpp_name;
  std::string cpp_type;  // Without std::optional.
  std::string description;
  bool optional = false;
  std::string initializer;  // " = 30" from a scalar schema default, so C++ values start defaulted.
};

struct Struct {
  std::string name;
  std::string description;
  std::vector<Field> fields;
};

class Generator {
 public:
  explicit Generator(const ResourceKind& kind) : kind_(kind) {}

  GeneratedTypes Run() {
    const json& props = kind_.schema.at("properties");
    Struct root{kind_.kind, kind_.schema.value("description", ""), {}};
    root.fields.push_back(
        {"metadata", "metadata", "ObjectMeta", "Standard object metadata.", false, ""});
    if (props.contains("spec")) {
      const std::string spec = TypeOf(props["spec"], kind_.kind + "Spec", "spec");
      root.fields.push_back(
          {"spec", "spec", spec, props["spec"].value("description", ""), false, ""});
    }
    if (props.contains("status")) {
      const std::string status = TypeOf(props["status"], kind_.kind + "Status", "status");
      root.fields.push_back(
          {"status", "status", status, props["status"].value("description", ""), true, ""});
    }
    structs_.push_back(std::move(root));

    GeneratedTypes out;
    out.file_stem = SnakeCase(kind_.kind) + "_types";
    out.header = Header(out.file_stem);
    out.source = Source(out.file_stem);
    return out;
  }

 private:
  // The C++ type of a schema node, adding structs for objects (children first).
  std::string TypeOf(const json& node, const std::string& name, const std::string& path) {
    if (node.value("x-kubernetes-int-or-string", false)) return "IntOrString";
    const std::string type = node.value("type", "");
    if (type == "string") return "std::string";
    if (type == "integer") return "int64_t";
    if (type == "number") return "double";
    if (type == "boolean") return "bool";
    if (type == "array") {
      if (path == "status.conditions") return "std::vector<Condition>";
      const std::string last = path.substr(path.rfind('.') + 1);
      std::string item_name =
          name.substr(0, name.size() - Capitalize(last).size()) + Capitalize(Singular(last));
      return "std::vector<" + TypeOf(node.at("items"), item_name, path + "[]") + ">";
    }
    if (type == "object") {
      if (node.contains("properties")) return AddStruct(node, name, path);
      if (auto a = node.find("additionalProperties"); a != node.end() && a->is_object()) {
        return "std::map<std::string, " + TypeOf(*a, name + "Value", path + "{}") + ">";
      }
      return "nlohmann::json";  // Free-form (preserve-unknown-fields) or an empty object.
    }
    return "nlohmann::json";
  }

  std::string AddStruct(const json& node, std::string name, const std::string& path) {
    while (!names_.insert(name).second) name += "Item";  // Singular forms may collide.
    Struct s{name, node.value("description", ""), {}};
    std::set<std::string> required;
    if (auto r = node.find("required"); r != node.end()) {
      for (const json& key : *r) required.insert(key.get<std::string>());
    }
    for (auto it = node["properties"].begin(); it != node["properties"].end(); ++it) {
      Field f;
      f.json_name = it.key();
      f.cpp_name = SnakeCase(it.key());
      f.cpp_type = TypeOf(*it, name + Capitalize(it.key()), path + "." + it.key());
      f.description = it->value("description", "");
      f.optional = !required.count(it.key()) && !it->contains("default");
      f.initializer = Initializer(f.cpp_type, it->value("default", json()));
      s.fields.push_back(std::move(f));
    }
    structs_.push_back(std::move(s));
    return name;
  }

  std::string Header(const std::string& stem) const {
    std::string out =
        "// Generated by sluice-crd-codegen from crds/" + kind_.file +
        ". Do not edit: change the CRD and\n// regenerate (see api/codegen.h).\n"
        "#pragma once\n\n#include <cstdint>\n#include <map>\n#include <nlohmann/json.hpp>\n"
        "#include <optional>\n#include <string>\n#include <string_view>\n#include <vector>\n\n"
        "#include \"api/json_convert.h\"\n#include \"api/meta.h\"\n"
        "#include \"common/status.h\"\n\nnamespace sluice::api {\n\n";
    (void)stem;
    out += "inline constexpr std::string_view k" + kind_.kind + "Kind = \"" + kind_.kind + "\";\n";
    out += "inline constexpr std::string_view k" + kind_.kind + "Plural = \"" + kind_.plural +
           "\";\n\n";
    for (const Struct& s : structs_) {
      out += Comment(s.description, "");
      out += "struct " + s.name + " {\n";
      for (const Field& f : s.fields) {
        out += Comment(f.description, "  ");
        const std::string type = f.optional ? "std::optional<" + f.cpp_type + ">" : f.cpp_type;
        out += "  " + type + " " + f.cpp_name + (f.optional ? "" : f.initializer) + ";\n";
      }
      out += "\n  friend bool operator==(const " + s.name + "&, const " + s.name +
             "&) = default;\n};\n";
      out += "Status FromJson(const nlohmann::json& j, std::string_view path, " + s.name +
             "* out);\nnlohmann::json ToJson(const " + s.name + "& v);\n\n";
    }
    out += "// A typed " + kind_.kind +
           " from a validated, defaulted object (validation.h); the path of any\n"
           "// type mismatch is named.\nResult<" +
           kind_.kind + "> " + kind_.kind + "FromJson(const nlohmann::json& object);\n\n";
    out += "}  // namespace sluice::api\n";
    return out;
  }

  static std::string Initializer(const std::string& type, const json& def) {
    if (type == "int64_t")
      return " = " + (def.is_number() ? std::to_string(def.get<int64_t>()) : "0");
    if (type == "double") return " = " + (def.is_number() ? def.dump() : "0");
    if (type == "bool")
      return std::string(" = ") + (def.is_boolean() && def.get<bool>() ? "true" : "false");
    if (type == "std::string" && def.is_string()) return " = " + def.dump();
    return "";
  }

  std::string Source(const std::string& stem) const {
    std::string out = "// Generated by sluice-crd-codegen from crds/" + kind_.file +
                      ". Do not edit.\n#include \"api/generated/" + stem +
                      ".h\"\n\nnamespace sluice::api {\n\n";
    for (const Struct& s : structs_) {
      out += "Status FromJson(const nlohmann::json& j, std::string_view path, " + s.name +
             "* out) {\n  if (!j.is_object()) return convert::TypeError(path, \"object\");\n";
      for (const Field& f : s.fields) {
        out += "  SLUICE_RETURN_IF_ERROR(ReadField(j, \"" + f.json_name + "\", path, &out->" +
               f.cpp_name + "));\n";
      }
      out += "  return Status::Ok();\n}\n\n";
      out += "nlohmann::json ToJson(const " + s.name + "& v) {\n";
      if (s.name == kind_.kind) {
        out += "  nlohmann::json j = {{\"apiVersion\", \"sluice.dev/v1alpha1\"}, {\"kind\", \"" +
               kind_.kind + "\"}};\n";
      } else {
        out += "  nlohmann::json j = nlohmann::json::object();\n";
      }
      for (const Field& f : s.fields) {
        out += "  WriteField(j, \"" + f.json_name + "\", v." + f.cpp_name + ");\n";
      }
      out += "  return j;\n}\n\n";
    }
    out += "Result<" + kind_.kind + "> " + kind_.kind +
           "FromJson(const nlohmann::json& object) {\n  " + kind_.kind +
           " out;\n  SLUICE_RETURN_IF_ERROR(FromJson(object, \"\", &out));\n  return out;\n}\n\n";
    out += "}  // namespace sluice::api\n";
    return out;
  }

  const ResourceKind& kind_;
  std::vector<Struct> structs_;
  std::set<std::string> names_;
};

}  // namespace

GeneratedTypes GenerateTypes(const ResourceKind& kind) { return Generator(kind).Run(); }

std::string CppMemberName(const std::string& json_name) { return SnakeCase(json_name); }

}  // namespace sluice::api
