// `sluice node cordon|uncordon|fail|recover NODE`: changes to a Node object, through the API.
//
//   cordon / uncordon  merge patch {"spec":{"unschedulable":true|false}}: the scheduler (in the
//                      node agent) stops / resumes placing pods there, like `kubectl cordon`.
//   fail / recover     merge patch of the annotation sluice.dev/simulated-failure: "true" / null
//                      (removed). The node agent watches it: a failed node stops heartbeating
//                      (so its Ready condition goes Unknown) and its pods' processes are
//                      killed; recover resumes both. This is how a person rehearses a node
//                      outage on one machine.
//
// The node is read first: an action that would change nothing reports "already ..." and sends
// no patch. A missing node is NotFound `node "x" not found`.
//
// Thread safety: pure functions, plus RunNodeAction which talks to the API server.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "common/status.h"
#include "kube/rest_client.h"

namespace sluice::cli {

inline constexpr char kSimulatedFailureAnnotation[] = "sluice.dev/simulated-failure";

enum class NodeAction { kCordon, kUncordon, kFail, kRecover };

// "cordon" -> kCordon; nullopt for anything else.
std::optional<NodeAction> ParseNodeAction(std::string_view word);
const char* NodeActionName(NodeAction action);

// The merge patch (application/merge-patch+json) body of the action.
std::string NodeMergePatch(NodeAction action);

// Whether `node` (a v1 Node) is already in the state the action leads to.
bool NodeAlreadyInState(NodeAction action, const nlohmann::json& node);

// What to print: "node/gpu-a-0 cordoned", "node/gpu-a-0 already cordoned", ...
std::string NodeActionMessage(NodeAction action, const std::string& node, bool already);

// Reads the node, patches it unless already in state, prints the message to `out`.
Status RunNodeAction(kube::RestClient& client, NodeAction action, const std::string& node,
                     std::ostream& out);

}  // namespace sluice::cli
