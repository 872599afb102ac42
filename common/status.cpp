#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace sluice {
namespace internal {

void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "SLUICE_CHECK failed: %s at %s:%d\n", condition, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kGone:
      return 410;
    case StatusCode::kTooLarge:
      return 413;
    case StatusCode::kUnprocessable:
      return 422;
    case StatusCode::kTooManyRequests:
      return 429;
    case StatusCode::kCancelled:
      return 499;
    case StatusCode::kInternal:
      return 500;
    case StatusCode::kCorruption:
      return 500;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
  }
  return 500;
}

std::string_view ReasonFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "";
    case StatusCode::kInvalidArgument:
      return "BadRequest";
    case StatusCode::kUnauthenticated:
      return "Unauthorized";
    case StatusCode::kPermissionDenied:
      return "Forbidden";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kGone:
      return "Gone";
    case StatusCode::kTooLarge:
      return "RequestEntityTooLarge";
    case StatusCode::kUnprocessable:
      return "Invalid";
    case StatusCode::kTooManyRequests:
      return "TooManyRequests";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInternal:
      return "InternalError";
    case StatusCode::kCorruption:
      return "InternalError";
    case StatusCode::kUnavailable:
      return "ServiceUnavailable";
    case StatusCode::kDeadlineExceeded:
      return "Timeout";
  }
  return "InternalError";
}

std::string_view CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kUnauthenticated:
      return "Unauthenticated";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kGone:
      return "Gone";
    case StatusCode::kTooLarge:
      return "TooLarge";
    case StatusCode::kUnprocessable:
      return "Unprocessable";
    case StatusCode::kTooManyRequests:
      return "TooManyRequests";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInternal:
      return "Internal";
    case StatusCode::kCorruption:
      return "Corruption";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
  }
  return "Internal";
}

StatusCode StatusCodeForHttp(int http_status) {
  if (http_status >= 200 && http_status < 300) return StatusCode::kOk;
  switch (http_status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kConflict;
    case 410:
      return StatusCode::kGone;
    case 413:
      return StatusCode::kTooLarge;
    case 422:
      return StatusCode::kUnprocessable;
    case 429:
      return StatusCode::kTooManyRequests;
    case 499:
      return StatusCode::kCancelled;
    case 503:
      return StatusCode::kUnavailable;
    case 504:
      return StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  return http_status < 500 ? StatusCode::kInvalidArgument : StatusCode::kInternal;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code_));
  out += ": ";
  if (!field_.empty()) {
    out += field_;
    out += ": ";
  }
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg), field_);
}

}  // namespace sluice
