// Error bodies of the local API server: metav1.Status documents, the shape kubectl and client-go
// decode ("Error from server (NotFound): pods \"x\" not found").
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/openapi/field_error.h"
#include "common/status.h"

namespace sluice::apiserver {

// What a failure is about, for Status.details (kubectl prints the kind and name from it).
struct ErrorSubject {
  std::string group;
  std::string kind;  // Lower-case plural resource in kube's details ("pods"); kind for Invalid.
  std::string name;
};

// A Failure Status for `status` (non-OK): code, reason and message from the Status.
nlohmann::json StatusJson(const Status& status, const ErrorSubject& subject = {});
// A Failure Status with an explicit HTTP code and reason, for codes Status has no name for
// (405 MethodNotAllowed, 415 UnsupportedMediaType, 406 NotAcceptable).
nlohmann::json StatusJson(int code, std::string_view reason, std::string_view message,
                          const ErrorSubject& subject = {});
// {"kind": "Status", "status": "Success", ...} (deletecollection, pods/log errors aside).
nlohmann::json SuccessStatusJson(const ErrorSubject& subject = {});

// 422 Invalid with one cause per field error, as kube-apiserver reports a failed validation:
//   message: `RolloutPool.sluice.dev "x" is invalid: spec.replicas: Invalid value: ...` (several
//   errors are listed as "[a: ..., b: ...]"); details.causes[i] = {reason, message, field}, the
//   reason (FieldValueRequired, FieldValueNotSupported, ...) derived from the message's prefix.
nlohmann::json InvalidStatusJson(std::string_view qualified_kind, std::string_view name,
                                 const std::string& group, const std::string& kind,
                                 const openapi::FieldErrors& errors);

// The HTTP code a Status body carries.
inline int CodeOf(const nlohmann::json& status_json) { return status_json.value("code", 500); }

}  // namespace sluice::apiserver
