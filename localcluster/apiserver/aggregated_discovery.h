// Aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList): every group, version,
// resource and subresource in one response to GET /api or GET /apis, so kubectl needs two
// requests instead of one per group-version.
//
// kubectl v1.32 asks for it with
//   Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,
//           application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,
//           application/json
// and decides how to decode the body from the response's Content-Type alone: only a Content-Type
// of kAggregatedDiscoveryContentType (parameters in any order) makes it read the body as an
// APIGroupDiscoveryList; anything else is read as the legacy APIVersions / APIGroupList
// (discovery.h). It uses the resources only when both /api and /apis answered aggregated.
//
// Thread safety: pure functions of the registry passed in.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {

// The Content-Type an aggregated discovery response must carry.
inline constexpr std::string_view kAggregatedDiscoveryContentType =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

// Whether an Accept header asks for aggregated discovery v2: one of its media ranges is
// application/json with g=apidiscovery.k8s.io, v=v2 and as=APIGroupDiscoveryList (other
// parameters such as profile=nopeer allowed, q=0 refused). A plain application/json or */* does
// not: those clients get the legacy documents.
bool WantsAggregatedDiscovery(std::string_view accept_header);

// GET /api (core = true: one item, the core group, named "") or GET /apis (core = false: every
// other group, in ResourceRegistry::Groups() order) as an APIGroupDiscoveryList. Versions are
// listed preferred first, each with freshness "Current"; resources carry scope, singularResource,
// verbs, shortNames, categories, responseKind and their subresources (status, scale, log).
nlohmann::json AggregatedDiscovery(const ResourceRegistry& registry, bool core);

}  // namespace sluice::apiserver
