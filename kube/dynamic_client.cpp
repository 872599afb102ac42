#include "kube/dynamic_client.h"

namespace sluice::kube {
namespace {

std::vector<std::pair<std::string, std::string>> WriteQuery(const WriteOptions& o) {
  std::vector<std::pair<std::string, std::string>> q;
  if (!o.field_manager.empty()) q.emplace_back("fieldManager", o.field_manager);
  if (o.dry_run) q.emplace_back("dryRun", "All");
  return q;
}

std::string Str(const nlohmann::json& o, const char* a, const char* b) {
  const auto x = o.find(a);
  if (x == o.end() || !x->is_object()) return "";
  const auto y = x->find(b);
  return y != x->end() && y->is_string() ? y->get<std::string>() : "";
}

}  // namespace

std::string GroupVersionResource::GroupVersionPath() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string GroupVersionResource::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourcePath(const GroupVersionResource& gvr, const std::string& namespace_,
                         const std::string& name, const std::string& subresource) {
  std::string path = gvr.GroupVersionPath();
  if (gvr.namespaced && !namespace_.empty()) {
    path += "/namespaces/" + http::PercentEncode(namespace_);
  }
  path += "/" + gvr.resource;
  if (!name.empty()) path += "/" + http::PercentEncode(name);
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

std::vector<std::pair<std::string, std::string>> ListOptions::ToQuery(bool watch) const {
  std::vector<std::pair<std::string, std::string>> q;
  if (!label_selector.empty()) q.emplace_back("labelSelector", label_selector);
  if (!field_selector.empty()) q.emplace_back("fieldSelector", field_selector);
  if (!watch && limit > 0) q.emplace_back("limit", std::to_string(limit));
  if (!watch && !continue_token.empty()) q.emplace_back("continue", continue_token);
  if (!resource_version.empty()) q.emplace_back("resourceVersion", resource_version);
  if (!resource_version_match.empty()) {
    q.emplace_back("resourceVersionMatch", resource_version_match);
  }
  if (watch) {
    q.emplace_back("watch", "true");
    if (timeout_seconds > 0) q.emplace_back("timeoutSeconds", std::to_string(timeout_seconds));
    if (allow_watch_bookmarks) q.emplace_back("allowWatchBookmarks", "true");
  }
  return q;
}

const char* PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

nlohmann::json DeleteOptions::ToJson() const {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!propagation_policy.empty()) body["propagationPolicy"] = propagation_policy;
  if (grace_period_seconds) body["gracePeriodSeconds"] = *grace_period_seconds;
  if (!precondition_uid.empty()) body["preconditions"]["uid"] = precondition_uid;
  if (!precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = precondition_resource_version;
  }
  if (dry_run) body["dryRun"] = {"All"};
  return body;
}

ResourceClient::ResourceClient(RestClient& client, GroupVersionResource gvr, std::string namespace_)
    : client_(client), gvr_(std::move(gvr)), namespace__(std::move(namespace_)) {}

std::string ResourceClient::NamespaceOf(const nlohmann::json& object) const {
  const std::string ns = Str(object, "metadata", "namespace");
  return ns.empty() ? namespace__ : ns;
}

Result<nlohmann::json> ResourceClient::Get(const std::string& name,
                                           const std::string& resource_version) {
  if (name.empty()) return Status::InvalidArgument("a name is required", "metadata.name");
  RestRequest req;
  req.path = ResourcePath(gvr_, namespace__, name);
  if (!resource_version.empty()) req.query.emplace_back("resourceVersion", resource_version);
  return client_.DoJson(req);
}

Result<ObjectList> ResourceClient::List(const ListOptions& options) {
  RestRequest req;
  req.path = ResourcePath(gvr_, namespace__);
  req.query = options.ToQuery(false);
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json doc, client_.DoJson(req));
  ObjectList out;
  out.resource_version = Str(doc, "metadata", "resourceVersion");
  out.continue_token = Str(doc, "metadata", "continue");
  auto items = doc.find("items");
  if (items != doc.end() && items->is_array()) {
    out.items.reserve(items->size());
    // Items of a list carry no kind/apiVersion; fill them in so cached objects are complete.
    const std::string kind = doc.value("kind", "");
    const std::string item_kind =
        kind.size() > 4 && kind.ends_with("List") ? kind.substr(0, kind.size() - 4) : "";
    for (nlohmann::json& item : *items) {
      if (item.is_object()) {
        if (!item.contains("apiVersion")) item["apiVersion"] = gvr_.ApiVersion();
        if (!item.contains("kind") && !item_kind.empty()) item["kind"] = item_kind;
      }
      out.items.push_back(std::make_shared<const nlohmann::json>(std::move(item)));
    }
  }
  return out;
}

Result<ObjectList> ResourceClient::ListAll(ListOptions options) {
  if (options.limit <= 0) options.limit = 500;
  const ListOptions first = options;
  bool restarted = false;
  ObjectList all;
  for (;;) {
    Result<ObjectList> page = List(options);
    if (!page.ok()) {
      // An expired continue token: start over once, as client-go's pager does.
      if (IsGone(page.status()) && !options.continue_token.empty() && !restarted) {
        restarted = true;
        options = first;
        all = ObjectList();
        continue;
      }
      return page.status();
    }
    for (auto& item : page->items) all.items.push_back(std::move(item));
    all.resource_version = page->resource_version;
    if (page->continue_token.empty()) return all;
    options.continue_token = page->continue_token;
    options.resource_version.clear();  // Not allowed with continue.
    options.resource_version_match.clear();
  }
}

Result<nlohmann::json> ResourceClient::Create(const nlohmann::json& object,
                                              const WriteOptions& options) {
  RestRequest req;
  req.method = "POST";
  req.path = ResourcePath(gvr_, NamespaceOf(object));
  req.query = WriteQuery(options);
  req.body = object.dump();
  return client_.DoJson(req);
}

Result<nlohmann::json> ResourceClient::Put(const nlohmann::json& object,
                                           const WriteOptions& options,
                                           const std::string& subresource) {
  const std::string name = Str(object, "metadata", "name");
  if (name.empty()) return Status::InvalidArgument("a name is required", "metadata.name");
  RestRequest req;
  req.method = "PUT";
  req.path = ResourcePath(gvr_, NamespaceOf(object), name, subresource);
  req.query = WriteQuery(options);
  req.body = object.dump();
  return client_.DoJson(req);
}

Result<nlohmann::json> ResourceClient::Update(const nlohmann::json& object,
                                              const WriteOptions& options) {
  return Put(object, options, "");
}

Result<nlohmann::json> ResourceClient::UpdateStatus(const nlohmann::json& object,
                                                    const WriteOptions& options) {
  return Put(object, options, "status");
}

Result<nlohmann::json> ResourceClient::Patch(const std::string& name, PatchType type,
                                             const std::string& patch, const WriteOptions& options,
                                             const std::string& subresource) {
  if (name.empty()) return Status::InvalidArgument("a name is required", "metadata.name");
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return Status::InvalidArgument("server-side apply needs a field manager", "fieldManager");
  }
  RestRequest req;
  req.method = "PATCH";
  req.path = ResourcePath(gvr_, namespace__, name, subresource);
  req.query = WriteQuery(options);
  if (type == PatchType::kApply && options.force) req.query.emplace_back("force", "true");
  req.body = patch;
  req.content_type = PatchContentType(type);
  return client_.DoJson(req);
}

Result<nlohmann::json> ResourceClient::Apply(const nlohmann::json& object,
                                             const WriteOptions& options) {
  const std::string name = Str(object, "metadata", "name");
  if (name.empty()) return Status::InvalidArgument("a name is required", "metadata.name");
  // JSON is YAML, so the object is sent as it is.
  ResourceClient scoped(client_, gvr_, NamespaceOf(object));
  return scoped.Patch(name, PatchType::kApply, object.dump(), options);
}

Result<nlohmann::json> ResourceClient::Delete(const std::string& name,
                                              const DeleteOptions& options) {
  if (name.empty()) return Status::InvalidArgument("a name is required", "metadata.name");
  RestRequest req;
  req.method = "DELETE";
  req.path = ResourcePath(gvr_, namespace__, name);
  req.body = options.ToJson().dump();
  return client_.DoJson(req);
}

Result<nlohmann::json> ResourceClient::GetScale(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("a name is required", "metadata.name");
  RestRequest req;
  req.path = ResourcePath(gvr_, namespace__, name, "scale");
  return client_.DoJson(req);
}

Result<nlohmann::json> ResourceClient::UpdateScale(const std::string& name,
                                                   const nlohmann::json& scale) {
  if (name.empty()) return Status::InvalidArgument("a name is required", "metadata.name");
  RestRequest req;
  req.method = "PUT";
  req.path = ResourcePath(gvr_, namespace__, name, "scale");
  req.body = scale.dump();
  return client_.DoJson(req);
}

}  // namespace sluice::kube
