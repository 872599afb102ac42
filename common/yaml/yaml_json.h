// YAML to JSON, the way Kubernetes reads manifests.
//
// Manifests are YAML; the API, the schemas and our types work on JSON. Scalars are typed with
// the YAML 1.2 core schema (what kubectl's YAML reader does for the values manifests use):
// plain `true`/`false` (any case) are booleans, `null`/`~`/empty are null, plain integers
// (decimal, 0x hex, 0o octal) and floats (including .inf and .nan) are numbers; everything
// else, and every quoted scalar, is a string. Map keys are always strings.
//
// Thread safety: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::yaml {

// The most one document may expand to once its aliases are resolved: far above any manifest or
// config (the API server takes 3 MiB bodies), far below what exhausts memory.
inline constexpr size_t kMaxExpandedNodes = size_t{1} << 20;
inline constexpr size_t kMaxExpandedScalarBytes = size_t{64} << 20;

// Converts one parsed YAML node. Errors (an alias cycle, nesting deeper than 200, a document
// expanding past the limits above, a non-scalar map key) name the line.
Result<nlohmann::json> ToJson(const YAML::Node& node);

// Parses a YAML stream of one or more documents ("---" separated). Empty documents (only
// comments) are skipped. Syntax errors give line and column (1-based).
Result<std::vector<nlohmann::json>> ParseDocuments(std::string_view text);

}  // namespace sluice::yaml
