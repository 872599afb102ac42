// ApiServer's get and list: one object or a page of a selection, as JSON or as the Table of
// `kubectl get` (CRD printer columns or the built-in printers).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/builtin_table.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/storage.h"
#include "localcluster/apiserver/table.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::IncludeFrom;
using api_server_internal::Param;
using api_server_internal::ParseRevision;
using api_server_internal::ParseSelectors;
using api_server_internal::ResourceVersionOf;
using api_server_internal::Selectors;
using api_server_internal::TableFor;
using nlohmann::json;

}  // namespace

namespace api_server_internal {

// The Table for `objects` of `resource` (CRD printer columns or the built-in printers).
Result<json> TableFor(const ResourceInfo& resource, const std::optional<json>& crd,
                      const std::vector<json>& objects, Clock::WallTime now,
                      const std::string& resource_version, IncludeObject include) {
  if (crd) {
    return BuildTable(PrinterColumnsFor(*crd, resource.version), objects, now, resource_version,
                      include);
  }
  return BuildBuiltinTable(resource, objects, now, resource_version, include);
}

}  // namespace api_server_internal

void ApiServer::Get(Request& r, httplib::Response& res) {
  Result<Stored> stored = storage_->Get(r.key);
  if (!stored.ok()) {
    ReplyStatus(stored.status(), &r, res);
    return;
  }
  if (r.table) {
    Result<json> table =
        TableFor(r.resource, r.crd, {ForOutput(r.resource, stored->object)}, clock_->WallNow(),
                 ResourceVersionOf(stored->object), IncludeFrom(r.http));
    if (!table.ok()) {
      ReplyStatus(table.status(), &r, res);
      return;
    }
    res.set_content(table->dump(), "application/json");
    return;
  }
  ReplyObject(r, stored->object, 200, res);
}

void ApiServer::List(Request& r, httplib::Response& res) {
  Result<Selectors> selectors = ParseSelectors(r.http, r.resource);
  if (!selectors.ok()) {
    ReplyStatus(selectors.status(), &r, res);
    return;
  }
  auto& [labels, fields] = *selectors;
  size_t limit = 0;
  if (const std::string l = Param(r.http, "limit"); !l.empty()) {
    Result<uint64_t> parsed = ParseRevision(l, "limit");
    if (!parsed.ok()) {
      ReplyStatus(Status::InvalidArgument("limit: Invalid value: \"" + l + "\""), &r, res);
      return;
    }
    limit = static_cast<size_t>(*parsed);
  }
  std::optional<std::string> ns;
  if (r.resource.namespaced && !r.info.namespace_.empty()) ns = r.info.namespace_;
  // A field selector on metadata.namespace narrows an all-namespaces list.
  std::string ns_value;
  if (!ns && r.resource.namespaced && fields.RequiresExactMatch("metadata.namespace", &ns_value)) {
    ns = ns_value;
  }
  Result<ListResult> page = storage_->List(r.key.resource, ns, limit, Param(r.http, "continue"));
  if (!page.ok()) {
    // kube answers an expired or foreign continue token with 410 or 400; ours are never expired.
    ReplyStatus(page.status(), &r, res);
    return;
  }
  std::vector<json> items;
  items.reserve(page->items.size());
  for (Stored& s : page->items) {
    if (!labels.MatchesObject(s.object) || !fields.Matches(s.object)) continue;
    items.push_back(ForOutput(r.resource, std::move(s.object)));
  }
  const std::string rv = std::to_string(page->revision);
  if (r.table) {
    Result<json> table =
        TableFor(r.resource, r.crd, items, clock_->WallNow(), rv, IncludeFrom(r.http));
    if (!table.ok()) {
      ReplyStatus(table.status(), &r, res);
      return;
    }
    if (!page->continue_token.empty()) (*table)["metadata"]["continue"] = page->continue_token;
    res.set_content(table->dump(), "application/json");
    return;
  }
  json list = {{"apiVersion", r.resource.ApiVersion()},
               {"kind", r.resource.list_kind},
               {"metadata", {{"resourceVersion", rv}}},
               {"items", std::move(items)}};
  if (!page->continue_token.empty()) list["metadata"]["continue"] = page->continue_token;
  res.set_content(list.dump(), "application/json");
}

}  // namespace sluice::apiserver
