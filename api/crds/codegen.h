// Generates the C++ types of a custom resource from its CRD schema.
//
// crds/*.yaml is the source of truth; the structs in api/generated/ are derived from
// it by `sluice-crd-codegen` (api/tools/crd_codegen.cpp) and committed, and a test fails
// when they are out of date. Mapping:
//   object with properties     -> a struct named after its path (RolloutPoolSpecEngine)
//   object with additionalProperties -> std::map<std::string, T>
//   preserve-unknown-fields    -> nlohmann::json (free-form options)
//   int-or-string              -> IntOrString
//   array                      -> std::vector<T> (items of lists get singular names)
//   string/integer/number/boolean -> std::string / int64_t / double / bool
//   status.conditions          -> std::vector<Condition> (metav1.Condition, meta.h)
// A field that is required or has a schema default is a plain member (defaulting always fills
// it); any other field is std::optional, so absent and zero stay distinct and a JSON round trip
// of a defaulted object is exact. FromJson expects an object that passed validation; it still
// checks every type and names the field on a mismatch.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "api/crds/crds.h"

namespace sluice::api {

struct GeneratedTypes {
  std::string file_stem;  // "rollout_pool_types".
  std::string header;     // Contents of <file_stem>.h.
  std::string source;     // Contents of <file_stem>.cpp.
};

GeneratedTypes GenerateTypes(const ResourceKind& kind);

// The C++ member name the generated structs give the JSON property `json_name`: camelCase to
// snake_case, splitting before a capital that follows a lower-case letter or that starts a
// lower-case run after capitals ("maxBatchTokens" -> "max_batch_tokens", "chunkSizeMiB" ->
// "chunk_size_mi_b", "URL" -> "url"); a C++ keyword gets a trailing underscore ("operator" ->
// "operator_").
std::string CppMemberName(const std::string& json_name);

}  // namespace sluice::api
