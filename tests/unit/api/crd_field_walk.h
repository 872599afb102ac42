// The walk behind crd_fields_read_test.cpp ("no CRD field that is accepted and ignored"): the
// leaf fields of a CRD schema, and whether some C++ source reads one. Pure functions over JSON
// and text, so they are tested on synthetic input of their own.
//
// A field counts as read when the code (comments stripped) accesses it in one of the two ways the
// project reads custom resources:
//   - typed, through the generated structs (api/generated/): `.member` or `->member`,
//     where member is the generated name (CppMemberName: chunkSizeMiB -> chunk_size_mi_b);
//   - as JSON, the way the controllers read objects: the key in quotes ("claimName") or as a
//     JSON pointer segment ("/spec/managedBy", "/pvc/claimName/...").
// It is a textual check: a common name ("name", "key") is found wherever anything by that name is
// read. It catches a field nobody ever reads, not a read of the wrong object.
#pragma once

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/crds/codegen.h"

namespace sluice::testing_crd_fields {

// One leaf of a schema: a property with no sub-properties (a scalar, a list or map of scalars,
// int-or-string, or a free-form object).
struct SchemaLeaf {
  // "Policy.spec.weightSync.chunkSizeMiB"; "[]" marks the items of a list of objects
  // ("...tolerations[].operator"), "{}" the values of a map of objects.
  std::string path;
  std::string json_name;  // The property's own name: "chunkSizeMiB".
  std::string member;     // Its generated C++ member: "chunk_size_mi_b".
};

// Whether the node, or the items/values it holds (through lists and maps), has properties.
inline bool HasProperties(const nlohmann::json& node) {
  if (!node.is_object()) return false;
  if (auto p = node.find("properties"); p != node.end() && p->is_object() && !p->empty()) {
    return true;
  }
  const std::string type = node.value("type", "");
  if (type == "array") return node.contains("items") && HasProperties(node.at("items"));
  if (type == "object") {
    auto a = node.find("additionalProperties");
    return a != node.end() && HasProperties(*a);
  }
  return false;
}

inline void WalkSchema(const nlohmann::json& node, const std::string& path, const std::string& name,
                       std::vector<SchemaLeaf>* out) {
  if (auto p = node.find("properties"); p != node.end() && p->is_object() && !p->empty()) {
    for (auto it = p->begin(); it != p->end(); ++it) {
      WalkSchema(it.value(), path + "." + it.key(), it.key(), out);
    }
    return;
  }
  const std::string type = node.value("type", "");
  if (type == "array" && HasProperties(node)) {
    return WalkSchema(node.at("items"), path + "[]", name, out);
  }
  if (type == "object" && HasProperties(node)) {
    return WalkSchema(node.at("additionalProperties"), path + "{}", name, out);
  }
  out->push_back({path, name, api::CppMemberName(name)});
}

// Every leaf under `schema` (an OpenAPI v3 schema node named `name`, at `path`), depth first in
// the order of the JSON object's keys (sorted, for nlohmann::json). A node without properties is
// itself the one leaf.
inline std::vector<SchemaLeaf> LeafFields(const nlohmann::json& schema, const std::string& path,
                                          const std::string& name) {
  std::vector<SchemaLeaf> out;
  WalkSchema(schema, path, name, &out);
  return out;
}

inline bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// C++ source without its comments (each replaced by a space, newlines kept); string, character
// and raw string literals are kept whole, so "http://..." and R"(/* not a comment */)" survive.
inline std::string StripComments(std::string_view code) {
  std::string out;
  out.reserve(code.size());
  const size_t n = code.size();
  size_t i = 0;
  auto copy_quoted = [&](char quote) {  // From the opening quote through the closing one.
    out += code[i++];
    while (i < n && code[i] != quote && code[i] != '\n') {
      if (code[i] == '\\' && i + 1 < n) out += code[i++];
      out += code[i++];
    }
    if (i < n) out += code[i++];
  };
  while (i < n) {
    const char c = code[i];
    const char next = i + 1 < n ? code[i + 1] : '\0';
    const char prev = i > 0 ? code[i - 1] : '\0';
    if (c == '/' && next == '/') {
      while (i < n && code[i] != '\n') ++i;
      out += ' ';
    } else if (c == '/' && next == '*') {
      const size_t end = code.find("*/", i + 2);
      for (size_t j = i; j < (end == std::string_view::npos ? n : end + 2); ++j) {
        if (code[j] == '\n') out += '\n';
      }
      i = end == std::string_view::npos ? n : end + 2;
      out += ' ';
    } else if (c == 'R' && next == '"' &&
               (!IsIdentChar(prev) || prev == 'u' || prev == 'U' || prev == 'L' || prev == '8')) {
      // R"delim( ... )delim"
      const size_t open = code.find('(', i + 2);
      if (open == std::string_view::npos) {
        out += code.substr(i);
        break;
      }
      const std::string close = ")" + std::string(code.substr(i + 2, open - (i + 2))) + "\"";
      const size_t end = code.find(close, open + 1);
      const size_t stop = end == std::string_view::npos ? n : end + close.size();
      out += code.substr(i, stop - i);
      i = stop;
    } else if (c == '"') {
      copy_quoted('"');
    } else if (c == '\'' && !std::isalnum(static_cast<unsigned char>(prev))) {
      copy_quoted('\'');  // A character literal; after a digit it is a digit separator (1'000).
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// Whether `code` (comments stripped) reads the field (see the top of this file).
inline bool ReadsField(std::string_view code, const SchemaLeaf& leaf) {
  const std::string& m = leaf.member;
  for (size_t p = code.find(m); p != std::string_view::npos; p = code.find(m, p + 1)) {
    const size_t end = p + m.size();
    const bool member_access =
        p > 0 && (code[p - 1] == '.' || (code[p - 1] == '>' && p > 1 && code[p - 2] == '-'));
    if (member_access && (end == code.size() || !IsIdentChar(code[end]))) return true;
  }
  const std::string& j = leaf.json_name;
  for (const std::string& form : {"\"" + j + "\"", "/" + j + "\"", "/" + j + "/"}) {
    if (code.find(form) != std::string_view::npos) return true;
  }
  return false;
}

// Whether `path` is `prefix` or lies below it ("a.b" covers "a.b", "a.b.c", "a.b[].c", "a.b{}.c").
inline bool PathWithin(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  if (path.size() == prefix.size()) return true;
  const char c = path[prefix.size()];
  return c == '.' || c == '[' || c == '{';
}

}  // namespace sluice::testing_crd_fields
