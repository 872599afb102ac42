// Installing the Sluice CRDs (compiled in from crds/*.yaml, api/crds.h) into the API
// server, as `sluice up` does once the API server is healthy.
//
// Per CRD: create it when absent; update it (PUT, with the stored resourceVersion as the
// precondition, retried on Conflict) when its spec differs from the compiled-in one; else leave
// it. Specs are compared after dropping what an API server defaults and the files do not say
// (spec.conversion, spec.preserveUnknownFields: false), so a real kube-apiserver does not get an
// update on every `up`. Then wait until every CRD has condition Established=True.
//
// DecideCrdAction and IsEstablished are the pure decisions; the rest talks to the server through
// the dynamic client on apiextensions.k8s.io/v1 customresourcedefinitions.
//
// Thread safety: plain functions; the RestClient is thread-safe.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/dynamic_client.h"
#include "kube/rest_client.h"

namespace sluice::cli {

enum class CrdAction { kCreate, kUpdate, kUnchanged };

// "created", "updated", "unchanged".
const char* CrdActionName(CrdAction action);

// `existing` is the stored CRD (null when absent), `desired` the compiled-in one.
CrdAction DecideCrdAction(const nlohmann::json* existing, const nlohmann::json& desired);

// Whether status.conditions holds type Established with status "True".
bool IsEstablished(const nlohmann::json& crd);

// apiextensions.k8s.io/v1 customresourcedefinitions (cluster-scoped).
kube::GroupVersionResource CrdResource();

// The compiled-in CRDs, in file order.
std::vector<nlohmann::json> EmbeddedCrds();

struct CrdInstallResult {
  std::string name;  // "rolloutpools.sluice.dev".
  CrdAction action = CrdAction::kUnchanged;
};

// Creates or updates each CRD as described above. Stops at the first error, naming the CRD.
Result<std::vector<CrdInstallResult>> InstallCrds(kube::RestClient& client,
                                                  const std::vector<nlohmann::json>& crds);

// Waits until every named CRD is Established; DeadlineExceeded naming those that are not.
Status WaitCrdsEstablished(kube::RestClient& client, const std::vector<std::string>& names,
                           std::chrono::milliseconds timeout);

}  // namespace sluice::cli
