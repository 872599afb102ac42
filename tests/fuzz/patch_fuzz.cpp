// libFuzzer target for the local API server's three patch types: JSON patch (RFC 6902,
// localcluster/apiserver/json_patch.h: ApplyJsonPatch, ParseJsonPointer, FormatJsonPointer),
// JSON merge patch (RFC 7386, merge_patch.h: ApplyMergePatch) and strategic merge patch
// (strategic_merge_patch.h: ApplyStrategicMergePatch with DefaultPatchMeta).
//
// Input: the current object, a NUL byte, then the patch body, both JSON; without a NUL the whole
// input is the patch, applied to a fixed Pod. Both go through the server's guards first (nesting
// within kMaxJsonDepth, then a parse), then every patch type is applied, as
// api_server_patch.cpp does. Invariants:
//  - JSON patch: errors are InvalidArgument or Unprocessable; every pointer that parses formats
//    back to itself; a result nests no deeper than kMaxJsonDepth, and a test of the whole result
//    against itself passes;
//  - merge patch: never fails; applying the patch twice changes nothing more; a non-object patch
//    is the result; the patch's null members are gone and its scalars and arrays are in place;
//  - strategic merge patch: errors are InvalidArgument or Unprocessable (always InvalidArgument
//    for a non-object document or patch); a result is an object no deeper than its inputs; a
//    patch without arrays leaves no directive ($patch, $retainKeys, ...) where the document had
//    none; with no list strategies and no directives it is exactly a merge patch.
// JSON patches of very many operations are not applied, to keep each input quick (ApplyJsonPatch
// bounds their number at 10,000, and what copies add at 3 MiB: a bound this target made
// necessary, since each copy may double the document).
//
// Fuzz it with `scripts/fuzz.sh patch [seconds]` (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/json/json_depth.h"
#include "common/status.h"
#include "localcluster/apiserver/json_patch.h"
#include "localcluster/apiserver/merge_patch.h"
#include "localcluster/apiserver/strategic_merge_patch.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using nlohmann::json;
using sluice::Result;
using sluice::StatusCode;

constexpr size_t kMaxInputBytes = 64 * 1024;
// A move copies its value; thousands of moves of a large subtree take seconds. Longer patches are
// not applied.
constexpr size_t kMaxJsonPatchOperations = 512;

constexpr char kPod[] = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7",
               "labels": {"app": "web"}, "finalizers": ["a/b"],
               "ownerReferences": [{"uid": "u-1", "kind": "ReplicaSet", "name": "web-1"}]},
  "spec": {"containers": [{"name": "main", "image": "busybox:1",
                           "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80}]},
                          {"name": "side", "image": "busybox:2"}],
           "volumes": [{"name": "cache", "emptyDir": {}}], "tolerations": [{"key": "k"}]},
  "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
})";

using sluice::fuzz::Require;

bool IsPatchError(StatusCode code) {
  return code == StatusCode::kInvalidArgument || code == StatusCode::kUnprocessable;
}

// The server's reading of a body: depth first, then the parse. Discarded when refused.
json ParseGuarded(std::string_view text) {
  if (sluice::FirstTooDeepJson(text).has_value()) return json::value_t::discarded;
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

bool IsDirectiveKey(std::string_view key) {
  return key == "$patch" || key == "$retainKeys" || key.starts_with("$deleteFromPrimitiveList/") ||
         key.starts_with("$setElementOrder/");
}

// Whether any object anywhere in `value` has a directive key.
bool HasDirectiveKey(const json& value) {
  std::vector<const json*> pending = {&value};
  while (!pending.empty()) {
    const json* v = pending.back();
    pending.pop_back();
    if (v->is_object()) {
      for (auto it = v->begin(); it != v->end(); ++it) {
        if (IsDirectiveKey(it.key())) return true;
      }
    }
    if (v->is_structured()) {
      for (const json& child : *v) pending.push_back(&child);
    }
  }
  return false;
}

// Whether `value` holds an array anywhere (itself included).
bool HasArray(const json& value) {
  std::vector<const json*> pending = {&value};
  while (!pending.empty()) {
    const json* v = pending.back();
    pending.pop_back();
    if (v->is_array()) return true;
    if (v->is_object()) {
      for (const json& child : *v) pending.push_back(&child);
    }
  }
  return false;
}

// Whether a key starting with '$' appears in an object reached from `patch` through objects only
// (what a strategic merge walks as maps; arrays are copied as they are without list strategies).
bool HasDollarKeyOnMapPath(const json& patch) {
  std::vector<const json*> pending = {&patch};
  while (!pending.empty()) {
    const json* v = pending.back();
    pending.pop_back();
    if (!v->is_object()) continue;
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (!it.key().empty() && it.key()[0] == '$') return true;
      pending.push_back(&it.value());
    }
  }
  return false;
}

void CheckPointer(const json& op, const char* member) {
  if (!op.is_object()) return;
  const auto it = op.find(member);
  if (it == op.end() || !it->is_string()) return;
  const std::string& text = it->get_ref<const std::string&>();
  Result<std::vector<std::string>> tokens = sluice::apiserver::ParseJsonPointer(text);
  if (!tokens.ok()) {
    Require(tokens.status().code() == StatusCode::kInvalidArgument, "pointer errors");
    return;
  }
  Require(sluice::apiserver::FormatJsonPointer(*tokens) == text, "a pointer formats to itself");
}

void FuzzJsonPatch(const json& doc, const json& patch) {
  if (patch.is_array()) {
    if (patch.size() > kMaxJsonPatchOperations) return;
    for (const json& op : patch) {
      CheckPointer(op, "path");
      CheckPointer(op, "from");
    }
  }
  Result<json> result = sluice::apiserver::ApplyJsonPatch(doc, patch);
  if (!result.ok()) {
    Require(IsPatchError(result.status().code()), "JSON patch errors");
    return;
  }
  Require(sluice::JsonValueDepth(*result) <= sluice::kMaxJsonDepth, "JSON patch results bounded");
  const json test = json::array({{{"op", "test"}, {"path", ""}, {"value", *result}}});
  Require(sluice::apiserver::ApplyJsonPatch(*result, test).ok(), "a result tests equal to itself");
}

json MergePatch(const json& doc, const json& patch) {
  Result<json> result = sluice::apiserver::ApplyMergePatch(doc, patch);
  Require(result.ok(), "a merge patch applies to any document");
  return std::move(result).value();
}

void FuzzMergePatch(const json& doc, const json& patch) {
  const json once = MergePatch(doc, patch);
  Require(MergePatch(once, patch) == once, "a merge patch is idempotent");
  if (!patch.is_object()) {
    Require(once == patch, "a non-object patch replaces the document");
    return;
  }
  Require(once.is_object(), "an object patch gives an object");
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it->is_null()) {
      Require(!once.contains(it.key()), "a null member deletes");
    } else if (it->is_object()) {
      Require(once.at(it.key()).is_object(), "an object member merges into an object");
    } else {
      Require(once.at(it.key()) == *it, "a scalar or array member is set as it is");
    }
  }
}

void FuzzStrategicMergePatch(const json& doc, const json& patch) {
  std::string kind = "Pod";
  if (doc.is_object()) {
    const auto it = doc.find("kind");
    if (it != doc.end() && it->is_string()) kind = it->get<std::string>();
  }
  const sluice::apiserver::PatchMeta meta = sluice::apiserver::DefaultPatchMeta(kind);
  Result<json> result = sluice::apiserver::ApplyStrategicMergePatch(doc, patch, meta);
  if (!doc.is_object() || !patch.is_object()) {
    Require(!result.ok() && result.status().code() == StatusCode::kInvalidArgument,
            "strategic merge patches take objects");
    return;
  }
  if (!result.ok()) {
    Require(IsPatchError(result.status().code()), "strategic merge patch errors");
  } else {
    Require(result->is_object(), "a strategic merge gives an object");
    Require(sluice::JsonValueDepth(*result) <=
                std::max(sluice::JsonValueDepth(doc), sluice::JsonValueDepth(patch)),
            "a strategic merge nests no deeper than its inputs");
    if (!HasArray(patch) && !HasDirectiveKey(doc)) {
      Require(!HasDirectiveKey(*result), "directives do not end up in the result");
    }
  }
  if (!HasDollarKeyOnMapPath(patch)) {
    Result<json> plain =
        sluice::apiserver::ApplyStrategicMergePatch(doc, patch, sluice::apiserver::PatchMeta{});
    Require(plain.ok() && *plain == MergePatch(doc, patch),
            "without list strategies or directives a strategic merge is a merge patch");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string_view input(reinterpret_cast<const char*>(bytes), size);
  const size_t nul = input.find('\0');
  const std::string_view doc_text = nul == std::string_view::npos ? kPod : input.substr(0, nul);
  const std::string_view patch_text = nul == std::string_view::npos ? input : input.substr(nul + 1);
  const json doc = ParseGuarded(doc_text);
  const json patch = ParseGuarded(patch_text);
  if (doc.is_discarded() || patch.is_discarded()) return 0;
  FuzzJsonPatch(doc, patch);
  FuzzMergePatch(doc, patch);
  FuzzStrategicMergePatch(doc, patch);
  return 0;
}
