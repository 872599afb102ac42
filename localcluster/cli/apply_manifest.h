// Applying one manifest document to the API server (the I/O half of manifest.h): resolve its
// kind through discovery, then create it, or merge-patch it (ApplyPatch) when it exists and the
// patch changes it.
//
// Kind resolution: apiVersion gives group and version, DiscoveryClient::Find the resource of
// that kind (sluice.dev/v1alpha1 CRDs, core v1 ConfigMap, Secret, Service, ...). A namespaced
// resource goes to the document's metadata.namespace, else `default_namespace`; a cluster-scoped
// one to none. Status is never written (dropped from a created object; not in the patch).
//
// Errors name the document ("FILE document N (Kind name): ..."); a document the server rejects
// carries the server's message, which names the field ("spec.steps: Invalid value: ...").
//
// Ownership: the clients are the caller's. Thread safety: a plain function.
#pragma once

#include <string>

#include "common/status.h"
#include "kube/discovery.h"
#include "kube/dynamic_client.h"
#include "kube/rest_client.h"
#include "localcluster/cli/manifest.h"

namespace sluice::cli {

struct AppliedObject {
  std::string kind;
  kube::GroupVersionResource gvr;
  std::string namespace_;  // "" for cluster-scoped resources.
  std::string name;
  std::string display;  // DisplayName: "trainerjob.sluice.dev/tiny".
  ApplyAction action = ApplyAction::kUnchanged;
  ExperimentRole role = ExperimentRole::kNone;
};

Result<AppliedObject> ApplyDocument(kube::RestClient& client, kube::DiscoveryClient& discovery,
                                    const ManifestDocument& document,
                                    const std::string& default_namespace);

}  // namespace sluice::cli
