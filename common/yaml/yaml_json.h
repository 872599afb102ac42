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

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::yaml {

// Converts one parsed YAML node. Errors (an alias cycle, a non-scalar map key) name the line.
Result<nlohmann::json> ToJson(const YAML::Node& node);

// Parses a YAML stream of one or more documents ("---" separated). Empty documents (only
// comments) are skipped. Syntax errors give line and column (1-based).
Result<std::vector<nlohmann::json>> ParseDocuments(std::string_view text);

}  // namespace sluice::yaml
