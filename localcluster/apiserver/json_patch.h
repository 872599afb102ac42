// JSON Patch (RFC 6902) and JSON Pointer (RFC 6901): the `application/json-patch+json` patch
// type of the local API server (`kubectl patch --type json`).
//
// A patch is a JSON array of operations {"op", "path", ["value" | "from"]} with op one of add,
// remove, replace, move, copy, test, applied in order. Pointers use "~0" for '~' and "~1" for
// '/'; "-" names the position past the end of an array (add only). Application is atomic: the
// result is built on a copy, so on any error the caller's document is untouched.
//
// Errors name the operation (0-based index), its op and path, then what went wrong, e.g.
//   operation 1 (replace "/spec/x"): unable to find key "x" in "/spec"
//   operation 2 (test "/a"): test operation failed: value at "/a" is 1, expected 2
// A malformed patch document (not an array, missing/ill-typed members, unknown op, bad pointer
// syntax) is InvalidArgument (400 BadRequest); a well-formed patch that does not apply to the
// document is Unprocessable (422, the Status kube-apiserver answers with "the server rejected
// our request due to an error in our request"; the HTTP layer adds that outer text).
//
// Ownership: takes const references, returns new values.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::apiserver {

// Splits a JSON Pointer into unescaped reference tokens ("" -> {}, "/a~1b/0" -> {"a/b", "0"}).
// InvalidArgument when it is neither empty nor starts with '/', or has a bad '~' escape.
Result<std::vector<std::string>> ParseJsonPointer(std::string_view pointer);

// The pointer text for reference tokens (escaping '~' and '/').
std::string FormatJsonPointer(const std::vector<std::string>& tokens);

// Bounds, as kube-apiserver's: a patch holds at most kMaxJsonPatchOperations operations
// (InvalidArgument), and its copy operations add at most kMaxJsonPatchCopiedBytes, serialized,
// to the document (Unprocessable): each copy may double it.
inline constexpr size_t kMaxJsonPatchOperations = 10000;
inline constexpr size_t kMaxJsonPatchCopiedBytes = size_t{3} << 20;

// Applies an RFC 6902 patch document to `target` and returns the patched copy.
Result<nlohmann::json> ApplyJsonPatch(const nlohmann::json& target, const nlohmann::json& patch);

}  // namespace sluice::apiserver
