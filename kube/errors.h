// Kubernetes API errors: the metav1.Status an API server returns, as a typed value, and the
// predicates reconcilers branch on (IsNotFound, IsConflict, ...), like client-go's
// k8s.io/apimachinery/pkg/api/errors.
//
// Every kube call returns a sluice::Status; its code comes from the Status reason (falling back
// to the HTTP code), its message is the server's message, and for Invalid its field is the first
// cause's field while the message lists every cause ("spec.replicas: Invalid value: -1: must be
// >= 0; ..."). ApiError keeps the full structure for callers that need it (retry-after, every
// cause).
//
// Reason to code: BadRequest 400 InvalidArgument, Unauthorized 401 Unauthenticated, Forbidden
// 403 PermissionDenied, NotFound 404, AlreadyExists 409, Conflict 409, Gone/Expired 410,
// RequestEntityTooLarge 413 TooLarge, Invalid 422 Unprocessable, TooManyRequests 429,
// InternalError 500 Internal, ServiceUnavailable 503 Unavailable, ServerTimeout (500) and
// Timeout (504) DeadlineExceeded.
//
// Thread safety: pure functions and values.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::kube {

struct StatusCause {
  std::string type;     // "FieldValueInvalid", "FieldValueRequired", ...
  std::string message;  // "Invalid value: -1: must be >= 0"
  std::string field;    // "spec.replicas"
};

struct ApiError {
  int http_code = 0;
  std::string reason;  // "NotFound", "Conflict", ...; may be empty for non-Status bodies.
  std::string message;
  std::vector<StatusCause> causes;
  // From the Retry-After header or details.retryAfterSeconds.
  std::optional<std::chrono::seconds> retry_after;

  StatusCode code() const;
  Status ToStatus() const;
};

// Builds the error for a non-2xx reply. `retry_after_header` is the Retry-After header ("" when
// absent). A body that is not a metav1.Status still gives an error from the HTTP code.
ApiError ParseApiError(int http_code, std::string_view body, std::string_view retry_after_header);

// The StatusCode for a metav1.Status reason, or for `http_code` when the reason is unknown.
StatusCode CodeForReason(std::string_view reason, int http_code);

inline bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }
inline bool IsConflict(const Status& s) { return s.code() == StatusCode::kConflict; }
inline bool IsInvalid(const Status& s) { return s.code() == StatusCode::kUnprocessable; }
inline bool IsForbidden(const Status& s) { return s.code() == StatusCode::kPermissionDenied; }
inline bool IsUnauthorized(const Status& s) { return s.code() == StatusCode::kUnauthenticated; }
// A create refused because its namespace is being deleted (403 Forbidden, "unable to create new
// content in namespace <ns> because it is being terminated"; the cause type NamespaceTerminating
// is not kept in a Status, the message is what both the real and the local API server say).
bool IsNamespaceTerminating(const Status& s);
inline bool IsGone(const Status& s) { return s.code() == StatusCode::kGone; }
inline bool IsTooManyRequests(const Status& s) { return s.code() == StatusCode::kTooManyRequests; }
inline bool IsServerTimeout(const Status& s) { return s.code() == StatusCode::kDeadlineExceeded; }
inline bool IsInternalError(const Status& s) { return s.code() == StatusCode::kInternal; }
inline bool IsBadRequest(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }
// Errors worth retrying with backoff: 429, 500 ServerTimeout/504, 503, connection failures.
inline bool IsTransient(const Status& s) {
  return s.code() == StatusCode::kTooManyRequests || s.code() == StatusCode::kDeadlineExceeded ||
         s.code() == StatusCode::kUnavailable;
}

}  // namespace sluice::kube
