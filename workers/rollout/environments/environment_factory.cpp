// ParseEnvironmentSpec and MakeEnvironment (environment.h): the one place that knows every kind
// of environment.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/http/url.h"
#include "workers/rollout/environments/calculator_environment.h"
#include "workers/rollout/environments/environment.h"
#include "workers/rollout/environments/http_environment.h"
#include "workers/rollout/environments/python_environment.h"

namespace sluice::rollout {

namespace {

using nlohmann::json;

constexpr std::string_view kField = "workflow.environment";
constexpr int64_t kMinTimeoutSeconds = 1;
constexpr int64_t kMaxTimeoutSeconds = 3600;

Status Invalid(std::string_view key, std::string message) {
  return Status::InvalidArgument(std::move(message), std::string(kField) + "." + std::string(key));
}

std::string TimeoutRange() {
  return "must be between " + std::to_string(kMinTimeoutSeconds) + " and " +
         std::to_string(kMaxTimeoutSeconds);
}

// What both a parsed spec and one built in code must satisfy.
Status Validate(const EnvironmentSpec& spec) {
  if (spec.builtin.empty() && spec.url.empty()) {
    return Invalid("builtin", "set exactly one of builtin and url (neither is set)");
  }
  if (!spec.builtin.empty() && !spec.url.empty()) {
    return Invalid("url", "set exactly one of builtin and url (both are set)");
  }
  if (!spec.builtin.empty() && spec.builtin != "calculator" && spec.builtin != "python") {
    return Invalid("builtin", "unknown built-in environment \"" + spec.builtin.substr(0, 64) +
                                  "\"; expected calculator or python");
  }
  if (spec.timeout.count() < kMinTimeoutSeconds || spec.timeout.count() > kMaxTimeoutSeconds) {
    return Invalid("timeoutSeconds",
                   TimeoutRange() + ", got " + std::to_string(spec.timeout.count()));
  }
  return Status::Ok();
}

Status ParseString(const json& value, std::string_view key, std::string* out) {
  if (!value.is_string()) {
    return Invalid(key, "must be a string, got " + std::string(value.type_name()));
  }
  *out = value.get<std::string>();
  return Status::Ok();
}

Status ParseTimeout(const json& value, std::chrono::seconds* out) {
  if (!value.is_number_integer()) {
    return Invalid("timeoutSeconds", "must be an integer, got " + std::string(value.type_name()));
  }
  // Compared as the type it was parsed as: get<int64_t> of 2^64-1 would be -1.
  const bool in_range = value.is_number_unsigned()
                            ? value.get<uint64_t>() >= static_cast<uint64_t>(kMinTimeoutSeconds) &&
                                  value.get<uint64_t>() <= static_cast<uint64_t>(kMaxTimeoutSeconds)
                            : value.get<int64_t>() >= kMinTimeoutSeconds &&
                                  value.get<int64_t>() <= kMaxTimeoutSeconds;
  if (!in_range) return Invalid("timeoutSeconds", TimeoutRange() + ", got " + value.dump());
  *out = std::chrono::seconds(value.get<int64_t>());
  return Status::Ok();
}

}  // namespace

Result<EnvironmentSpec> ParseEnvironmentSpec(const json& json) {
  if (!json.is_object()) {
    return Status::InvalidArgument(
        "must be an object with builtin or url, got " + std::string(json.type_name()),
        std::string(kField));
  }
  EnvironmentSpec spec;
  for (const auto& [key, value] : json.items()) {
    if (value.is_null()) continue;  // Unset, as some writers spell an omitted optional field.
    Status status;
    if (key == "builtin") {
      status = ParseString(value, key, &spec.builtin);
    } else if (key == "url") {
      status = ParseString(value, key, &spec.url);
      if (status.ok()) {
        Result<http::Url> url = http::ParseBaseUrl(spec.url);
        if (!url.ok()) status = Invalid(key, url.status().message());
      }
    } else if (key == "timeoutSeconds") {
      status = ParseTimeout(value, &spec.timeout);
    } else if (key == "tokenSecretRef") {
      // The operator mounts that Secret key and passes it as --environment-token-file (the
      // worker's MakeEnvironment bearer token); nothing here reads the Secret itself.
      if (!value.is_object()) {
        status = Invalid(key, "must be an object, got " + std::string(value.type_name()));
      }
    } else {
      status =
          Invalid(key, "unknown field; expected builtin, url, timeoutSeconds or tokenSecretRef");
    }
    SLUICE_RETURN_IF_ERROR(status);
  }
  SLUICE_RETURN_IF_ERROR(Validate(spec));
  return spec;
}

Result<std::unique_ptr<Environment>> MakeEnvironment(const EnvironmentSpec& spec,
                                                     const std::string& bearer_token) {
  SLUICE_RETURN_IF_ERROR(Validate(spec));
  if (spec.builtin == "calculator")
    return std::unique_ptr<Environment>(new CalculatorEnvironment());
  if (spec.builtin == "python") {
    return std::unique_ptr<Environment>(new PythonEnvironment(spec.timeout));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<HttpEnvironment> environment,
                          HttpEnvironment::Create(spec.url, spec.timeout, bearer_token));
  return std::unique_ptr<Environment>(std::move(environment));
}

}  // namespace sluice::rollout
