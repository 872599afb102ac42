// sluice-apiserver's flags (also SLUICE_APISERVER_* environment variables and a --config flags
// file: common/config).
//
// Pure function. Thread safety: values only.
#pragma once

#include "common/config/spec.h"

namespace sluice::apiserver {

// Every flag of sluice-apiserver.
config::Spec ApiServerFlagSpec();

}  // namespace sluice::apiserver
