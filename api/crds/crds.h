// The four Sluice custom resources as the operator knows them: their names and the
// openAPIV3Schema of each, read from the CRD files compiled into the binary.
//
// crds/*.yaml is the single source of truth for the API. The operator validates and defaults
// objects with exactly those schemas (and their CEL rules), so a cluster that enforces the CRDs
// and an operator that runs against a cluster that does not (or an older one) agree.
//
// Thread safety: Kinds() parses the embedded files once, on first use, and returns immutable data.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/embedded_file.h"
#include "common/status.h"

namespace sluice::api {

// Generated at build time from crds/*.yaml (api/CMakeLists.txt).
std::span<const EmbeddedFile> EmbeddedCrdFiles();

struct ResourceKind {
  std::string kind;  // "RolloutPool".
  std::string list_kind;
  std::string plural;  // "rolloutpools".
  std::string singular;
  std::vector<std::string> short_names;
  std::string file;       // "rolloutpools.yaml".
  nlohmann::json crd;     // The whole CustomResourceDefinition.
  nlohmann::json schema;  // spec.versions[v1alpha1].schema.openAPIV3Schema.
};

// Every kind, in file order. A malformed embedded CRD is a build defect: it aborts with the
// parse error on first use (and the CRD tests catch it before anything ships).
const std::vector<ResourceKind>& Kinds();

// The kind named `kind` ("Policy"), or null.
const ResourceKind* FindKind(std::string_view kind);

// Parses one CRD document into a ResourceKind (exposed for tests and tools).
Result<ResourceKind> ParseCrd(const nlohmann::json& crd, std::string file);

}  // namespace sluice::api
