// The metadata rules every write of the local API server applies, as kube-apiserver's generic
// registry does: names, uid, creationTimestamp, generation, the status subresource split, and the
// fields an update may not change. Pure functions over JSON documents, so the HTTP handlers stay
// I/O and the rules have unit tests of their own.
//
// Thread safety: pure functions (NewUid and RandomNameSuffix use a thread-local generator).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/openapi/field_error.h"
#include "common/status.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {

// A random RFC 4122 version-4 UUID ("6f1c...-4...").
std::string NewUid();
// Five characters from kube's generateName alphabet (consonants and digits, no vowels).
std::string RandomNameSuffix();

// Problems with metadata.name for `info`: namespaces need a DNS-1123 label (<= 63), everything
// else a DNS-1123 subdomain (<= 253); a CRD's name must be "<plural>.<group>".
openapi::FieldErrors ValidateName(const ResourceInfo& info, const nlohmann::json& object);

// Everything in the object except metadata and status differs (what bumps metadata.generation).
bool SpecChanged(const nlohmann::json& before, const nlohmann::json& after);

// Prepares a new object for storage: apiVersion/kind set from `info` (InvalidArgument when the
// body names another), namespace from the request path (InvalidArgument when the body names
// another; removed for cluster-scoped resources), a name from generateName + RandomNameSuffix
// when only generateName is given, uid, creationTimestamp = now, generation 1, and the fields a
// client may not set on create dropped (resourceVersion must be empty: InvalidArgument;
// deletionTimestamp, deletionGracePeriodSeconds, managedFields removed). Resources with a
// status subresource lose any status (CRDs: status is the server's). Kind-specific initial
// state: namespaces get spec.finalizers ["kubernetes"] and status.phase Active; pods get
// status.phase Pending and the spec defaults kube fills in (restartPolicy, dnsPolicy,
// schedulerName, terminationGracePeriodSeconds, per container imagePullPolicy and
// terminationMessagePath/Policy); services get a type (ClusterIP) and port protocols.
Result<nlohmann::json> PrepareCreate(const ResourceInfo& info, nlohmann::json object,
                                     std::string_view path_namespace, Clock::WallTime now);

// Which part of the object a write addresses.
enum class WriteTarget { kMain, kStatus };

// Merges an update onto the current object (both JSON objects; `current` as stored):
//  - kMain: the body's spec and metadata are taken, except identity and server-owned fields
//    (uid, name, namespace, creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds,
//    generation) which keep the current values; resources with a status subresource keep the
//    current status; generation + 1 when SpecChanged. A body whose name or namespace differs
//    from the current object is InvalidArgument; adding a finalizer to an object being deleted
//    is Unprocessable ("Forbidden: no new finalizers can be added if the object is being
//    deleted").
//  - kStatus: only the body's status is taken; everything else stays as stored.
// The body's metadata.resourceVersion is not checked here (the caller compares it with the
// stored revision); the result carries the current one.
Result<nlohmann::json> PrepareUpdate(const ResourceInfo& info, const nlohmann::json& current,
                                     nlohmann::json updated, WriteTarget target);

// The object as served at `info`'s version: apiVersion and kind set (a CRD's versions share
// one stored object, as with conversion strategy None).
nlohmann::json ForOutput(const ResourceInfo& info, nlohmann::json object);

}  // namespace sluice::apiserver
