#include "localcluster/cli/node_actions.h"

#include "kube/dynamic_client.h"
#include "kube/errors.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

bool Unschedulable(const json& node) {
  auto spec = node.find("spec");
  if (spec == node.end() || !spec->is_object()) return false;
  auto u = spec->find("unschedulable");
  return u != spec->end() && u->is_boolean() && u->get<bool>();
}

bool SimulatedFailure(const json& node) {
  const json::json_pointer path("/metadata/annotations");
  if (!node.contains(path) || !node[path].is_object()) return false;
  auto a = node[path].find(kSimulatedFailureAnnotation);
  return a != node[path].end() && a->is_string() && a->get<std::string>() == "true";
}

}  // namespace

std::optional<NodeAction> ParseNodeAction(std::string_view word) {
  if (word == "cordon") return NodeAction::kCordon;
  if (word == "uncordon") return NodeAction::kUncordon;
  if (word == "fail") return NodeAction::kFail;
  if (word == "recover") return NodeAction::kRecover;
  return std::nullopt;
}

const char* NodeActionName(NodeAction action) {
  switch (action) {
    case NodeAction::kCordon:
      return "cordon";
    case NodeAction::kUncordon:
      return "uncordon";
    case NodeAction::kFail:
      return "fail";
    case NodeAction::kRecover:
      return "recover";
  }
  return "?";
}

std::string NodeMergePatch(NodeAction action) {
  json patch;
  switch (action) {
    case NodeAction::kCordon:
      patch["spec"]["unschedulable"] = true;
      break;
    case NodeAction::kUncordon:
      patch["spec"]["unschedulable"] = false;
      break;
    case NodeAction::kFail:
      patch["metadata"]["annotations"][kSimulatedFailureAnnotation] = "true";
      break;
    case NodeAction::kRecover:
      patch["metadata"]["annotations"][kSimulatedFailureAnnotation] = nullptr;
      break;
  }
  return patch.dump();
}

bool NodeAlreadyInState(NodeAction action, const json& node) {
  switch (action) {
    case NodeAction::kCordon:
      return Unschedulable(node);
    case NodeAction::kUncordon:
      return !Unschedulable(node);
    case NodeAction::kFail:
      return SimulatedFailure(node);
    case NodeAction::kRecover:
      return !SimulatedFailure(node);
  }
  return false;
}

std::string NodeActionMessage(NodeAction action, const std::string& node, bool already) {
  std::string state;
  switch (action) {
    case NodeAction::kCordon:
      state = "cordoned";
      break;
    case NodeAction::kUncordon:
      state = "uncordoned";
      break;
    case NodeAction::kFail:
      state = already ? "failed (simulated)" : "marked failed (simulated)";
      break;
    case NodeAction::kRecover:
      state = already ? "healthy (no simulated failure)" : "recovered";
      break;
  }
  return "node/" + node + (already ? " already " : " ") + state;
}

Status RunNodeAction(kube::RestClient& client, NodeAction action, const std::string& node,
                     std::ostream& out) {
  kube::ResourceClient nodes(client, {"", "v1", "nodes", false}, "");
  Result<json> current = nodes.Get(node);
  if (!current.ok()) {
    if (kube::IsNotFound(current.status())) {
      return Status::NotFound("node \"" + node + "\" not found");
    }
    return current.status().WithContext("reading node \"" + node + "\"");
  }
  if (NodeAlreadyInState(action, *current)) {
    out << NodeActionMessage(action, node, true) << "\n";
    return Status::Ok();
  }
  Result<json> patched = nodes.Patch(node, kube::PatchType::kMerge, NodeMergePatch(action));
  if (!patched.ok()) {
    if (kube::IsNotFound(patched.status())) {
      return Status::NotFound("node \"" + node + "\" not found");
    }
    return patched.status().WithContext("patching node \"" + node + "\"");
  }
  out << NodeActionMessage(action, node, false) << "\n";
  return Status::Ok();
}

}  // namespace sluice::cli
