// ApiServer's delete and deletecollection: DeleteOptions, NamespaceLifecycle's undeletable
// namespaces, and what a deletion sets off (the garbage collector, a deleted CRD's resources,
// a namespace's replacement default ServiceAccount).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/http/json_body.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/garbage_collector.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/service_accounts.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::IsCrdResource;
using api_server_internal::kWatchInitialPage;
using api_server_internal::ParseSelectors;
using api_server_internal::Selectors;
using nlohmann::json;

// kube's NamespaceLifecycle admission refuses to delete these (403 Forbidden).
bool IsImmortalNamespace(const ResourceInfo& info, const std::string& name) {
  return info.group.empty() && info.plural == "namespaces" &&
         (name == "default" || name == "kube-system" || name == "kube-public");
}

}  // namespace

void ApiServer::Delete(Request& r, httplib::Response& res) {
  std::optional<json> body = r.decoded_body;
  if (!body && !r.http.body.empty()) {
    Result<json> parsed = http::ParseJsonText(r.http.body, "the DeleteOptions body");
    if (parsed.ok() && !parsed->is_object()) {
      parsed = Status::InvalidArgument("the DeleteOptions body is not a JSON object");
    }
    if (!parsed.ok()) {
      ReplyStatus(parsed.status(), &r, res);
      return;
    }
    body = std::move(*parsed);
  }
  Result<DeleteOptions> options = ParseDeleteOptions(body ? &*body : nullptr, r.http.params);
  if (!options.ok()) {
    ReplyStatus(options.status(), &r, res);
    return;
  }
  if (r.dry_run) options->dry_run = true;
  if (IsImmortalNamespace(r.resource, r.info.name)) {
    ReplyStatus(Status::PermissionDenied("namespaces \"" + r.info.name +
                                         "\" is forbidden: this namespace may not be deleted"),
                &r, res);
    return;
  }
  Result<DeleteOutcome> outcome =
      DeleteObject(*storage_, r.resource, r.key, *options, clock_->WallNow());
  if (!outcome.ok()) {
    ReplyStatus(outcome.status(), &r, res);
    return;
  }
  if (!options->dry_run) {
    gc_->Kick();
    if (outcome->finished && IsCrdResource(r.resource)) OnCrdDeleted(outcome->object);
    if (IsServiceAccounts(r.resource) && r.info.name == kDefaultServiceAccount) {
      AddDefaultServiceAccount(r.info.namespace_);
    }
  }
  ReplyObject(r, outcome->object, DeleteHttpStatus(*options, *outcome), res);
}

void ApiServer::DeleteCollection(Request& r, httplib::Response& res) {
  Result<Selectors> selectors = ParseSelectors(r.http, r.resource);
  if (!selectors.ok()) {
    ReplyStatus(selectors.status(), &r, res);
    return;
  }
  auto& [labels, fields] = *selectors;
  std::optional<json> body = r.decoded_body;
  if (!body && !r.http.body.empty()) {
    Result<json> parsed = http::ParseJsonText(r.http.body, "the DeleteOptions body");
    if (!parsed.ok()) {
      ReplyStatus(parsed.status(), &r, res);
      return;
    }
    if (parsed->is_object()) body = std::move(*parsed);
  }
  Result<DeleteOptions> options = ParseDeleteOptions(body ? &*body : nullptr, r.http.params);
  if (!options.ok()) {
    ReplyStatus(options.status(), &r, res);
    return;
  }
  if (r.dry_run) options->dry_run = true;
  std::optional<std::string> ns;
  if (r.resource.namespaced && !r.info.namespace_.empty()) ns = r.info.namespace_;
  std::vector<ObjectKey> keys;
  std::string token;
  do {
    Result<ListResult> page = storage_->List(r.key.resource, ns, kWatchInitialPage, token);
    if (!page.ok()) {
      ReplyStatus(page.status(), &r, res);
      return;
    }
    for (const Stored& s : page->items) {
      if (!labels.MatchesObject(s.object) || !fields.Matches(s.object)) continue;
      keys.push_back(ObjectKey{r.key.resource,
                               s.object.value("/metadata/namespace"_json_pointer, ""),
                               s.object.value("/metadata/name"_json_pointer, "")});
    }
    token = page->continue_token;
  } while (!token.empty());
  for (const ObjectKey& key : keys) {
    if (IsImmortalNamespace(r.resource, key.name)) continue;
    Result<DeleteOutcome> outcome =
        DeleteObject(*storage_, r.resource, key, *options, clock_->WallNow());
    if (!outcome.ok() && outcome.status().code() != StatusCode::kNotFound) {
      ReplyStatus(outcome.status(), &r, res);
      return;
    }
    if (outcome.ok() && outcome->finished && IsCrdResource(r.resource) && !options->dry_run) {
      OnCrdDeleted(outcome->object);
    }
    if (IsServiceAccounts(r.resource) && key.name == kDefaultServiceAccount && !options->dry_run) {
      AddDefaultServiceAccount(key.ns);
    }
  }
  if (!options->dry_run) gc_->Kick();
  res.set_content(SuccessStatusJson(r.Subject()).dump(), "application/json");
}

}  // namespace sluice::apiserver
