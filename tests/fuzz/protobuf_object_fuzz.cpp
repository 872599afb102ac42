// libFuzzer target for the Kubernetes protobuf request body decoder of the local API server
// (localcluster/apiserver/protobuf_objects.h: DecodeKubeProtobuf).
//
// Each input is a request body ("k8s\0" + runtime.Unknown). Invariants:
//  - errors are InvalidArgument (the server's 400/415), never a crash;
//  - an accepted body gives a JSON object with a non-empty string kind and a string apiVersion,
//    nested no deeper than the server accepts anywhere (kMaxJsonDepth), that serializes as strict
//    JSON (every string valid UTF-8: nlohmann's dump would throw otherwise);
//  - an unknown field appended to the envelope is skipped: the body decodes to the same object.
//
// Fuzz it with `scripts/fuzz.sh protobuf_object [seconds]` (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/json/json_depth.h"
#include "common/status.h"
#include "localcluster/apiserver/protobuf_objects.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using nlohmann::json;
using sluice::Result;

constexpr size_t kMaxInputBytes = 64 * 1024;

using sluice::fuzz::Require;

bool DumpsStrictly(const json& value) {
  try {
    (void)value.dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string_view body(reinterpret_cast<const char*>(bytes), size);
  Result<json> object = sluice::apiserver::DecodeKubeProtobuf(body);
  if (!object.ok()) {
    Require(object.status().code() == sluice::StatusCode::kInvalidArgument,
            "decode errors are InvalidArgument");
    return 0;
  }
  Require(object->is_object(), "a decoded body is an object");
  const auto kind = object->find("kind");
  const auto api_version = object->find("apiVersion");
  Require(
      kind != object->end() && kind->is_string() && !kind->get_ref<const std::string&>().empty(),
      "kind is set");
  Require(api_version != object->end() && api_version->is_string(), "apiVersion is set");
  Require(sluice::JsonValueDepth(*object) <= sluice::kMaxJsonDepth, "decoded objects are bounded");
  Require(DumpsStrictly(*object), "decoded strings are valid UTF-8");

  // Field 15, varint 0: not a field of runtime.Unknown, so skipped.
  std::string extended(body);
  extended += std::string_view("\x78\x00", 2);
  Result<json> again = sluice::apiserver::DecodeKubeProtobuf(extended);
  Require(again.ok() && *again == *object, "an unknown envelope field is skipped");
  return 0;
}
