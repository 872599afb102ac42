// Renders the API reference (docs/api.md) from the CustomResourceDefinitions in crds/*.yaml.
//
// The CRDs are the source of truth for the Sluice API; the reference is derived from them so
// that the two cannot drift: a test renders it again and compares it byte for byte with the
// committed docs/api.md, and api/tools/crd_docs.cpp writes it.
//
// Shape of the output: one `## Kind` section per CRD (Policy, RolloutPool, Dataflow, TrainerJob
// first, then any others in input order), a summary list (group, version, short names,
// subresources, printer columns), then one `### path` heading and Markdown table per object in
// the schema (`spec`, `spec.autoscaling`, `spec.placement.regions[]`, ...), pre-order, with the
// columns Field | Type | Default | Validation | Description and rows in schema property order,
// then a table of the CEL rules of the kind. The output depends only on the input nodes.
//
// Thread safety: a pure function of its arguments.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::api {

// `crds` holds one CustomResourceDefinition document per element. Returns InvalidArgument
// naming the CRD and the path when a document lacks what the reference needs (names, a
// version with an openAPIV3Schema). Never throws.
Result<std::string> RenderApiReference(const std::vector<YAML::Node>& crds);

}  // namespace sluice::api
