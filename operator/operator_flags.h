// sluice-operator's flags (also SLUICE_OPERATOR_* environment variables and a --config flags
// file: common/config), and reading its bind-address flags.
//
// Pure functions. Thread safety: values only.
#pragma once

#include <string>
#include <utility>

#include "common/config/spec.h"
#include "common/status.h"

namespace sluice::op {

// Every flag of sluice-operator.
config::Spec OperatorFlagSpec();

// A bind address as controller-runtime writes it: ":8080" -> ("0.0.0.0", 8080),
// "127.0.0.1:18080" -> as written. InvalidArgument naming `flag` for anything else (no colon, a
// port that is not 0..65535).
Result<std::pair<std::string, int>> BindAddress(const std::string& text, const std::string& flag);

}  // namespace sluice::op
