// libFuzzer target for the YAML readers: the YAML to JSON conversion manifests and component
// configs go through (common/yaml/yaml_json.h, ParseDocuments), and the config file reader of
// every binary's options (common/config/config_file.h, ParseConfigYaml) with the value parsers it
// hands the file's scalars to (common/config/value_parsers.h).
//
// Each input is a YAML file. Invariants:
//  - ParseDocuments never yields a value nested deeper than its limit (200 levels below the
//    root), and a result whose strings are printable ASCII and whose numbers are finite, written
//    out as JSON text (which is YAML), parses back to the same value;
//  - ParseConfigYaml marks a file unreadable only with an error, prefixes every error with the
//    file's name, and hands out raw values for declared options only, one text per scalar;
//  - every scalar that a value parser accepts reads back to the same value from the parser's own
//    rendering (FormatDuration, FormatByteSize, FormatDouble, std::to_string), and list splitting
//    yields trimmed, non-empty, comma-free items that split the same once joined.
// Files whose aliases expand past a budget are not converted, to keep each input quick: ToJson
// bounds what a document expands to (sluice::yaml::kMaxExpandedNodes, a bound this target made
// necessary: "billion laughs"), but far above this target's budget.
//
// Fuzz it with `scripts/fuzz.sh yaml_config [seconds]` (tests/fuzz/CMakeLists.txt).
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config/config_file.h"
#include "common/config/option.h"
#include "common/config/raw_value.h"
#include "common/config/spec.h"
#include "common/config/value_parsers.h"
#include "common/join_strings.h"
#include "common/json/json_depth.h"
#include "common/status.h"
#include "common/yaml/load_all.h"
#include "common/yaml/yaml_json.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using nlohmann::json;
using sluice::Result;
using sluice::config::ConfigFileContents;
using sluice::config::Option;
using sluice::config::OptionType;
using sluice::config::Spec;

constexpr size_t kMaxInputBytes = 64 * 1024;
// ToJson's depth limit (yaml_json.cpp): nodes below depth 200 are refused, so a value nests at
// most 201 containers deep (JsonValueDepth counts the root container as 1).
constexpr size_t kMaxYamlJsonDepth = 201;
// Aliases let a small file stand for an exponentially large document ("billion laughs"). ToJson
// refuses past a million nodes or 64 MiB of scalars (tests/unit/common/yaml_json_test.cpp); files
// that expand past these smaller budgets are not converted, so one input stays quick.
constexpr size_t kMaxExpandedNodes = 100'000;
constexpr size_t kMaxExpandedScalarBytes = 8 << 20;
// Keys longer than this are no YAML simple keys (YAML caps an implicit key at 1024 characters).
constexpr size_t kMaxRoundTripKeyBytes = 256;
// Larger documents (aliases make them from small files) are not parsed a second time.
constexpr size_t kMaxRoundTripTextBytes = 256 * 1024;

using sluice::fuzz::Require;

// The shape of the unit tests' spec (tests/unit/common/config_test.cpp): every option type,
// nested YAML sections.
Spec MakeSpec() {
  Spec spec("SLUICE_FUZZ");
  spec.Add(Option::String("listen-address", ":8080", "Address.").YamlKey("http.listenAddress"));
  spec.Add(Option::Bool("tls-enabled", true, "TLS.").YamlKey("http.tls.enabled"));
  spec.Add(Option::Int("replicas", 1, "Workers.").Min(0).Max(64));
  spec.Add(Option::Double("ratio", 0.5, "Ratio.").Min(0).Max(1));
  spec.Add(Option::Bool("verbose", false, "Log more."));
  spec.Add(Option::Duration("resync-period", std::chrono::minutes(5), "Resync."));
  spec.Add(Option::Bytes("max-body", uint64_t{64} << 20, "Body limit."));
  spec.Add(Option::StringList("peers", {}, "Peers."));
  spec.Add(Option::Enum("mode", {"fast", "safe"}, "safe", "Mode."));
  spec.Add(Option::String("token", "", "Token.").Required());
  return spec;
}

// Whether converting `roots` stays within the expansion budgets, counted the way ToJson walks
// (values of maps and items of sequences, to its depth limit), with an explicit stack.
bool ExpansionWithinBudget(const std::vector<YAML::Node>& roots) {
  size_t nodes = 0;
  size_t bytes = 0;
  std::vector<std::pair<YAML::Node, size_t>> pending;
  for (const YAML::Node& root : roots) pending.emplace_back(root, 0);
  while (!pending.empty()) {
    const YAML::Node node = pending.back().first;
    const size_t depth = pending.back().second;
    pending.pop_back();
    if (++nodes > kMaxExpandedNodes || bytes > kMaxExpandedScalarBytes) return false;
    if (depth > kMaxYamlJsonDepth) continue;  // ToJson refuses it without going deeper.
    switch (node.Type()) {
      case YAML::NodeType::Scalar:
        bytes += node.Scalar().size();
        break;
      case YAML::NodeType::Sequence:
        for (const YAML::Node& item : node) pending.emplace_back(item, depth + 1);
        break;
      case YAML::NodeType::Map:
        for (const auto& entry : node) {
          if (entry.first.IsScalar()) bytes += entry.first.Scalar().size();
          pending.emplace_back(entry.second, depth + 1);
        }
        break;
      default:
        break;
    }
  }
  return bytes <= kMaxExpandedScalarBytes;
}

bool PrintableAscii(const std::string& s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Whether `value`'s JSON text reads back as the same value through ParseDocuments: strings and
// keys printable ASCII (the YAML reader does not check UTF-8 and folds line breaks), keys short
// enough to be YAML simple keys, numbers that JSON can write (not NaN or infinite) and not
// subnormal (whose shortest rendering a reader may refuse). Null at the top level is a skipped
// document.
bool RoundTrippable(const json& value) {
  if (value.is_null()) return false;
  std::vector<const json*> pending = {&value};
  while (!pending.empty()) {
    const json* v = pending.back();
    pending.pop_back();
    if (v->is_string() && !PrintableAscii(v->get_ref<const std::string&>())) return false;
    if (v->is_number_float()) {
      const int kind = std::fpclassify(v->get<double>());
      if (kind == FP_NAN || kind == FP_INFINITE || kind == FP_SUBNORMAL) return false;
    }
    if (v->is_object()) {
      for (auto it = v->begin(); it != v->end(); ++it) {
        if (it.key().size() > kMaxRoundTripKeyBytes || !PrintableAscii(it.key())) return false;
      }
    }
    if (v->is_structured()) {
      for (const json& child : *v) pending.push_back(&child);
    }
  }
  return true;
}

void FuzzDocuments(const std::string& text) {
  try {
    if (!ExpansionWithinBudget(sluice::yaml::LoadAllDocuments(text))) return;
  } catch (const YAML::Exception&) {
    // ParseDocuments reports it; nothing to expand.
  }
  Result<std::vector<json>> docs = sluice::yaml::ParseDocuments(text);
  if (!docs.ok()) {
    Require(docs.status().code() == sluice::StatusCode::kInvalidArgument, "YAML errors");
    return;
  }
  for (const json& doc : *docs) {
    Require(sluice::JsonValueDepth(doc) <= kMaxYamlJsonDepth, "converted values are bounded");
    if (!RoundTrippable(doc)) continue;
    const std::string written = doc.dump();
    if (written.size() > kMaxRoundTripTextBytes) continue;
    Result<std::vector<json>> again = sluice::yaml::ParseDocuments(written);
    Require(again.ok(), "JSON text written from a document parses as YAML");
    Require(again->size() == 1, "JSON text is one document");
    Require(again->front() == doc, "a document round trips through its JSON text");
  }
}

// The value parsers on one scalar: what they accept reads back from their own rendering.
void CheckValueParsers(const std::string& text) {
  namespace config = sluice::config;
  if (Result<int64_t> v = config::ParseInt(text); v.ok()) {
    Result<int64_t> again = config::ParseInt(std::to_string(*v));
    Require(again.ok() && *again == *v, "int round trip");
  }
  if (Result<double> v = config::ParseDouble(text); v.ok()) {
    Require(std::isfinite(*v), "doubles are finite");
    Result<double> again = config::ParseDouble(config::FormatDouble(*v));
    Require(again.ok() && *again == *v, "double round trip");
  }
  if (Result<bool> v = config::ParseBool(text); v.ok()) {
    Result<bool> again = config::ParseBool(*v ? "true" : "false");
    Require(again.ok() && *again == *v, "bool round trip");
  }
  if (Result<std::chrono::nanoseconds> v = config::ParseDuration(text); v.ok()) {
    Require(v->count() >= 0, "durations are not negative");
    Result<std::chrono::nanoseconds> again = config::ParseDuration(config::FormatDuration(*v));
    Require(again.ok() && *again == *v, "duration round trip");
  }
  if (Result<uint64_t> v = config::ParseByteSize(text); v.ok()) {
    Result<uint64_t> again = config::ParseByteSize(config::FormatByteSize(*v));
    Require(again.ok() && *again == *v, "byte size round trip");
  }
  const std::vector<std::string> items = config::ParseStringList(text);
  for (const std::string& item : items) {
    Require(!item.empty() && item.find(',') == std::string::npos, "list items");
    Require(
        item.front() != ' ' && item.front() != '\t' && item.back() != ' ' && item.back() != '\t',
        "list items are trimmed");
  }
  Require(config::ParseStringList(sluice::JoinStrings(items, ",")) == items, "list round trip");
}

void FuzzConfigFile(const std::string& text) {
  static const Spec spec = MakeSpec();
  const ConfigFileContents contents = sluice::config::ParseConfigYaml(spec, text, "fuzz.yaml");
  Require(!contents.unreadable || !contents.errors.empty(), "an unreadable file has an error");
  for (const std::string& error : contents.errors) {
    Require(error.rfind("file fuzz.yaml: ", 0) == 0, "errors name the file");
  }
  for (const auto& [flag, raw] : contents.values) {
    const Option* option = spec.Find(flag);
    Require(option != nullptr, "values are for declared options");
    Require(raw.source == sluice::config::ValueSource::kFile, "values come from the file");
    if (option->type() == OptionType::kStringList) {
      Require(!raw.split_commas, "YAML list items are not split at commas");
    } else {
      Require(raw.texts.size() == 1, "a scalar option has one text");
    }
    for (const std::string& t : raw.texts) CheckValueParsers(t);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(bytes), size);
  FuzzDocuments(text);
  FuzzConfigFile(text);
  return 0;
}
