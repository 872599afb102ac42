#include "common/yaml/yaml_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "common/ascii.h"
#include "common/yaml/load_all.h"

namespace sluice::yaml {
namespace {

std::string Where(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return "";
  return " at line " + std::to_string(mark.line + 1) + ", column " +
         std::to_string(mark.column + 1);
}

// A plain (unquoted) scalar typed by the YAML 1.2 core schema.
nlohmann::json PlainScalar(const std::string& s) {
  const std::string l = AsciiLower(s);
  if (l.empty() || l == "null" || l == "~") return nullptr;
  if (l == "true") return true;
  if (l == "false") return false;
  if (l == ".inf" || l == "+.inf") return std::numeric_limits<double>::infinity();
  if (l == "-.inf") return -std::numeric_limits<double>::infinity();
  if (l == ".nan") return std::numeric_limits<double>::quiet_NaN();
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  // Integers: [-+]?[0-9]+, 0x[0-9a-fA-F]+, 0o[0-7]+.
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(begin + 2, end, v, s[1] == 'x' ? 16 : 8);
    if (ec == std::errc() && ptr == end) return v;
    return s;
  }
  {
    const char* digits = (s[0] == '+' || s[0] == '-') ? begin + 1 : begin;
    if (digits != end && std::all_of(digits, end, [](char c) { return c >= '0' && c <= '9'; })) {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(s[0] == '+' ? begin + 1 : begin, end, v);
      if (ec == std::errc() && ptr == end) return v;
      uint64_t u = 0;
      auto [uptr, uec] = std::from_chars(digits, end, u);
      if (s[0] != '-' && uec == std::errc() && uptr == end) return u;
      return s;  // Out of range: keep the text rather than lose digits.
    }
  }
  // Floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
  {
    size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    size_t int_digits = 0, frac_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
    bool dot = false;
    if (i < s.size() && s[i] == '.') {
      dot = true;
      ++i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac_digits;
    }
    bool exp_ok = true;
    bool has_exp = false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      has_exp = true;
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      size_t exp_digits = 0;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
      exp_ok = exp_digits > 0;
    }
    if (i == s.size() && exp_ok && (int_digits + frac_digits) > 0 && (dot || has_exp)) {
      double v = 0;
      auto [ptr, ec] = std::from_chars(s[0] == '+' ? begin + 1 : begin, end, v);
      if (ec == std::errc() && ptr == end) return v;
    }
  }
  return s;
}

// What a document may still expand to. Aliases repeat a node wherever they point, so a small
// text can stand for an exponentially large document ("billion laughs"): depth alone does not
// bound it, nodes and scalar bytes do.
struct Budget {
  size_t nodes = kMaxExpandedNodes;
  size_t scalar_bytes = kMaxExpandedScalarBytes;
};

Result<nlohmann::json> Convert(const YAML::Node& node, int depth, Budget& budget) {
  constexpr int kMaxDepth = 200;
  if (depth > kMaxDepth) {
    return Status::InvalidArgument("YAML nesting deeper than " + std::to_string(kMaxDepth) +
                                   Where(node));
  }
  if (budget.nodes == 0) {
    return Status::InvalidArgument("YAML document expands to more than " +
                                   std::to_string(kMaxExpandedNodes) +
                                   " nodes (aliases repeated too often?)" + Where(node));
  }
  --budget.nodes;
  if (node.Type() == YAML::NodeType::Scalar) {
    if (node.Scalar().size() > budget.scalar_bytes) {
      return Status::InvalidArgument(
          "YAML document expands to more than " + std::to_string(kMaxExpandedScalarBytes) +
          " bytes of scalars (aliases repeated too often?)" + Where(node));
    }
    budget.scalar_bytes -= node.Scalar().size();
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nlohmann::json(nullptr);
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted scalars "!"; plain ones "?". Only plain scalars are typed.
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
        return nlohmann::json(node.Scalar());
      }
      return PlainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const YAML::Node& item : node) {
        SLUICE_ASSIGN_OR_RETURN(nlohmann::json v, Convert(item, depth + 1, budget));
        out.push_back(std::move(v));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return Status::InvalidArgument("a map key is not a scalar" + Where(kv.first));
        }
        const std::string key = kv.first.Scalar();
        if (key.size() > budget.scalar_bytes) {
          return Status::InvalidArgument(
              "YAML document expands to more than " + std::to_string(kMaxExpandedScalarBytes) +
              " bytes of scalars (aliases repeated too often?)" + Where(kv.first));
        }
        budget.scalar_bytes -= key.size();
        if (out.contains(key)) {
          return Status::InvalidArgument("duplicate key \"" + key + "\"" + Where(kv.first));
        }
        SLUICE_ASSIGN_OR_RETURN(nlohmann::json v, Convert(kv.second, depth + 1, budget));
        out[key] = std::move(v);
      }
      return out;
    }
  }
  return nlohmann::json(nullptr);
}

}  // namespace

Result<nlohmann::json> ToJson(const YAML::Node& node) {
  try {
    Budget budget;
    return Convert(node, 0, budget);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("YAML: ") + e.what());
  }
}

Result<std::vector<nlohmann::json>> ParseDocuments(std::string_view text) {
  std::vector<YAML::Node> docs;
  try {
    docs = LoadAllDocuments(text);
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument("YAML syntax error at line " + std::to_string(e.mark.line + 1) +
                                   ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("YAML: ") + e.what());
  }
  std::vector<nlohmann::json> out;
  for (const YAML::Node& doc : docs) {
    if (!doc.IsDefined() || doc.IsNull()) continue;
    SLUICE_ASSIGN_OR_RETURN(nlohmann::json j, ToJson(doc));
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace sluice::yaml
