// sluice-node's flags (also SLUICE_NODE_* environment variables and a --config flags file:
// common/config).
//
// Pure function. Thread safety: values only.
#pragma once

#include "common/config/spec.h"

namespace sluice::node {

// Every flag of sluice-node.
config::Spec NodeFlagSpec();

}  // namespace sluice::node
