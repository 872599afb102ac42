// `sluice node cordon|uncordon|fail|recover NODE`: node_actions.h through the kubeconfig of the
// state directory. Exit 1 (with `node "x" not found` and the like) when it cannot be done.
//
// Thread safety: a plain function.
#pragma once

#include <ostream>

#include "localcluster/cli/command_line.h"

namespace sluice::cli {

int RunNode(const NodeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
