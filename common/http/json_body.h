// JSON request and response bodies, and the error body every Sluice server returns.
//
// Errors are {"error": {"code": 400, "reason": "BadRequest", "message": "...", "field":
// "spec.x"}}: the HTTP code, the Kubernetes-style reason, a sentence saying what was wrong, and
// the offending field when there is one. Clients turn such a body back into the same Status.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::http {

inline constexpr std::string_view kJsonContentType = "application/json";

// {"error": {...}} for a non-OK status.
nlohmann::json ErrorJson(const Status& status);

// Sets `res` to the error body with the status's HTTP code.
void ReplyError(httplib::Response& res, const Status& status);
// Sets `res` to `body` serialised, with `http_status`.
void ReplyJson(httplib::Response& res, const nlohmann::json& body, int http_status = 200);

// Parses a request body as a JSON object. A missing body, a non-JSON Content-Type, a syntax
// error (with its byte offset; a NUL byte anywhere is one), nesting deeper than kMaxJsonDepth
// (json_depth.h; checked before parsing) or a non-object top level is InvalidArgument with a
// message that says which.
Result<nlohmann::json> ParseJsonObject(const httplib::Request& req);
// Same, for any text (client replies, files).
Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what);

// The Status an HTTP reply stands for: OK for 2xx, otherwise the code from the HTTP status and
// the message (and field) from a Sluice error body or a Kubernetes metav1.Status body when the
// body is one, else the start of the body.
Status StatusFromReply(int http_status, std::string_view body);

}  // namespace sluice::http
