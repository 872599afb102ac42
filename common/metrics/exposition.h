// Prometheus text exposition format, version 0.0.4: the body of a GET /metrics reply.
//
// Per family: "# HELP name text" (backslash and newline escaped), "# TYPE name type", then one
// line per sample, no timestamps. Histograms give cumulative "name_bucket{...,le="..."}" lines
// ending with le="+Inf", then "name_sum" and "name_count". Families come sorted by name and
// children by label values, so equal registries give byte-identical output; families with no
// children are left out. Label values escape backslash, double quote and newline; bytes that
// are not valid UTF-8 are replaced by U+FFFD, since Prometheus rejects such input.
//
// Thread safety: pure functions; ExposeText(Registry) may run concurrently with updates.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/metrics/registry.h"
#include "common/metrics/snapshot.h"

namespace sluice::metrics {

// The Content-Type header value for ExposeText output.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string ExposeText(const Registry& registry);
std::string ExposeText(const std::vector<FamilySnapshot>& families);

// A sample value or bucket bound as Prometheus parses it: the shortest text that reads back as
// the same double ("0.1", "1e+06", "-0"), or "+Inf", "-Inf", "NaN".
std::string FormatValue(double v);

}  // namespace sluice::metrics
