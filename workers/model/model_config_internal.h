// Error helpers shared by model_config.cpp (config.json parsing and validation) and
// builtin_models.cpp (builtin: model URIs), so both phrase their errors the same way. Internal
// to those two files (hence its own namespace); not part of the model_config.h API.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace sluice::model::config_internal {

// An InvalidArgument whose field() is `field` (a config.json key or a builtin model parameter).
inline Status Invalid(std::string field, std::string message) {
  return Status::InvalidArgument(std::move(message), std::move(field));
}

// `s` in double quotes, as is (no escaping), for error messages.
inline std::string Quote(std::string_view s) {
  std::string out = "\"";
  out += s;
  out += '"';
  return out;
}

}  // namespace sluice::model::config_internal
