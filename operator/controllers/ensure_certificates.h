// The I/O around namespace_certificates.h's decisions, shared by the controllers whose components
// serve HTTPS (the Dataflow's, the TrainerJob's): read the cache, write the API, record Events.
//
// Ownership: borrows the client, informer and recorder for the call. Thread safety: as safe as
// they are (the operator's are safe for concurrent calls); two controllers racing to make the
// namespace CA both end with the one that was written first.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/tls/certificates.h"
#include "kube/dynamic_client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"

namespace sluice::controllers {

// The namespace's CA (`ns`): the cached one when good, else a new one written to the API (a
// replacement records a Normal Event "CertificateAuthorityReplaced" on `about`). When another
// controller wrote one first, that one. InvalidArgument naming the Secret when the one there
// cannot be used (nothing is overwritten: a human must look).
Result<tls::CertifiedKey> EnsureNamespaceCa(kube::DynamicClient& client, kube::Informer& secrets,
                                            kube::EventRecorder& events,
                                            const nlohmann::json& about, const std::string& ns,
                                            Clock::WallTime now);

// The serving Secret `metadata` describes (name, namespace, labels, owner), issued from `ca` for
// `hosts` under `common_name` when ServingSecretProblem says so; a reissue records a Normal Event
// "CertificateReissued" on `about`.
Status EnsureServingSecret(kube::DynamicClient& client, kube::Informer& secrets,
                           kube::EventRecorder& events, const nlohmann::json& about,
                           const nlohmann::json& metadata, const std::vector<std::string>& hosts,
                           const std::string& common_name, const tls::CertifiedKey& ca,
                           Clock::WallTime now);

}  // namespace sluice::controllers
