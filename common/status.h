// Status and Result<T>: the error type of every Sluice API.
//
// A Status is a code, a human-readable message and an optional field path (such as
// "spec.replicas" or "header.length") naming what was wrong. OK carries nothing, so success is
// cheap to return. Codes map one to one onto HTTP status codes and Kubernetes Status reasons,
// so an error can travel from a decision function to an HTTP reply without translation tables
// elsewhere. Exceptions thrown by libraries (JSON, YAML, libtorch) are caught where the library
// is called and turned into a Status; Sluice code itself does not throw across APIs.
//
// Thread safety: values; safe to copy between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/check.h"

namespace sluice {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,   // 400 BadRequest: malformed input.
  kUnauthenticated,   // 401 Unauthorized: missing or wrong credentials.
  kPermissionDenied,  // 403 Forbidden.
  kNotFound,          // 404 NotFound.
  kConflict,          // 409 Conflict: stale version, concurrent update.
  kAlreadyExists,     // 409 AlreadyExists.
  kGone,              // 410 Gone: expired resource version, compacted history.
  kTooLarge,          // 413 RequestEntityTooLarge: a length over its bound.
  kUnprocessable,     // 422 Invalid: well-formed but fails validation.
  kTooManyRequests,   // 429 TooManyRequests: rate limited, retry later.
  kCancelled,         // 499 (client closed request): the caller's cancellation token fired.
  kInternal,          // 500 InternalError.
  kCorruption,        // 500 InternalError: stored or received bytes fail a checksum.
  kUnavailable,       // 503 ServiceUnavailable: transient, retry later.
  kDeadlineExceeded,  // 504 Timeout.
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK.
  Status(StatusCode code, std::string message, std::string field = {})
      : code_(code), message_(std::move(message)), field_(std::move(field)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string msg, std::string field = {}) {
    return {StatusCode::kInvalidArgument, std::move(msg), std::move(field)};
  }
  static Status Unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status Conflict(std::string msg) { return {StatusCode::kConflict, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status Gone(std::string msg) { return {StatusCode::kGone, std::move(msg)}; }
  static Status TooLarge(std::string msg, std::string field = {}) {
    return {StatusCode::kTooLarge, std::move(msg), std::move(field)};
  }
  static Status Unprocessable(std::string msg, std::string field = {}) {
    return {StatusCode::kUnprocessable, std::move(msg), std::move(field)};
  }
  static Status TooManyRequests(std::string msg) {
    return {StatusCode::kTooManyRequests, std::move(msg)};
  }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status Corruption(std::string msg, std::string field = {}) {
    return {StatusCode::kCorruption, std::move(msg), std::move(field)};
  }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Path of the offending field ("spec.replicas"), empty when the error is not about one.
  const std::string& field() const { return field_; }

  // "InvalidArgument: spec.replicas: must be >= 0", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: message"; OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_ && a.field_ == b.field_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

// The HTTP status code for a Status code (200 for OK).
int HttpStatusFor(StatusCode code);
// The Kubernetes metav1.Status reason ("BadRequest", "NotFound", ...; "" for OK).
std::string_view ReasonFor(StatusCode code);
// The code name used in ToString ("InvalidArgument").
std::string_view CodeName(StatusCode code);
// The Status code for an HTTP status (2xx -> OK; unknown 4xx -> InvalidArgument; unknown 5xx ->
// Internal).
StatusCode StatusCodeForHttp(int http_status);

// Either a value or a non-OK Status. Access the value only after checking ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    SLUICE_CHECK(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // OK when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & {
    SLUICE_CHECK(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    SLUICE_CHECK(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    SLUICE_CHECK(ok());
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sluice

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define SLUICE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::sluice::Status sluice_status_ = (expr);        \
    if (!sluice_status_.ok()) return sluice_status_; \
  } while (0)

#define SLUICE_STATUS_CONCAT_INNER(a, b) a##b
#define SLUICE_STATUS_CONCAT(a, b) SLUICE_STATUS_CONCAT_INNER(a, b)

// `SLUICE_ASSIGN_OR_RETURN(auto x, Compute());` declares x from a Result or returns its Status.
#define SLUICE_ASSIGN_OR_RETURN(lhs, expr)                          \
  auto SLUICE_STATUS_CONCAT(sluice_result_, __LINE__) = (expr);     \
  if (!SLUICE_STATUS_CONCAT(sluice_result_, __LINE__).ok())         \
    return SLUICE_STATUS_CONCAT(sluice_result_, __LINE__).status(); \
  lhs = std::move(SLUICE_STATUS_CONCAT(sluice_result_, __LINE__)).value()
