#include "localcluster/apiserver/field_selector.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "common/ascii.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// Splits on commas not preceded by an escaping backslash.
std::vector<std::string_view> SplitTerms(std::string_view s) {
  std::vector<std::string_view> terms;
  size_t start = 0;
  bool escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (escaped) {
      escaped = false;
    } else if (s[i] == '\\') {
      escaped = true;
    } else if (s[i] == ',') {
      terms.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.push_back(s.substr(start));
  return terms;
}

Result<std::string> UnescapeValue(std::string_view s) {
  std::string out;
  bool in_slash = false;
  for (char c : s) {
    if (in_slash) {
      if (c != '\\' && c != ',' && c != '=') {
        return Status::InvalidArgument(
            std::string("invalid field selector: invalid escape sequence: \\") + c);
      }
      out += c;
      in_slash = false;
      continue;
    }
    if (c == '\\') {
      in_slash = true;
    } else if (c == ',' || c == '=') {
      return Status::InvalidArgument(std::string("invalid field selector: unescaped character ") +
                                     c);
    } else {
      out += c;
    }
  }
  if (in_slash) {
    return Status::InvalidArgument("invalid field selector: invalid escape sequence: \\");
  }
  return out;
}

}  // namespace

std::string EscapeFieldValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == ',' || c == '=') out += '\\';
    out += c;
  }
  return out;
}

std::string FieldRequirement::ToString() const {
  return field + (negated ? "!=" : "=") + EscapeFieldValue(value);
}

std::string FieldValueOf(const json& object, std::string_view field) {
  const json* cur = &object;
  size_t start = 0;
  while (true) {
    size_t dot = field.find('.', start);
    std::string key(field.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (!cur->is_object()) return "";
    auto it = cur->find(key);
    if (it == cur->end()) return "";
    cur = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (cur->is_null()) return "";
  if (cur->is_string()) return cur->get<std::string>();
  return cur->dump();
}

bool FieldSelector::Matches(const json& object) const {
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const FieldRequirement& r) {
    return (FieldValueOf(object, r.field) == r.value) != r.negated;
  });
}

std::string FieldSelector::ToString() const {
  std::string out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    if (i > 0) out += ",";
    out += requirements_[i].ToString();
  }
  return out;
}

bool FieldSelector::RequiresExactMatch(std::string_view field, std::string* value) const {
  for (const FieldRequirement& r : requirements_) {
    if (r.field == field && !r.negated) {
      if (value != nullptr) *value = r.value;
      return true;
    }
  }
  if (value != nullptr) value->clear();
  return false;
}

Result<FieldSelector> ParseFieldSelector(std::string_view text,
                                         const std::vector<std::string>& allowed_fields) {
  FieldSelector selector;
  if (StripAsciiSpace(text).empty()) return selector;
  for (std::string_view term : SplitTerms(text)) {
    if (StripAsciiSpace(term).empty()) continue;
    size_t pos = std::string_view::npos;
    size_t op_len = 0;
    bool negated = false;
    for (size_t i = 0; i < term.size() && pos == std::string_view::npos; ++i) {
      std::string_view rest = term.substr(i);
      if (rest.starts_with("!=")) {
        pos = i, op_len = 2, negated = true;
      } else if (rest.starts_with("==")) {
        pos = i, op_len = 2;
      } else if (rest.starts_with("=")) {
        pos = i, op_len = 1;
      }
    }
    if (pos == std::string_view::npos) {
      return Status::InvalidArgument("invalid selector: '" + std::string(text) +
                                     "'; can't understand '" + std::string(term) + "'");
    }
    std::string field(StripAsciiSpace(term.substr(0, pos)));
    bool allowed =
        field == "metadata.name" || field == "metadata.namespace" ||
        std::find(allowed_fields.begin(), allowed_fields.end(), field) != allowed_fields.end();
    if (!allowed) return Status::InvalidArgument("field label not supported: " + field);
    SLUICE_ASSIGN_OR_RETURN(std::string value,
                            UnescapeValue(StripAsciiSpace(term.substr(pos + op_len))));
    selector.requirements_.push_back({std::move(field), negated, std::move(value)});
  }
  std::sort(selector.requirements_.begin(), selector.requirements_.end(),
            [](const FieldRequirement& a, const FieldRequirement& b) {
              return std::tie(a.field, a.negated, a.value) < std::tie(b.field, b.negated, b.value);
            });
  return selector;
}

}  // namespace sluice::apiserver
