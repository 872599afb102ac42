#include "localcluster/apiserver/service_accounts.h"

#include "common/json/fields.h"
#include "localcluster/apiserver/object_rules.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kServiceAccountsKey[] = "core/serviceaccounts";
constexpr size_t kNamespacePage = 500;

}  // namespace

bool IsServiceAccounts(const ResourceInfo& info) {
  return info.group.empty() && info.plural == "serviceaccounts";
}

std::string PodServiceAccountName(const json& pod) {
  std::string name = StringAt(pod, "/spec/serviceAccountName");
  if (name.empty()) name = StringAt(pod, "/spec/serviceAccount");
  return name.empty() ? kDefaultServiceAccount : name;
}

std::string DefaultPodServiceAccount(json& pod) {
  const std::string name = PodServiceAccountName(pod);
  if (!pod.contains("spec") || !pod["spec"].is_object()) pod["spec"] = json::object();
  pod["spec"]["serviceAccountName"] = name;
  pod["spec"]["serviceAccount"] = name;
  return name;
}

Status MissingServiceAccountError(const std::string& pod, const std::string& namespace_,
                                  const std::string& service_account) {
  return Status::PermissionDenied(
      "pods \"" + pod + "\" is forbidden: error looking up service account " + namespace_ + "/" +
      service_account + ": serviceaccount \"" + service_account + "\" not found");
}

Status AdmitPodServiceAccount(Storage& storage, json& pod, const std::string& namespace_) {
  const std::string name = DefaultPodServiceAccount(pod);
  Result<Stored> account = storage.Get(ObjectKey{kServiceAccountsKey, namespace_, name});
  if (account.ok()) return Status::Ok();
  if (account.status().code() != StatusCode::kNotFound) return account.status();
  const json::json_pointer name_pointer("/metadata/name");
  const std::string pod_name = pod.contains(name_pointer) && pod.at(name_pointer).is_string()
                                   ? pod.at(name_pointer).get<std::string>()
                                   : std::string();
  return MissingServiceAccountError(pod_name, namespace_, name);
}

Status EnsureDefaultServiceAccount(Storage& storage, const ResourceInfo& service_accounts,
                                   const std::string& namespace_, Clock::WallTime now) {
  Result<Stored> ns = storage.Get(ObjectKey{"core/namespaces", "", namespace_});
  if (!ns.ok()) {
    return ns.status().code() == StatusCode::kNotFound ? Status::Ok() : ns.status();
  }
  if (ns->object.contains("/metadata/deletionTimestamp"_json_pointer)) return Status::Ok();
  SLUICE_ASSIGN_OR_RETURN(
      json account,
      PrepareCreate(service_accounts, json{{"metadata", {{"name", kDefaultServiceAccount}}}},
                    namespace_, now));
  Result<Stored> created = storage.Create(
      ObjectKey{kServiceAccountsKey, namespace_, kDefaultServiceAccount}, std::move(account));
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  return Status::Ok();
}

Status EnsureDefaultServiceAccounts(Storage& storage, const ResourceInfo& service_accounts,
                                    Clock::WallTime now) {
  std::string token;
  do {
    SLUICE_ASSIGN_OR_RETURN(ListResult page,
                            storage.List("core/namespaces", std::nullopt, kNamespacePage, token));
    for (const Stored& s : page.items) {
      const std::string name = s.object.value("/metadata/name"_json_pointer, "");
      if (name.empty()) continue;
      SLUICE_RETURN_IF_ERROR(EnsureDefaultServiceAccount(storage, service_accounts, name, now));
    }
    token = page.continue_token;
  } while (!token.empty());
  return Status::Ok();
}

}  // namespace sluice::apiserver
