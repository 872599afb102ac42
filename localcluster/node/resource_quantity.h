// Kubernetes resource quantities ("500m", "2", "1.5", "4Gi", "1e3") as integer milli-units.
//
// Every amount in sluice-node's scheduler is held in milli-units of its resource: 1 CPU is 1000,
// 4Gi of memory is 4 * 2^30 * 1000, one GPU is 1000, one pod is 1000. Milli-units keep CPU
// fractions exact and make every resource the same integer type; the cost is a smaller range
// (the largest amount is about 9.2e15 units, i.e. 8Pi, so the "Ei" and "E" suffixes overflow
// unless the number before them is small and fractional).
//
// Thread safety: pure functions of their arguments; safe to call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::node {

// Resource name ("cpu", "memory", "nvidia.com/gpu", "pods") -> amount in milli-units.
using ResourceList = std::map<std::string, int64_t>;

// Parses a Kubernetes quantity into milli-units, following kube's grammar:
//   [+-] digits [. digits] [suffix]   (at least one digit; "5." and ".5" are allowed)
// where suffix is one of the binary suffixes Ki Mi Gi Ti Pi Ei (powers of 1024), the decimal
// suffixes m "" k M G T P E (powers of 1000; "m" is milli) or a decimal exponent e<int> / E<int>
// ("1e3" is 1000, "1E-3" is 1m; a lone "E" is exa). Examples: "500m" -> 500, "2" -> 2000,
// "1.5" -> 1500, "4Gi" -> 4294967296000, "1G" -> 1000000000000, "1e3" -> 1000000.
// Amounts finer than a milli-unit are rounded up (away from zero), as kube's MilliValue does:
// "0.1m" -> 1, "-0.1m" -> -1. Exact: no floating point is involved at any stage.
// Errors: InvalidArgument naming the text for malformed input (empty, whitespace, unknown
// suffix) or an amount whose milli-units do not fit in int64.
Result<int64_t> ParseQuantityMilli(std::string_view text);

// Formats milli-units for display, in a form ParseQuantityMilli reads back to the same amount:
//   not a whole unit -> "<milli>m" ("500m", "1500m");
//   binary == false  -> the whole number of units ("2", "1500");
//   binary == true   -> the largest exact binary suffix when the amount is at least 1Ki
//                       ("4Gi", "1536Mi"), else the largest exact decimal suffix when at least
//                       1k ("1G", "2500k"), else the whole number ("512").
// Use binary for memory-like resources (memory, ephemeral-storage, hugepages-*).
std::string FormatQuantityMilli(int64_t milli, bool binary);

// Parses a ResourceList map such as `{"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}`.
// Values may be JSON strings (any quantity) or JSON numbers (read as the quantity their decimal
// text spells: 2 -> 2000, 0.5 -> 500). Null means an empty list. Errors: InvalidArgument when
// `obj` is not an object, a value is neither a string nor a number, a value does not parse, or a
// value is negative (kube's validation rejects negative requests, limits and capacities); the
// message names the resource.
Result<ResourceList> ParseResourceList(const nlohmann::json& obj);

}  // namespace sluice::node
