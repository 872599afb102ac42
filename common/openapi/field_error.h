// FieldError: one problem with one field of an object, as Kubernetes reports them.
//
// `field` is a dotted path from the object root with list indices in brackets
// ("spec.placement.regions[1].name"); `message` follows kube-apiserver's phrasing
// ("Required value", "should be greater than or equal to 1", ...), so users see the same text
// from our validator, from the local API server and from a real cluster.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::openapi {

struct FieldError {
  std::string field;
  std::string message;

  friend bool operator==(const FieldError&, const FieldError&) = default;
};

using FieldErrors = std::vector<FieldError>;

// "spec.replicas" + "min" -> "spec.replicas.min"; "" + "spec" -> "spec".
std::string JoinPath(std::string_view parent, std::string_view child);
// "spec.regions" + 2 -> "spec.regions[2]".
std::string IndexPath(std::string_view parent, size_t index);
// A map key as kube's field.Path.Key writes it, unquoted: "properties" + "spec" ->
// "properties[spec]" (the notation of schema paths in CRD validation errors).
std::string KeyPath(std::string_view parent, std::string_view key);

// "field: message" per error, one per line.
std::string Describe(const FieldErrors& errors);

// Unprocessable (422) with every error listed, the first error's field as the Status field;
// OK when there are none.
Status ToStatus(const FieldErrors& errors, std::string_view what);

}  // namespace sluice::openapi
