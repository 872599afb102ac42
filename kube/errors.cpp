#include "kube/errors.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/json/fields.h"
#include "common/json/json_depth.h"

namespace sluice::kube {

StatusCode CodeForReason(std::string_view reason, int http_code) {
  if (reason == "BadRequest") return StatusCode::kInvalidArgument;
  if (reason == "Unauthorized") return StatusCode::kUnauthenticated;
  if (reason == "Forbidden") return StatusCode::kPermissionDenied;
  if (reason == "NotFound") return StatusCode::kNotFound;
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "Conflict") return StatusCode::kConflict;
  if (reason == "Gone" || reason == "Expired") return StatusCode::kGone;
  if (reason == "RequestEntityTooLarge") return StatusCode::kTooLarge;
  if (reason == "Invalid") return StatusCode::kUnprocessable;
  if (reason == "TooManyRequests") return StatusCode::kTooManyRequests;
  if (reason == "InternalError") return StatusCode::kInternal;
  if (reason == "ServiceUnavailable") return StatusCode::kUnavailable;
  if (reason == "ServerTimeout" || reason == "Timeout") return StatusCode::kDeadlineExceeded;
  if (reason == "MethodNotAllowed" || reason == "NotAcceptable" ||
      reason == "UnsupportedMediaType") {
    return StatusCode::kInvalidArgument;
  }
  if (http_code == 422) return StatusCode::kUnprocessable;
  if (http_code == 504) return StatusCode::kDeadlineExceeded;
  return StatusCodeForHttp(http_code);
}

StatusCode ApiError::code() const { return CodeForReason(reason, http_code); }

Status ApiError::ToStatus() const {
  std::string msg =
      message.empty() ? "the server returned HTTP " + std::to_string(http_code) : message;
  std::string field;
  if (!causes.empty()) {
    field = causes.front().field;
    if (message.empty()) {
      msg.clear();
      for (const StatusCause& c : causes) {
        if (!msg.empty()) msg += "; ";
        msg += c.field.empty() ? c.message : c.field + ": " + c.message;
      }
    }
  }
  return Status(code(), std::move(msg), std::move(field));
}

ApiError ParseApiError(int http_code, std::string_view body, std::string_view retry_after_header) {
  ApiError err;
  err.http_code = http_code;
  if (!retry_after_header.empty()) {
    int secs = 0;
    auto [p, ec] = std::from_chars(retry_after_header.data(),
                                   retry_after_header.data() + retry_after_header.size(), secs);
    if (ec == std::errc() && secs >= 0) err.retry_after = std::chrono::seconds(secs);
  }
  // The body is the server's, whatever its shape: too deep a document is kept as text, and a
  // member of another type than expected reads as absent (json::value would throw).
  nlohmann::json doc;
  if (!FirstTooDeepJson(body))
    doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && StringField(doc, "kind") == "Status") {
    auto str = [](const nlohmann::json& o, const char* k) {
      const auto it = o.find(k);
      return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    err.reason = str(doc, "reason");
    err.message = str(doc, "message");
    // Only a code HTTP could carry: another would wrap around in an int.
    if (const std::optional<int64_t> code = OptionalIntField(doc, "code");
        code && *code >= 100 && *code <= 599) {
      err.http_code = static_cast<int>(*code);
    }
    if (const auto details = doc.find("details"); details != doc.end() && details->is_object()) {
      if (const auto causes = details->find("causes");
          causes != details->end() && causes->is_array()) {
        for (const nlohmann::json& c : *causes) {
          if (!c.is_object()) continue;
          err.causes.push_back({str(c, "reason"), str(c, "message"), str(c, "field")});
        }
      }
      if (const auto ra = details->find("retryAfterSeconds");
          ra != details->end() && ra->is_number_integer() && !err.retry_after) {
        // A day at most: a wrapped or absurd value must not park a client.
        err.retry_after = std::chrono::seconds(std::clamp<int64_t>(ra->get<int64_t>(), 0, 86400));
      }
    }
  } else if (!body.empty()) {
    err.message = std::string(body.substr(0, 512));
  }
  return err;
}

bool IsNamespaceTerminating(const Status& s) {
  return IsForbidden(s) && s.message().find("because it is being terminated") != std::string::npos;
}

}  // namespace sluice::kube
