#include "operator/controllers/labels.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace sluice::controllers {

using nlohmann::json;

namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool IsLabelChar(char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; }
bool IsDnsLabelChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

// `text` without the leading and trailing characters `keep` rejects.
template <typename Keep>
std::string TrimTo(std::string text, Keep keep) {
  while (!text.empty() && !keep(text.back())) text.pop_back();
  const auto first = std::find_if(text.begin(), text.end(), keep);
  return std::string(first, text.end());
}

// "<cut of clean>-<hash of original><suffix>" within `max_length`: the truncation every name and
// label function shares. `clean` holds only allowed characters; `keep` says which may end the cut.
template <typename Keep>
std::string HashedName(const std::string& original, const std::string& clean,
                       const std::string& suffix, size_t max_length, Keep keep) {
  const std::string hash = JsonHash(json(original));
  const size_t room = max_length - std::min(max_length, suffix.size() + hash.size() + 1);
  const std::string cut = TrimTo(clean.substr(0, std::min(room, clean.size())), keep);
  return (cut.empty() ? "" : cut + "-") + hash + suffix;
}

}  // namespace

std::string LabelValue(const std::string& value) {
  const bool valid = value.empty() || (value.size() <= kMaxLabelValueLength &&
                                       IsAlnum(value.front()) && IsAlnum(value.back()) &&
                                       std::all_of(value.begin(), value.end(), IsLabelChar));
  if (valid) return value;
  std::string clean = value;
  for (char& c : clean) {
    if (!IsLabelChar(c)) c = '-';
  }
  return HashedName(value, clean, "", kMaxLabelValueLength, IsAlnum);
}

std::string DnsLabelName(const std::string& base, const std::string& suffix) {
  std::string clean = base;
  for (char& c : clean) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    } else if (!IsDnsLabelChar(c)) {
      c = '-';
    }
  }
  const bool edges = base.empty() || (base.front() != '-' && base.back() != '-');
  if (clean == base && edges && base.size() + suffix.size() <= kMaxDnsLabelLength) {
    return base + suffix;
  }
  return HashedName(base, clean, suffix, kMaxDnsLabelLength, IsAlnum);
}

std::string SubdomainName(const std::string& base, const std::string& suffix) {
  if (base.size() + suffix.size() <= kMaxDnsSubdomainLength) return base + suffix;
  return HashedName(base, base, suffix, kMaxDnsSubdomainLength, IsAlnum);
}

json StandardLabels(const std::string& name, const std::string& instance,
                    const std::string& component, const std::map<std::string, std::string>& extra) {
  json labels = {{kNameLabel, name},
                 {kInstanceLabel, LabelValue(instance)},
                 {kComponentLabel, component},
                 {kPartOfLabel, "sluice"},
                 {kManagedByLabel, kManagedBy}};
  for (const auto& [k, v] : extra) labels[k] = LabelValue(v);
  return labels;
}

json ControllerRef(const json& owner) {
  return {{"apiVersion", owner.value("apiVersion", "")},
          {"kind", owner.value("kind", "")},
          {"name", owner.value("/metadata/name"_json_pointer, "")},
          {"uid", owner.value("/metadata/uid"_json_pointer, "")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

std::string JsonHash(const json& value) {
  // dump() sorts object keys (nlohmann::json's default map), so equal values hash equally.
  const std::string text = value.dump();
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf).substr(0, 10);
}

}  // namespace sluice::controllers
