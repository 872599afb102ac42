// The JSONPath subset CRD printer columns use: `.a.b`, `.a[2]`, `.a[*].b`, `.a['key.with.dots']`.
//
// kube-apiserver evaluates additionalPrinterColumns[].jsonPath with client-go's JSONPath; the
// columns Sluice's CRDs and users write need only field access, indices and the `[*]` wildcard.
// Anything else is an error naming the construct, so a column the subset cannot serve is
// reported, not silently empty.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::apiserver {

// Every value `path` selects in `object`, in document order; empty when a field is missing.
// (A printer column shows only the first of them, as kube-apiserver does: table.h.)
Result<std::vector<nlohmann::json>> EvalJsonPath(std::string_view path,
                                                 const nlohmann::json& object);

}  // namespace sluice::apiserver
