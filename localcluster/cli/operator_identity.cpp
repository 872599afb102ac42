#include "localcluster/cli/operator_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "api/operator_rbac.h"
#include "common/file/atomic_file.h"
#include "common/file/read_file.h"
#include "common/yaml/yaml_json.h"
#include "kube/dynamic_client.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

// Creates `object`, or replaces it (keeping its resourceVersion) when it exists.
Status CreateOrUpdate(kube::DynamicClient& client, const kube::GroupVersionResource& gvr,
                      const json& object) {
  const std::string ns = object.value("/metadata/namespace"_json_pointer, "");
  const std::string name = object.value("/metadata/name"_json_pointer, "");
  kube::ResourceClient resource = client.Resource(gvr, ns);
  Result<json> created = resource.Create(object);
  if (created.ok()) return Status::Ok();
  if (created.status().code() != StatusCode::kAlreadyExists) {
    return created.status().WithContext(gvr.resource + " " + name);
  }
  Result<json> current = resource.Get(name);
  if (!current.ok()) return current.status().WithContext(gvr.resource + " " + name);
  json updated = object;
  updated["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
  Result<json> written = resource.Update(updated);
  return written.ok() ? Status::Ok() : written.status().WithContext(gvr.resource + " " + name);
}

Result<std::string> ReadTextFile(const std::string& path) {
  Result<std::string> text = file::ReadWholeFile(path);
  if (!text.ok()) return Status::NotFound("cannot read " + path);
  return text;
}

Status WritePrivateFile(const std::string& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  return file::WriteFileAtomic(path, text, 0600);
}

}  // namespace

Result<std::string> KubeconfigWithToken(const std::string& admin_kubeconfig,
                                        const std::string& token) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<json> docs, yaml::ParseDocuments(admin_kubeconfig));
  if (docs.size() != 1 || !docs[0].is_object() || !docs[0].contains("users") ||
      !docs[0]["users"].is_array() || docs[0]["users"].empty()) {
    return Status::InvalidArgument("the kubeconfig has no users");
  }
  json config = docs[0];
  for (json& user : config["users"]) user["user"] = {{"token", token}};
  return config.dump(2) + "\n";  // JSON is YAML: kubectl and the operator read it.
}

Status EnsureOperatorIdentity(kube::RestClient& rest, const StateLayout& layout) {
  kube::DynamicClient client(rest);
  const std::string ns = api::kOperatorNamespace;
  const std::string account = api::kOperatorServiceAccount;
  SLUICE_RETURN_IF_ERROR(CreateOrUpdate(
      client, {"", "v1", "namespaces", false},
      json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}));
  SLUICE_RETURN_IF_ERROR(
      CreateOrUpdate(client, {"", "v1", "serviceaccounts", true},
                     json{{"apiVersion", "v1"},
                          {"kind", "ServiceAccount"},
                          {"metadata", {{"name", account}, {"namespace", ns}}}}));
  for (const json& object : api::OperatorRbacObjects(ns, account)) {
    const std::string kind = object["kind"];
    const bool namespaced = kind == "Role" || kind == "RoleBinding";
    std::string plural = kind;
    for (char& c : plural) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    SLUICE_RETURN_IF_ERROR(CreateOrUpdate(
        client, {"rbac.authorization.k8s.io", "v1", plural + "s", namespaced}, object));
  }
  kube::RestRequest request;
  request.method = "POST";
  request.path = "/api/v1/namespaces/" + ns + "/serviceaccounts/" + account + "/token";
  request.body = json{{"apiVersion", "authentication.k8s.io/v1"},
                      {"kind", "TokenRequest"},
                      {"spec", {{"expirationSeconds", kOperatorTokenSeconds}}}}
                     .dump();
  SLUICE_ASSIGN_OR_RETURN(json issued, rest.DoJson(request));
  const std::string token = issued.value("/status/token"_json_pointer, "");
  if (token.empty()) return Status::Internal("the TokenRequest for " + account + " has no token");
  SLUICE_ASSIGN_OR_RETURN(std::string admin, ReadTextFile(layout.Kubeconfig()));
  SLUICE_ASSIGN_OR_RETURN(std::string config, KubeconfigWithToken(admin, token));
  return WritePrivateFile(layout.OperatorKubeconfig(), config);
}

}  // namespace sluice::cli
