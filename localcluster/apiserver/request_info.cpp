#include "localcluster/apiserver/request_info.h"

#include <vector>

namespace sluice::apiserver {
namespace {

std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string_view::npos) next = path.size();
    if (next > pos) out.emplace_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

}  // namespace

Result<RequestInfo> ParseRequest(std::string_view method, std::string_view path,
                                 std::string_view watch_param) {
  RequestInfo info;
  info.path = std::string(path);
  const std::vector<std::string> parts = Split(path);
  if (parts.empty() || (parts[0] != "api" && parts[0] != "apis")) return info;
  info.api_prefix = parts[0];
  size_t i = 1;
  if (info.api_prefix == "api") {
    if (parts.size() < 2) return info;  // /api: discovery.
    info.version = parts[1];
    i = 2;
  } else {
    if (parts.size() < 3) return info;  // /apis, /apis/<group>: discovery.
    info.group = parts[1];
    info.version = parts[2];
    i = 3;
  }
  if (parts.size() == i) return info;  // /api/v1, /apis/g/v: discovery.
  info.is_resource_request = true;
  std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(i), parts.end());
  // /namespaces/<ns>/<resource>/... addresses namespaced resources; /namespaces,
  // /namespaces/<name> and /namespaces/<name>/{status,finalize} address the namespace objects
  // themselves (with namespace_ set to the name, as kube-apiserver does).
  if (rest[0] == "namespaces" && rest.size() >= 2) {
    info.namespace_ = rest[1];
    if (rest.size() >= 3 && rest[2] != "status" && rest[2] != "finalize") {
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (rest.size() > 3) {
    return Status::InvalidArgument("path " + std::string(path) + " has too many segments");
  }
  info.resource = rest[0];
  if (rest.size() >= 2) info.name = rest[1];
  if (rest.size() == 3) info.subresource = rest[2];

  const bool collection = info.name.empty();
  const bool watch = watch_param == "true" || watch_param == "1";
  if (method == "GET" || method == "HEAD") {
    info.verb = collection ? (watch ? "watch" : "list") : (watch ? "watch" : "get");
  } else if (method == "POST") {
    info.verb = "create";
  } else if (method == "PUT") {
    info.verb = "update";
  } else if (method == "PATCH") {
    info.verb = "patch";
  } else if (method == "DELETE") {
    info.verb = collection ? "deletecollection" : "delete";
  } else {
    return Status(StatusCode::kInvalidArgument,
                  "method " + std::string(method) + " is not supported");
  }
  return info;
}

}  // namespace sluice::apiserver
