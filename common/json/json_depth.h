// The nesting depth of JSON text, measured before it is parsed.
//
// nlohmann::json parses iteratively, but copying, dumping and comparing a value recurse once per
// level, as do the API server's own walks (validation, defaulting, protobuf encoding): 1 MB of
// "[[[[...]]]]" parses into a value that overflows a worker thread's stack when it is next
// copied. Every parser of outside bytes checks the depth first and refuses deeper text.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace sluice {

// The deepest nesting any Sluice component accepts in a JSON document: far above what real
// objects use (a Kubernetes object with a deep CRD schema nests about 30 levels) and far below
// what a thread's stack survives. Go's encoding/json, which the Kubernetes API server uses,
// refuses 10,000 levels; Sluice's recursions use larger frames, so it stops sooner.
inline constexpr size_t kMaxJsonDepth = 1000;

// The byte offset of the first '[' or '{' (outside strings) that opens level `max_depth` + 1,
// or nullopt when the text never nests deeper than `max_depth`. Strings and escapes are skipped
// as JSON defines them; malformed text is measured as far as it goes (the parser reports it).
std::optional<size_t> FirstTooDeepJson(std::string_view text, size_t max_depth = kMaxJsonDepth);

// How deeply `value` nests: 0 for a scalar, 1 for an array or object of scalars (empty ones
// included), and so on. Walks with its own stack, so any depth is safe to measure: for values
// built in memory (a JSON patch's copy doubles a document's depth) rather than parsed from text.
size_t JsonValueDepth(const nlohmann::json& value);

}  // namespace sluice
