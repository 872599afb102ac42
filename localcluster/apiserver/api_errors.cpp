#include "localcluster/apiserver/api_errors.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

json Details(const ErrorSubject& subject) {
  json details = json::object();
  if (!subject.name.empty()) details["name"] = subject.name;
  if (!subject.group.empty()) details["group"] = subject.group;
  if (!subject.kind.empty()) details["kind"] = subject.kind;
  return details;
}

// kube's field.ErrorType names, recognised by the message prefix our validators produce.
std::string CauseReason(std::string_view message) {
  auto starts = [&](std::string_view p) { return message.substr(0, p.size()) == p; };
  if (starts("Required value")) return "FieldValueRequired";
  if (starts("Unsupported value")) return "FieldValueNotSupported";
  if (starts("Duplicate value")) return "FieldValueDuplicate";
  if (starts("Forbidden")) return "FieldValueForbidden";
  if (starts("Too long") || starts("Too many")) return "FieldValueTooLong";
  if (starts("Invalid value")) return "FieldValueInvalid";
  if (starts("unknown field")) return "FieldValueInvalid";
  return "FieldValueInvalid";
}

}  // namespace

json StatusJson(int code, std::string_view reason, std::string_view message,
                const ErrorSubject& subject) {
  json body = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
               {"status", "Failure"}, {"message", message}, {"reason", reason},
               {"code", code}};
  json details = Details(subject);
  if (!details.empty()) body["details"] = std::move(details);
  return body;
}

json StatusJson(const Status& status, const ErrorSubject& subject) {
  std::string reason(ReasonFor(status.code()));
  // Status's 409 for an existing object is AlreadyExists; a stale write is Conflict.
  return StatusJson(HttpStatusFor(status.code()), reason, status.message(), subject);
}

json SuccessStatusJson(const ErrorSubject& subject) {
  json body = {{"kind", "Status"},
               {"apiVersion", "v1"},
               {"metadata", json::object()},
               {"status", "Success"}};
  json details = Details(subject);
  if (!details.empty()) body["details"] = std::move(details);
  return body;
}

json InvalidStatusJson(std::string_view qualified_kind, std::string_view name,
                       const std::string& group, const std::string& kind,
                       const openapi::FieldErrors& errors) {
  std::string list;
  json causes = json::array();
  for (const openapi::FieldError& e : errors) {
    const std::string line = e.field.empty() ? e.message : e.field + ": " + e.message;
    list += (list.empty() ? "" : ", ") + line;
    causes.push_back(
        {{"reason", CauseReason(e.message)}, {"message", e.message}, {"field", e.field}});
  }
  if (errors.size() > 1) list = "[" + list + "]";
  std::string message = std::string(qualified_kind) + " \"" + std::string(name) + "\" is invalid";
  if (!list.empty()) message += ": " + list;
  json body = StatusJson(422, "Invalid", message, {group, kind, std::string(name)});
  body["details"]["causes"] = std::move(causes);
  return body;
}

}  // namespace sluice::apiserver
