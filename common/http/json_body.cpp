#include "common/http/json_body.h"

#include <optional>

#include "common/json/fields.h"
#include "common/json/json_depth.h"

namespace sluice::http {

nlohmann::json ErrorJson(const Status& status) {
  nlohmann::json error = {{"code", HttpStatusFor(status.code())},
                          {"reason", std::string(ReasonFor(status.code()))},
                          {"message", status.message()}};
  if (!status.field().empty()) error["field"] = status.field();
  return {{"error", std::move(error)}};
}

void ReplyError(httplib::Response& res, const Status& status) {
  res.status = HttpStatusFor(status.code());
  res.set_content(ErrorJson(status).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  std::string(kJsonContentType));
}

void ReplyJson(httplib::Response& res, const nlohmann::json& body, int http_status) {
  res.status = http_status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  std::string(kJsonContentType));
}

Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what) {
  if (text.empty()) return Status::InvalidArgument(std::string(what) + " is empty; expected JSON");
  // nlohmann's lexer takes a NUL byte for the end of input, so `{}\0anything` would parse as
  // `{}`. JSON has no place for one (in a string it must be escaped as \u0000).
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Status::InvalidArgument(std::string(what) + " is not valid JSON: a NUL byte at byte " +
                                   std::to_string(nul));
  }
  if (const std::optional<size_t> at = FirstTooDeepJson(text)) {
    return Status::InvalidArgument(std::string(what) + " nests deeper than " +
                                   std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                   std::to_string(*at) + ")");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::InvalidArgument(std::string(what) + " is not valid JSON: syntax error at byte " +
                                   std::to_string(e.byte) + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a value nlohmann cannot hold, e.g. 1e999 (out_of_range.406).
    return Status::InvalidArgument(std::string(what) + " is not valid JSON: " + e.what());
  }
}

Result<nlohmann::json> ParseJsonObject(const httplib::Request& req) {
  if (req.has_header("Content-Type")) {
    const std::string type = req.get_header_value("Content-Type");
    if (type.rfind("application/json", 0) != 0 && type.find("+json") == std::string::npos) {
      return Status::InvalidArgument("Content-Type \"" + type +
                                     "\" is not supported; send application/json");
    }
  }
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json value, ParseJsonText(req.body, "request body"));
  if (!value.is_object()) {
    return Status::InvalidArgument(std::string("request body must be a JSON object, got ") +
                                   value.type_name());
  }
  return value;
}

Status StatusFromReply(int http_status, std::string_view body) {
  const StatusCode code = StatusCodeForHttp(http_status);
  if (code == StatusCode::kOk) return Status::Ok();
  // The body is the peer's, whatever its shape: too deep a document is echoed as text, and a
  // member of another type than expected reads as absent (json::value would throw).
  nlohmann::json value;
  if (!FirstTooDeepJson(body)) value = nlohmann::json::parse(body, nullptr, false);
  if (value.is_object()) {
    // Sluice's own error body.
    if (auto it = value.find("error"); it != value.end() && it->is_object()) {
      std::string message = StringField(*it, "message");
      std::string field = StringField(*it, "field");
      if (StringField(*it, "reason") == "AlreadyExists") {
        return Status(StatusCode::kAlreadyExists, std::move(message), std::move(field));
      }
      return Status(code, std::move(message), std::move(field));
    }
    // A Kubernetes metav1.Status.
    if (StringField(value, "kind") == "Status") {
      const StatusCode k8s_code =
          StringField(value, "reason") == "AlreadyExists" ? StatusCode::kAlreadyExists : code;
      return Status(k8s_code, StringField(value, "message"));
    }
  }
  constexpr size_t kMaxEcho = 512;
  std::string message = "HTTP " + std::to_string(http_status);
  if (!body.empty()) {
    message += ": ";
    message += std::string(body.substr(0, kMaxEcho));
  }
  return Status(code, std::move(message));
}

}  // namespace sluice::http
