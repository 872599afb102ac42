#include "localcluster/apiserver/api_server.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/url.h"
#include "localcluster/apiserver/access_token.h"
#include "localcluster/apiserver/aggregated_discovery.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/authenticator.h"
#include "localcluster/apiserver/builtin_admission.h"
#include "localcluster/apiserver/builtin_table.h"
#include "localcluster/apiserver/crd_schema_checks.h"
#include "localcluster/apiserver/custom_resources.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/discovery.h"
#include "localcluster/apiserver/field_selector.h"
#include "localcluster/apiserver/garbage_collector.h"
#include "localcluster/apiserver/json_patch.h"
#include "localcluster/apiserver/label_selector.h"
#include "localcluster/apiserver/merge_patch.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/openapi_docs.h"
#include "localcluster/apiserver/pod_security.h"
#include "localcluster/apiserver/protobuf_objects.h"
#include "localcluster/apiserver/rate_limiter.h"
#include "localcluster/apiserver/rbac_escalation.h"
#include "localcluster/apiserver/request_authorization.h"
#include "localcluster/apiserver/request_info.h"
#include "localcluster/apiserver/service_accounts.h"
#include "localcluster/apiserver/strategic_merge_patch.h"
#include "localcluster/apiserver/table.h"
#include "localcluster/apiserver/token_request.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr size_t kWatchInitialPage = 500;
constexpr std::chrono::milliseconds kWatchPoll{1000};

// Storage keys group a resource's versions: "core/pods", "sluice.dev/rolloutpools".
std::string StorageKeyResource(const ResourceInfo& info) { return StorageResourceKey(info); }

bool IsCrdResource(const ResourceInfo& info) {
  return info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions";
}

// kube's NamespaceLifecycle admission refuses to delete these (403 Forbidden).
bool IsImmortalNamespace(const ResourceInfo& info, const std::string& name) {
  return info.group.empty() && info.plural == "namespaces" &&
         (name == "default" || name == "kube-system" || name == "kube-public");
}

// Fields each built-in resource may be selected by, besides metadata.name/namespace.
std::vector<std::string> SelectableFields(const ResourceInfo& info) {
  if (info.group.empty() && info.plural == "pods") {
    return {
        "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
  }
  if (info.group.empty() && info.plural == "nodes") return {"spec.unschedulable"};
  if (info.group.empty() && info.plural == "namespaces") return {"status.phase"};
  if (info.group.empty() && info.plural == "secrets") return {"type"};
  if (info.group.empty() && info.plural == "events") {
    return {"involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source.component",
            "type"};
  }
  if (info.group == "events.k8s.io" && info.plural == "events") {
    return {"regarding.kind",       "regarding.namespace",
            "regarding.name",       "regarding.uid",
            "regarding.apiVersion", "regarding.resourceVersion",
            "regarding.fieldPath",  "reason",
            "reportingController",  "type"};
  }
  return {};
}

std::string Param(const httplib::Request& req, const char* name) {
  return req.has_param(name) ? req.get_param_value(name) : std::string();
}

bool TruthyParam(const httplib::Request& req, const char* name) {
  const std::string v = Param(req, name);
  return v == "true" || v == "1";
}

Result<uint64_t> ParseRevision(const std::string& text, const char* what) {
  if (text.empty()) return uint64_t{0};
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument(std::string(what) + ": Invalid value: \"" + text +
                                     "\": must be a resource version returned by the server");
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::string ResourceVersionOf(const json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return "";
  const json& rv = object["metadata"].value("resourceVersion", json());
  return rv.is_string() ? rv.get<std::string>() : "";
}

// cpp-httplib gzips chunked responses of text and JSON types when the client accepts it (Go
// clients always do), and its compressor holds data back until a block fills: a watch event or
// a followed log line would sit in the buffer. Streams are therefore sent uncompressed. The
// request is a non-const object owned by httplib's worker, so removing the header is defined.
void DisableCompression(const httplib::Request& req) {
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
}

// A Warning header (RFC 7234 warn-code 299, no agent): the text as a quoted-string, escaped as
// kube does with Go's strconv.Quote, so client-go can parse texts that contain quotes.
std::string WarningHeader(std::string_view text) {
  std::string out = "299 - \"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The labelSelector and fieldSelector parameters of a list, watch or deletecollection.
struct Selectors {
  LabelSelector labels;
  FieldSelector fields;
};
Result<Selectors> ParseSelectors(const httplib::Request& req, const ResourceInfo& resource) {
  Selectors out;
  SLUICE_ASSIGN_OR_RETURN(out.labels, ParseLabelSelector(Param(req, "labelSelector")));
  SLUICE_ASSIGN_OR_RETURN(
      out.fields, ParseFieldSelector(Param(req, "fieldSelector"), SelectableFields(resource)));
  return out;
}

bool WantsTable(const httplib::Request& req) {
  return req.get_header_value("Accept").find("as=Table") != std::string::npos;
}

IncludeObject IncludeFrom(const httplib::Request& req) {
  const std::string v = Param(req, "includeObject");
  if (v == "None") return IncludeObject::kNone;
  if (v == "Object") return IncludeObject::kObject;
  return IncludeObject::kMetadata;
}

// Reads `.spec.replicas`-style paths (the scale subresource's) from an object.
const json* AtDottedPath(const json& object, const std::string& path) {
  const json* node = &object;
  size_t pos = path.empty() || path[0] != '.' ? 0 : 1;
  while (pos < path.size()) {
    const size_t end = std::min(path.find('.', pos), path.size());
    const std::string key = path.substr(pos, end - pos);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    pos = end + 1;
  }
  return node;
}

void SetDottedPath(json& object, const std::string& path, json value) {
  json* node = &object;
  size_t pos = path.empty() || path[0] != '.' ? 0 : 1;
  while (pos < path.size()) {
    const size_t end = std::min(path.find('.', pos), path.size());
    const std::string key = path.substr(pos, end - pos);
    if (!node->is_object()) *node = json::object();
    node = &(*node)[key];
    pos = end + 1;
  }
  *node = std::move(value);
}

}  // namespace

struct ApiServer::Request {
  Request(const httplib::Request& h, RequestInfo i, ResourceInfo r)
      : http(h), info(std::move(i)), resource(std::move(r)) {}

  const httplib::Request& http;
  RequestInfo info;
  ResourceInfo resource;
  UserInfo user;            // Who sent it (authenticator.h): what authorization will decide on.
  std::optional<json> crd;  // The CRD of a custom resource.
  ObjectKey key;            // Named requests: the object's key.
  bool table = false;
  bool dry_run = false;
  FieldValidation field_validation = FieldValidation::kWarn;
  std::vector<std::string> warnings;
  // A protobuf request body, decoded to JSON (kubectl's typed clients send protobuf).
  std::optional<json> decoded_body;

  // The body as a JSON object: the decoded protobuf, else the JSON text.
  Result<json> Body() const {
    if (decoded_body) return *decoded_body;
    return http::ParseJsonObject(http);
  }

  ErrorSubject Subject() const { return {resource.group, resource.plural, info.name}; }
  std::string QualifiedKind() const {
    return resource.group.empty() ? resource.kind : resource.kind + "." + resource.group;
  }
};

ApiServer::ApiServer(ApiServerOptions options, std::unique_ptr<Storage> storage, Clock* clock,
                     metrics::Registry* registry, const log::Logger& logger)
    : options_(std::move(options)),
      storage_(std::move(storage)),
      clock_(clock),
      logger_(logger),
      registry_(ResourceRegistry::WithBuiltins()) {
  options_.http.name = "apiserver";
  authenticator_ = std::make_unique<Authenticator>(
      options_.http.auth, options_.service_account_tokens, storage_.get(), clock_);
  if (options_.http.auth) {
    // The HTTP server admits the admin token itself and asks here about every other request, so
    // service-account tokens get in and the rest get kube's 401, before any body is read.
    options_.http.authenticate_other = [this](const httplib::Request& req, httplib::Response& res) {
      Result<UserInfo> user = authenticator_->Authenticate(req.get_header_value("Authorization"));
      if (user.ok()) return true;
      http::Server::AddAccessLogField("auth_error", user.status().message());
      res.status = 401;
      res.set_content(UnauthorizedStatusJson().dump(), "application/json");
      return false;
    };
  }
  http_ = std::make_unique<http::Server>(options_.http, registry, logger_);
  GarbageCollectorOptions gc_options;
  gc_options.period = options_.gc_period;
  gc_ = std::make_unique<GarbageCollector>(
      storage_.get(),
      [this] {
        std::shared_lock lock(registry_mu_);
        std::vector<ResourceInfo> out;
        std::set<std::string> seen;
        for (const ResourceInfo* info : registry_.All()) {
          // One entry per stored resource: a CRD's versions share storage.
          if (!seen.insert(StorageKeyResource(*info)).second) continue;
          out.push_back(*info);
        }
        return out;
      },
      clock_, logger_.With({{"subcomponent", "gc"}}), gc_options);
  if (options_.rate_limit_qps > 0) {
    ClientRateLimiter::Options limits;
    limits.qps = options_.rate_limit_qps;
    limits.burst = options_.rate_limit_burst;
    limiter_ = std::make_unique<ClientRateLimiter>(limits, clock_);
  }
  if (registry != nullptr) {
    requests_ = &registry->AddCounter("sluice_apiserver_requests_total",
                                      "API requests by verb, resource and HTTP code.",
                                      {"verb", "resource", "code"});
    watches_ =
        &registry->AddGauge("sluice_apiserver_watches", "Open watch streams.", {}).WithLabels({});
  }
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
    const std::string m = method;
    auto handler = [this, m](const httplib::Request& req, httplib::Response& res) {
      Handle(m, req, res);
    };
    if (m == "GET") http_->Get(R"(/.*)", handler);
    if (m == "POST") http_->Post(R"(/.*)", handler);
    if (m == "PUT") http_->Put(R"(/.*)", handler);
    if (m == "PATCH") http_->Patch(R"(/.*)", handler);
    if (m == "DELETE") http_->Delete(R"(/.*)", handler);
  }
}

ApiServer::~ApiServer() { Shutdown(); }

Result<std::unique_ptr<ApiServer>> ApiServer::Create(ApiServerOptions options,
                                                     std::unique_ptr<Storage> storage, Clock* clock,
                                                     metrics::Registry* registry,
                                                     const log::Logger& logger) {
  if (options.service_account_tokens.signing_key.empty()) {
    SLUICE_ASSIGN_OR_RETURN(options.service_account_tokens.signing_key, NewRandomSecret());
  }
  std::unique_ptr<ApiServer> server(
      new ApiServer(std::move(options), std::move(storage), clock, registry, logger));
  SLUICE_RETURN_IF_ERROR(server->EnsureSystemNamespaces());
  const ResourceInfo* accounts = server->registry_.Find("", "v1", "serviceaccounts");
  SLUICE_CHECK(accounts != nullptr);
  SLUICE_RETURN_IF_ERROR(
      EnsureDefaultServiceAccounts(*server->storage_, *accounts, clock->WallNow()));
  SLUICE_RETURN_IF_ERROR(server->EnsureBootstrapRbac());
  SLUICE_RETURN_IF_ERROR(server->LoadCrds());
  return server;
}

Status ApiServer::EnsureSystemNamespaces() {
  const ResourceInfo* namespaces = registry_.Find("", "v1", "namespaces");
  SLUICE_CHECK(namespaces != nullptr);
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    SLUICE_ASSIGN_OR_RETURN(
        json object,
        PrepareCreate(*namespaces, json{{"metadata", {{"name", name}}}}, "", clock_->WallNow()));
    Result<Stored> created = storage_->Create(ObjectKey{"core/namespaces", "", name}, object);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
  }
  return Status::Ok();
}

Status ApiServer::EnsureBootstrapRbac() {
  auto ensure = [&](const char* plural, const std::vector<json>& objects) -> Status {
    const ResourceInfo* info = registry_.Find("rbac.authorization.k8s.io", "v1", plural);
    SLUICE_CHECK(info != nullptr);
    for (const json& object : objects) {
      SLUICE_ASSIGN_OR_RETURN(json prepared, PrepareCreate(*info, object, "", clock_->WallNow()));
      const std::string name = object["metadata"]["name"];
      Result<Stored> created =
          storage_->Create(ObjectKey{StorageKeyResource(*info), "", name}, prepared);
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
        return created.status();
      }
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(ensure("clusterroles", BootstrapClusterRoles()));
  return ensure("clusterrolebindings", BootstrapClusterRoleBindings());
}

Status ApiServer::LoadCrds() {
  std::string token;
  do {
    SLUICE_ASSIGN_OR_RETURN(
        ListResult page,
        storage_->List("apiextensions.k8s.io/customresourcedefinitions", std::nullopt, 500, token));
    for (const Stored& s : page.items) {
      const std::string name = s.object.value("/metadata/name"_json_pointer, "");
      if (Status st = registry_.AddCrd(s.object); !st.ok()) {
        logger_.Warn("stored CRD not served", {{"crd", name}, {"error", st.message()}});
        continue;
      }
      crds_[name] = s.object;
    }
    token = page.continue_token;
  } while (!token.empty());
  return Status::Ok();
}

Status ApiServer::Start() {
  SLUICE_RETURN_IF_ERROR(http_->Start());
  gc_->Start();
  return Status::Ok();
}

void ApiServer::Shutdown() {
  if (http_) http_->Shutdown();
  if (gc_) gc_->Stop();
}

int ApiServer::port() const { return http_->port(); }
std::string ApiServer::BaseUrl() const { return http_->BaseUrl(); }

std::optional<ResourceInfo> ApiServer::FindResource(const std::string& group,
                                                    const std::string& version,
                                                    const std::string& plural) const {
  std::shared_lock lock(registry_mu_);
  const ResourceInfo* info = registry_.Find(group, version, plural);
  if (info == nullptr) return std::nullopt;
  return *info;
}

std::optional<json> ApiServer::FindCrd(const std::string& name) const {
  std::shared_lock lock(registry_mu_);
  auto it = crds_.find(name);
  if (it == crds_.end()) return std::nullopt;
  return it->second;
}

void ApiServer::ReplyStatus(const Status& status, const Request* r, httplib::Response& res) {
  const json body = StatusJson(status, r != nullptr ? r->Subject() : ErrorSubject{});
  res.status = CodeOf(body);
  res.set_content(body.dump(), "application/json");
}

void ApiServer::ReplyObject(Request& r, const json& object, int code, httplib::Response& res) {
  std::set<std::string> sent;  // Admission may run again after a conflict and repeat one.
  for (const std::string& w : r.warnings) {
    if (sent.insert(w).second) res.set_header("Warning", WarningHeader(w));
  }
  res.status = code;
  res.set_content(ForOutput(r.resource, object).dump(), "application/json");
}

void ApiServer::Handle(const std::string& method, const httplib::Request& req,
                       httplib::Response& res) {
  // Checked again here (the HTTP server's hook cannot hand its answer over) to learn the user.
  Result<UserInfo> user = authenticator_->Authenticate(req.get_header_value("Authorization"));
  if (!user.ok()) {  // Valid a moment ago in the hook: its ServiceAccount was deleted since.
    http::Server::AddAccessLogField("auth_error", user.status().message());
    res.status = 401;
    res.set_content(UnauthorizedStatusJson().dump(), "application/json");
    return;
  }
  http::Server::AddAccessLogField("user", user->name);
  if (limiter_) {
    std::string client = req.get_header_value("Authorization");
    if (client.empty()) client = req.remote_addr;
    std::chrono::seconds retry_after{1};
    if (!limiter_->Allow(client, &retry_after)) {
      res.set_header("Retry-After", std::to_string(std::max<int64_t>(1, retry_after.count())));
      const json body = StatusJson(429, "TooManyRequests",
                                   "too many requests from this client, please try again later");
      res.status = 429;
      res.set_content(body.dump(), "application/json");
      return;
    }
  }
  Result<RequestInfo> info = ParseRequest(method, req.path, Param(req, "watch"));
  if (!info.ok()) {
    const json body =
        StatusJson(404, "NotFound", "the server could not find the requested resource");
    res.status = 404;
    res.set_content(body.dump(), "application/json");
    return;
  }
  ImpersonationHeaders impersonation{
      req.get_header_value("Impersonate-User"), {}, req.get_header_value("Impersonate-Uid")};
  for (size_t i = 0; i < req.get_header_value_count("Impersonate-Group"); ++i) {
    impersonation.groups.push_back(req.get_header_value("Impersonate-Group", i));
  }
  // Decided from the path alone, before any lookup, as kube does: a forbidden user learns
  // nothing of which resources or objects exist.
  if (std::optional<json> denied = AuthorizeRequest(*storage_, &*user, *info, method,
                                                    Param(req, "fieldSelector"), impersonation)) {
    if (!impersonation.user.empty()) http::Server::AddAccessLogField("as", impersonation.user);
    res.status = CodeOf(*denied);
    res.set_content(denied->dump(), "application/json");
    return;
  }
  if (!impersonation.user.empty()) http::Server::AddAccessLogField("as", user->name);
  if (!info->is_resource_request) {
    HandleNonResource(*info, req, res);
    return;
  }
  std::optional<ResourceInfo> resource = FindResource(info->group, info->version, info->resource);
  if (!resource) {
    const json body =
        StatusJson(404, "NotFound", "the server could not find the requested resource");
    res.status = 404;
    res.set_content(body.dump(), "application/json");
    return;
  }
  Request r(req, std::move(*info), std::move(*resource));
  r.user = std::move(*user);
  if (method == "POST" || method == "PUT" || (method == "DELETE" && !req.body.empty())) {
    const std::string type = req.get_header_value("Content-Type");
    if (type.rfind(kKubeProtobufContentType, 0) == 0) {
      Result<json> decoded = DecodeKubeProtobuf(req.body);
      if (!decoded.ok()) {
        const json body =
            StatusJson(415, "UnsupportedMediaType", decoded.status().message(), r.Subject());
        res.status = 415;
        res.set_content(body.dump(), "application/json");
        return;
      }
      r.decoded_body = std::move(*decoded);
    } else if (!type.empty() && type.rfind("application/json", 0) != 0 &&
               type.rfind("*/*", 0) != 0) {
      const json body = StatusJson(415, "UnsupportedMediaType",
                                   "the body of the request was in an unknown format - accepted "
                                   "media types include: application/json, " +
                                       std::string(kKubeProtobufContentType));
      res.status = 415;
      res.set_content(body.dump(), "application/json");
      return;
    }
  }
  HandleResource(r, res);
  if (requests_ != nullptr) {
    requests_->WithLabels({r.info.verb, r.resource.StorageResource(), std::to_string(res.status)})
        .Inc();
  }
}

void ApiServer::HandleNonResource(const RequestInfo& info, const httplib::Request& req,
                                  httplib::Response& res) {
  const std::string& path = info.path;
  auto reply = [&res](const json& body, const std::string& content_type = "application/json") {
    res.status = 200;
    res.set_content(body.dump(), content_type);
  };
  auto not_found = [&res] {
    const json body =
        StatusJson(404, "NotFound", "the server could not find the requested resource");
    res.status = 404;
    res.set_content(body.dump(), "application/json");
  };
  if (info.verb != "get" && !(req.method == "GET")) {
    not_found();
    return;
  }
  std::shared_lock lock(registry_mu_);
  const CrdLookup crd_lookup = [this](std::string_view name) -> const json* {
    auto it = crds_.find(std::string(name));
    return it == crds_.end() ? nullptr : &it->second;
  };
  const bool aggregated = WantsAggregatedDiscovery(req.get_header_value("Accept"));
  if (path == "/version" || path == "/version/") {
    reply({{"major", "1"},
           {"minor", "32"},
           {"gitVersion", options_.version},
           {"gitCommit", "sluice"},
           {"gitTreeState", "clean"},
           {"buildDate", "2026-01-01T00:00:00Z"},
           {"goVersion", "n/a"},
           {"compiler", "g++"},
           {"platform", "linux/amd64"}});
  } else if (path == "/api" || path == "/api/") {
    if (aggregated) {
      reply(AggregatedDiscovery(registry_, true), std::string(kAggregatedDiscoveryContentType));
    } else {
      reply(CoreApiVersions(req.local_addr + ":" + std::to_string(req.local_port)));
    }
  } else if (path == "/apis" || path == "/apis/") {
    if (aggregated) {
      reply(AggregatedDiscovery(registry_, false), std::string(kAggregatedDiscoveryContentType));
    } else {
      reply(ApiGroupList(registry_));
    }
  } else if (path == "/api/v1" || path == "/api/v1/") {
    std::optional<json> doc = ApiResourceList(registry_, "", "v1");
    doc ? reply(*doc) : not_found();
  } else if (path.rfind("/apis/", 0) == 0) {
    std::string rest = path.substr(6);
    if (!rest.empty() && rest.back() == '/') rest.pop_back();
    const size_t slash = rest.find('/');
    std::optional<json> doc =
        slash == std::string::npos
            ? ApiGroup(registry_, rest)
            : ApiResourceList(registry_, rest.substr(0, slash), rest.substr(slash + 1));
    doc ? reply(*doc) : not_found();
  } else if (path == "/openapi/v2" || path == "/swagger.json") {
    // kubectl asks for v2 as protobuf only; 406 makes it move on cleanly.
    const std::string accept = req.get_header_value("Accept");
    if (!accept.empty() && accept.find("application/json") == std::string::npos &&
        accept.find("*/*") == std::string::npos) {
      const json body =
          StatusJson(406, "NotAcceptable", "only application/json is served for /openapi/v2");
      res.status = 406;
      res.set_content(body.dump(), "application/json");
      return;
    }
    reply(OpenApiV2(registry_, crd_lookup));
  } else if (path == "/openapi/v3" || path == "/openapi/v3/") {
    reply(OpenApiV3Root(registry_, crd_lookup));
  } else if (path.rfind("/openapi/v3/", 0) == 0) {
    const std::string rest = path.substr(12);  // "api/v1" or "apis/<group>/<version>".
    std::string group, version;
    if (rest == "api/v1") {
      version = "v1";
    } else if (rest.rfind("apis/", 0) == 0 && rest.find('/', 5) != std::string::npos) {
      group = rest.substr(5, rest.find('/', 5) - 5);
      version = rest.substr(rest.find('/', 5) + 1);
    }
    std::optional<json> doc = version.empty()
                                  ? std::nullopt
                                  : OpenApiV3GroupVersion(registry_, crd_lookup, group, version);
    if (!doc) {
      not_found();
      return;
    }
    // kubectl caches these documents and revalidates them with If-None-Match.
    const std::string etag = "\"" + OpenApiHash(*doc) + "\"";
    res.set_header("ETag", etag);
    if (req.get_header_value("If-None-Match") == etag) {
      res.status = 304;
      return;
    }
    reply(*doc);
  } else {
    not_found();
  }
}

void ApiServer::HandleResource(Request& r, httplib::Response& res) {
  // /api/v1/namespaces/<name>: the path's "namespace" is the Namespace object's name.
  if (r.resource.group.empty() && r.resource.plural == "namespaces") r.info.namespace_.clear();
  const RequestInfo& info = r.info;
  const ResourceInfo& resource = r.resource;
  if (!info.namespace_.empty() && !resource.namespaced) {
    ReplyStatus(Status::NotFound("the server could not find the requested resource"), &r, res);
    return;
  }
  if (!resource.crd_name.empty()) {
    r.crd = FindCrd(resource.crd_name);
    if (!r.crd) {
      ReplyStatus(Status::NotFound("the server could not find the requested resource"), &r, res);
      return;
    }
  }
  const std::string& sub = info.subresource;
  const bool is_pods = resource.group.empty() && resource.plural == "pods";
  const bool known_sub = sub.empty() || (sub == "status" && resource.has_status) ||
                         (sub == "scale" && resource.scale) || (sub == "log" && resource.has_log) ||
                         (sub == "binding" && is_pods) || (sub == "token" && resource.has_token);
  if (!known_sub) {
    ReplyStatus(Status::NotFound("the server could not find the requested resource"), &r, res);
    return;
  }
  if (std::find(resource.verbs.begin(), resource.verbs.end(), info.verb) == resource.verbs.end()) {
    const json body =
        StatusJson(405, "MethodNotAllowed",
                   "the server does not allow this method on the requested resource", r.Subject());
    res.status = 405;
    res.set_content(body.dump(), "application/json");
    return;
  }
  if (resource.namespaced && info.namespace_.empty() && !info.name.empty()) {
    ReplyStatus(Status::NotFound("the server could not find the requested resource"), &r, res);
    return;
  }
  r.key = ObjectKey{StorageKeyResource(resource), resource.namespaced ? info.namespace_ : "",
                    info.name};
  r.table = WantsTable(r.http);
  r.dry_run = r.http.has_param("dryRun");
  if (r.dry_run && Param(r.http, "dryRun") != "All") {
    ReplyStatus(Status::InvalidArgument("dryRun: Unsupported value: \"" + Param(r.http, "dryRun") +
                                        "\": supported values: \"All\""),
                &r, res);
    return;
  }
  Result<FieldValidation> fv = ParseFieldValidation(Param(r.http, "fieldValidation"));
  if (!fv.ok()) {
    ReplyStatus(fv.status(), &r, res);
    return;
  }
  r.field_validation = *fv;

  const std::string& verb = info.verb;
  if (sub == "scale") {
    if (verb == "get") {
      GetScale(r, res);
    } else if (verb == "update" || verb == "patch") {
      WriteScale(r, res);
    } else {
      ReplyStatus(Status::InvalidArgument("the scale subresource supports get, update and patch"),
                  &r, res);
    }
    return;
  }
  if (sub == "log") {
    if (verb != "get") {
      ReplyStatus(Status::InvalidArgument("pods/log supports get only"), &r, res);
      return;
    }
    PodLog(r, res);
    return;
  }
  if (sub == "binding" && verb != "create") {
    ReplyStatus(Status::InvalidArgument("pods/binding supports create only"), &r, res);
    return;
  }
  if (IsReviewResource(resource.group, resource.plural)) {
    CreateReview(r, res);  // The registry allows create only.
    return;
  }
  if (sub == "token") {
    if (verb != "create") {
      const json body = StatusJson(
          405, "MethodNotAllowed",
          "the server does not allow this method on the requested resource", r.Subject());
      res.status = 405;
      res.set_content(body.dump(), "application/json");
      return;
    }
    CreateToken(r, res);
    return;
  }
  if (verb == "get") {
    Get(r, res);
  } else if (verb == "list") {
    List(r, res);
  } else if (verb == "watch") {
    Watch(r, res);
  } else if (verb == "create") {
    Create(r, res);
  } else if (verb == "update") {
    Update(r, res);
  } else if (verb == "patch") {
    Patch(r, res);
  } else if (verb == "delete") {
    Delete(r, res);
  } else if (verb == "deletecollection") {
    DeleteCollection(r, res);
  } else {
    ReplyStatus(Status::InvalidArgument("unsupported verb " + verb), &r, res);
  }
}

// ---- Reads -----------------------------------------------------------------------------------

namespace {

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

}  // namespace

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

namespace {

// One open watch stream; shared with httplib's content provider, which must be copyable.
struct WatchStream {
  std::unique_ptr<Watcher> watcher;
  std::vector<json> initial;  // Synthetic ADDED events (watch without a resourceVersion).
  size_t next_initial = 0;
  LabelSelector labels;
  FieldSelector fields;
  ResourceInfo resource;
  std::optional<json> crd;
  bool table = false;
  IncludeObject include = IncludeObject::kMetadata;
  bool bookmarks = false;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::steady_clock::time_point next_bookmark;
  std::chrono::seconds bookmark_interval{30};
  CancellationToken shutdown;
  Clock* clock = nullptr;
  metrics::Gauge* gauge = nullptr;
  bool finished = false;

  ~WatchStream() {
    if (gauge != nullptr) gauge->Dec();
  }

  bool Selects(const nlohmann::json& object) const {
    return labels.MatchesObject(object) && fields.Matches(object);
  }

  // The event type this watch sends for `e`, "" for none. With selectors, as kube's watch
  // cache does: an update that brings an object into the selection is ADDED, one that takes it
  // out is DELETED (carrying the new state), one outside it before and after is not sent.
  std::string_view Translate(const WatchEvent& e) const {
    const bool now = Selects(*e.object);
    if (e.type != WatchEventType::kModified || e.prev_object == nullptr) {
      return now ? WatchEventTypeName(e.type) : std::string_view();
    }
    const bool before = Selects(*e.prev_object);
    if (now && before) return "MODIFIED";
    if (now) return "ADDED";
    if (before) return "DELETED";
    return {};
  }

  // The wire line of one event.
  std::string Line(std::string_view type, const json& object) const {
    json out_object = ForOutput(resource, object);
    if (table) {
      Result<json> t = TableFor(resource, crd, {out_object}, clock->WallNow(),
                                ResourceVersionOf(object), include);
      if (t.ok()) out_object = std::move(*t);
    }
    return json{{"type", type}, {"object", std::move(out_object)}}.dump() + "\n";
  }
};

}  // namespace

void ApiServer::Watch(Request& r, httplib::Response& res) {
  Result<Selectors> selectors = ParseSelectors(r.http, r.resource);
  if (!selectors.ok()) {
    ReplyStatus(selectors.status(), &r, res);
    return;
  }
  auto& [labels, fields] = *selectors;
  std::optional<std::string> ns;
  if (r.resource.namespaced && !r.info.namespace_.empty()) ns = r.info.namespace_;
  if (!r.info.name.empty()) {
    // GET .../pods/x?watch=1 (the deprecated single-object watch): select the name.
    Result<FieldSelector> by_name =
        ParseFieldSelector("metadata.name=" + EscapeFieldValue(r.info.name) +
                               (fields.Empty() ? "" : "," + fields.ToString()),
                           SelectableFields(r.resource));
    if (by_name.ok()) fields = std::move(*by_name);
  }
  auto stream = std::make_shared<WatchStream>();
  const std::string rv_param = Param(r.http, "resourceVersion");
  uint64_t from = 0;
  if (rv_param.empty() || rv_param == "0") {
    // kube's semantics: the current state as ADDED events, then changes.
    std::string token;
    bool first = true;
    do {
      Result<ListResult> page = storage_->List(r.key.resource, ns, kWatchInitialPage, token);
      if (!page.ok()) {
        ReplyStatus(page.status(), &r, res);
        return;
      }
      if (first) from = page->revision;
      first = false;
      for (Stored& s : page->items) {
        if (labels.MatchesObject(s.object) && fields.Matches(s.object)) {
          stream->initial.push_back(std::move(s.object));
        }
      }
      token = page->continue_token;
    } while (!token.empty());
  } else {
    Result<uint64_t> parsed = ParseRevision(rv_param, "resourceVersion");
    if (!parsed.ok()) {
      ReplyStatus(parsed.status(), &r, res);
      return;
    }
    from = *parsed;
  }
  Result<std::unique_ptr<Watcher>> watcher = storage_->Watch(r.key.resource, ns, from);
  if (!watcher.ok()) {
    ReplyStatus(watcher.status(), &r, res);
    return;
  }
  stream->watcher = std::move(*watcher);
  stream->labels = std::move(labels);
  stream->fields = std::move(fields);
  stream->resource = r.resource;
  stream->crd = r.crd;
  stream->table = r.table;
  stream->include = IncludeFrom(r.http);
  stream->bookmarks = TruthyParam(r.http, "allowWatchBookmarks");
  stream->bookmark_interval = options_.bookmark_interval;
  stream->clock = clock_;
  stream->shutdown = http_->shutdown_token();
  auto duration = options_.max_watch_duration;
  if (const std::string t = Param(r.http, "timeoutSeconds"); !t.empty()) {
    Result<uint64_t> secs = ParseRevision(t, "timeoutSeconds");
    if (!secs.ok()) {
      ReplyStatus(Status::InvalidArgument("timeoutSeconds: Invalid value: \"" + t + "\""), &r, res);
      return;
    }
    // As in kube, 0 means no timeout of the client's own (the server's limit applies).
    if (*secs > 0) {
      duration = std::min<std::chrono::seconds>(duration, std::chrono::seconds(*secs));
    }
  }
  const auto now = std::chrono::steady_clock::now();
  stream->deadline = now + duration;
  stream->next_bookmark = now + stream->bookmark_interval;
  if (watches_ != nullptr) {
    watches_->Inc();
    stream->gauge = watches_;
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache, private");
  DisableCompression(r.http);
  res.set_chunked_content_provider(
      r.table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : "application/json;stream=watch",
      [stream](size_t, httplib::DataSink& sink) -> bool {
        WatchStream& w = *stream;
        if (w.finished) {
          sink.done();
          return true;
        }
        if (!sink.is_writable()) return false;
        if (w.next_initial < w.initial.size()) {
          std::string chunk;
          for (size_t n = 0; n < 100 && w.next_initial < w.initial.size(); ++n) {
            chunk += w.Line("ADDED", w.initial[w.next_initial]);
            w.initial[w.next_initial++] = json();
          }
          if (w.next_initial == w.initial.size()) w.initial.clear();
          return sink.write(chunk.data(), chunk.size());
        }
        auto now = std::chrono::steady_clock::now();
        if (now >= w.deadline || w.shutdown.IsCancelled()) {
          w.finished = true;
          w.watcher->Stop();
          sink.done();
          return true;
        }
        auto wait = std::min<std::chrono::steady_clock::duration>(kWatchPoll, w.deadline - now);
        if (w.bookmarks)
          wait = std::min(wait,
                          std::max<std::chrono::steady_clock::duration>(w.next_bookmark - now, {}));
        WatchNext next = w.watcher->Next(wait, w.shutdown);
        switch (next.kind) {
          case WatchNext::Kind::kEvent: {
            const WatchEvent& e = *next.event;
            const std::string_view type = w.Translate(e);
            if (type.empty()) return true;
            const std::string line = w.Line(type, *e.object);
            return sink.write(line.data(), line.size());
          }
          case WatchNext::Kind::kTimeout: {
            now = std::chrono::steady_clock::now();
            if (w.bookmarks && now >= w.next_bookmark) {
              w.next_bookmark = now + w.bookmark_interval;
              const json bookmark = {
                  {"type", "BOOKMARK"},
                  {"object",
                   {{"apiVersion", w.resource.ApiVersion()},
                    {"kind", w.resource.kind},
                    {"metadata",
                     {{"resourceVersion", std::to_string(w.watcher->BookmarkRevision())}}}}}};
              const std::string line = bookmark.dump() + "\n";
              return sink.write(line.data(), line.size());
            }
            return true;
          }
          case WatchNext::Kind::kCancelled:
            w.finished = true;
            w.watcher->Stop();
            sink.done();
            return true;
          case WatchNext::Kind::kClosed: {
            // kube reports a watch that cannot go on as an ERROR event carrying a Status.
            const json status = StatusJson(next.status);
            const std::string line = json{{"type", "ERROR"}, {"object", status}}.dump() + "\n";
            w.finished = true;
            sink.write(line.data(), line.size());
            sink.done();
            return true;
          }
        }
        return true;
      });
}

// ---- Writes ----------------------------------------------------------------------------------

void ApiServer::LogSkippedRules(const std::string& crd, const std::vector<std::string>& rules) {
  if (rules.empty()) return;
  std::lock_guard<std::mutex> lock(skipped_mu_);
  for (const std::string& rule : rules) {
    if (skipped_logged_.insert(crd + " " + rule).second) {
      logger_.Warn("CEL rule not evaluated", {{"crd", crd}, {"rule", rule}});
    }
  }
}

bool ApiServer::Admit(Request& r, json& object, const json* old_object, httplib::Response& res,
                      Status* admit_error) {
  // Returns false with `res` filled (HTTP path) or *admit_error set (inside GuaranteedUpdate).
  auto fail_invalid = [&](const openapi::FieldErrors& errors) {
    const std::string name = object.value("/metadata/name"_json_pointer, r.info.name);
    const json body =
        InvalidStatusJson(r.QualifiedKind(), name, r.resource.group, r.resource.kind, errors);
    res.status = 422;
    res.set_content(body.dump(), "application/json");
    *admit_error = Status::Unprocessable(body.value("message", "invalid"));
    return false;
  };
  auto fail_decode = [&](const Status& decode_error) {  // 400, kube's strict decoding error.
    const json body = StatusJson(decode_error, r.Subject());
    res.status = 400;
    res.set_content(body.dump(), "application/json");
    *admit_error = decode_error;
    return false;
  };
  // RBAC escalation prevention (rbac_escalation.h), first as in kube's RBAC storage.
  const RbacWrite rbac_write{r.resource.group, r.resource.plural, r.info.namespace_,
                             old_object != nullptr ? r.info.name : std::string()};
  if (Status s = AdmitRbacWrite(r.user, rbac_write, object, old_object,
                                [this] { return ReadRbacPolicy(*storage_); });
      !s.ok()) {
    const json body = StatusJson(s, r.Subject());
    res.status = CodeOf(body);
    res.set_content(body.dump(), "application/json");
    *admit_error = s;
    return false;
  }
  if (IsCrdResource(r.resource)) {
    // As in kube, decoding comes first: fields of the schemas 1.30 does not know.
    CrdDecodeCheck decoded = DecodeCrdSchemas(object, r.field_validation);
    if (!decoded.decode_error.ok()) return fail_decode(decoded.decode_error);
    r.warnings = std::move(decoded.warnings);
  }
  if (old_object == nullptr) {
    openapi::FieldErrors name_errors = ValidateName(r.resource, object);
    if (!name_errors.empty()) return fail_invalid(name_errors);
  }
  // Kube's defaulting, then validation, of built-in kinds with rules (builtin_admission.h).
  if (openapi::FieldErrors errors = DefaultAndValidateBuiltin(r.resource, object, old_object);
      !errors.empty()) {
    return fail_invalid(errors);
  }
  if (r.crd) {
    CustomResourceCheck check =
        CheckCustomResource(*r.crd, r.resource.version, object, old_object, r.field_validation);
    LogSkippedRules(r.resource.crd_name, check.skipped_rules);
    if (!check.decode_error.ok()) return fail_decode(check.decode_error);
    if (!check.errors.empty()) return fail_invalid(check.errors);
    r.warnings = std::move(check.warnings);
  }
  if (IsCrdResource(r.resource)) {
    std::vector<std::string> skipped;
    openapi::FieldErrors errors = ValidateCrdSpec(object, &skipped);
    LogSkippedRules(object.value("/metadata/name"_json_pointer, r.info.name), skipped);
    if (errors.empty()) {
      std::shared_lock lock(registry_mu_);
      ResourceRegistry trial = registry_;
      if (Status s = trial.AddCrd(object); !s.ok()) {
        errors.push_back({s.field().empty() ? "spec.names" : s.field(), s.message()});
      }
    }
    if (!errors.empty()) return fail_invalid(errors);
    object["status"] = AcceptedCrdStatus(
        object,
        old_object != nullptr ? old_object->value("status", json::object()) : json::object(),
        clock_->WallNow());
  }
  return AdmitPodSecurityOf(r, object, old_object, res, admit_error);
}

bool ApiServer::AdmitPodSecurityOf(Request& r, const json& object, const json* old_object,
                                   httplib::Response& res, Status* admit_error) {
  const bool core = r.resource.group.empty();
  if (core && r.resource.plural == "namespaces") {
    openapi::FieldErrors errors = NamespacePodSecurityLabelErrors(object, old_object);
    if (!errors.empty()) {
      const json body = InvalidStatusJson(
          "Namespace", object.value("/metadata/name"_json_pointer, ""), "", "Namespace", errors);
      res.status = 422;
      res.set_content(body.dump(), "application/json");
      *admit_error = Status::Unprocessable(body.value("message", "invalid"));
      return false;
    }
    if (old_object != nullptr) {
      const std::string name = object.value("/metadata/name"_json_pointer, "");
      std::vector<json> pods;
      Result<ListResult> listed = storage_->List("core/pods", name, 0, "");
      if (listed.ok()) {
        for (Stored& p : listed->items) pods.push_back(std::move(p.object));
      }
      for (std::string& w :
           NamespaceEnforceWarnings(name, ReadNamespacePodSecurity(*old_object).policy,
                                    ReadNamespacePodSecurity(object).policy, pods)) {
        r.warnings.push_back(std::move(w));
      }
    }
    return true;
  }
  const bool pods = core && r.resource.plural == "pods";
  if (!r.info.subresource.empty() && (!pods || PodSecurityIgnoresSubresource(r.info.subresource))) {
    return true;
  }
  if (!pods && PodTemplateSpecOf(r.resource.group, r.resource.plural, object) == nullptr) {
    return true;
  }
  if (pods && old_object != nullptr && !PodSecurityUpdateMatters(object, *old_object)) return true;
  Result<Stored> ns = storage_->Get(ObjectKey{"core/namespaces", "", r.info.namespace_});
  if (!ns.ok()) return true;  // The create path reports a missing namespace itself.
  const NamespacePodSecurity policy = ReadNamespacePodSecurity(ns->object).policy;
  std::vector<std::string> warnings;
  if (pods) {
    PodSecurityDecision decision = AdmitPodSecurity(policy, object);
    if (!decision.status.ok()) {
      const json body = StatusJson(decision.status, r.Subject());
      res.status = CodeOf(body);
      res.set_content(body.dump(), "application/json");
      *admit_error = decision.status;
      return false;
    }
    warnings = std::move(decision.warnings);
  } else {
    warnings = WorkloadPodSecurityWarnings(policy, r.resource.group, r.resource.plural, object);
  }
  for (std::string& w : warnings) r.warnings.push_back(std::move(w));
  return true;
}

void ApiServer::Create(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  if (r.info.subresource == "binding") {
    // Binding: the scheduler's way to set spec.nodeName once.
    const std::string node = body->value("/target/name"_json_pointer, "");
    if (node.empty()) {
      ReplyStatus(Status::InvalidArgument("target.name: Required value", "target.name"), &r, res);
      return;
    }
    Result<Stored> bound =
        storage_->GuaranteedUpdate(r.key, [&](const json& current) -> Result<json> {
          const std::string assigned = current.value("/spec/nodeName"_json_pointer, "");
          if (!assigned.empty()) {
            return Status::Conflict("pod " + r.info.name + " is already assigned to node \"" +
                                    assigned + "\"");
          }
          if (current.contains("/metadata/deletionTimestamp"_json_pointer)) {
            return Status::Conflict("pod " + r.info.name +
                                    " is being deleted, cannot be assigned to a host");
          }
          json next = current;
          next["spec"]["nodeName"] = node;
          json& conditions = next["status"]["conditions"];
          if (!conditions.is_array()) conditions = json::array();
          conditions.erase(
              std::remove_if(conditions.begin(), conditions.end(),
                             [](const json& c) { return c.value("type", "") == "PodScheduled"; }),
              conditions.end());
          conditions.push_back({{"type", "PodScheduled"},
                                {"status", "True"},
                                {"lastTransitionTime", FormatTimestamp(clock_->WallNow())}});
          return next;
        });
    if (!bound.ok()) {
      ReplyStatus(bound.status(), &r, res);
      return;
    }
    const json ok = SuccessStatusJson(r.Subject());
    res.status = 201;
    res.set_content(ok.dump(), "application/json");
    return;
  }
  Result<json> object =
      PrepareCreate(r.resource, std::move(*body), r.info.namespace_, clock_->WallNow());
  if (!object.ok()) {
    ReplyStatus(object.status(), &r, res);
    return;
  }
  r.info.name = object->value("/metadata/name"_json_pointer, "");
  r.key.name = r.info.name;
  if (r.resource.namespaced) {
    Result<Stored> ns = storage_->Get(ObjectKey{"core/namespaces", "", r.info.namespace_});
    if (!ns.ok()) {
      ReplyStatus(ns.status().code() == StatusCode::kNotFound
                      ? Status::NotFound("namespaces \"" + r.info.namespace_ + "\" not found")
                      : ns.status(),
                  &r, res);
      return;
    }
    if (ns->object.contains("/metadata/deletionTimestamp"_json_pointer)) {
      ReplyStatus(Status::PermissionDenied("unable to create new content in namespace " +
                                           r.info.namespace_ + " because it is being terminated"),
                  &r, res);
      return;
    }
  }
  if (r.resource.group.empty() && r.resource.plural == "pods") {
    if (Status s = AdmitPodServiceAccount(*storage_, *object, r.info.namespace_); !s.ok()) {
      ReplyStatus(s, &r, res);
      return;
    }
  }
  Status admit_error;
  if (!Admit(r, *object, nullptr, res, &admit_error)) return;
  if (r.dry_run) {
    ReplyObject(r, *object, 201, res);
    return;
  }
  const bool is_crd = IsCrdResource(r.resource);
  std::unique_lock<std::shared_mutex> crd_lock(registry_mu_, std::defer_lock);
  if (is_crd) crd_lock.lock();  // The CRD becomes served atomically with its write.
  Result<Stored> stored = storage_->Create(r.key, std::move(*object));
  if (!stored.ok()) {
    if (crd_lock.owns_lock()) crd_lock.unlock();
    ReplyStatus(stored.status(), &r, res);
    return;
  }
  if (is_crd) {
    const std::string name = stored->object.value("/metadata/name"_json_pointer, "");
    if (Status s = registry_.AddCrd(stored->object); s.ok()) {
      crds_[name] = stored->object;
    } else {
      logger_.Error("CRD stored but not served", {{"crd", name}, {"error", s.message()}});
    }
  }
  if (crd_lock.owns_lock()) crd_lock.unlock();
  if (r.resource.group.empty() && r.resource.plural == "namespaces") {
    AddDefaultServiceAccount(r.info.name);
  }
  ReplyObject(r, stored->object, 201, res);
}

void ApiServer::WriteExisting(Request& r, const MutateFn& fn, httplib::Response& res) {
  const WriteTarget target =
      r.info.subresource == "status" ? WriteTarget::kStatus : WriteTarget::kMain;
  httplib::Response admit_res;  // Filled by Admit on a validation failure.
  bool admit_failed = false;
  auto update = [&](const json& current) -> Result<json> {
    admit_failed = false;
    r.warnings.clear();
    SLUICE_ASSIGN_OR_RETURN(json body, fn(current));
    SLUICE_ASSIGN_OR_RETURN(json next, PrepareUpdate(r.resource, current, std::move(body), target));
    Status admit_error;
    if (!Admit(r, next, &current, admit_res, &admit_error)) {
      admit_failed = true;
      return admit_error;
    }
    return next;
  };
  const bool is_crd = IsCrdResource(r.resource);
  if (r.dry_run) {
    Result<Stored> current = storage_->Get(r.key);
    if (!current.ok()) {
      ReplyStatus(current.status(), &r, res);
      return;
    }
    Result<json> next = update(current->object);
    if (!next.ok()) {
      if (admit_failed) {
        res.status = admit_res.status;
        res.set_content(admit_res.body, "application/json");
      } else {
        ReplyStatus(next.status(), &r, res);
      }
      return;
    }
    ReplyObject(r, *next, 200, res);
    return;
  }
  std::unique_lock<std::shared_mutex> crd_lock(registry_mu_, std::defer_lock);
  Result<Stored> stored = storage_->GuaranteedUpdate(r.key, update);
  if (!stored.ok()) {
    if (admit_failed) {
      res.status = admit_res.status;
      res.set_content(admit_res.body, "application/json");
    } else {
      ReplyStatus(stored.status(), &r, res);
    }
    return;
  }
  Result<Stored> final_state = CompleteDeletionIfReady(*storage_, r.key, *stored);
  if (!final_state.ok()) {
    ReplyStatus(final_state.status(), &r, res);
    return;
  }
  const bool removed = final_state->revision != stored->revision;
  if (removed) gc_->Kick();
  if (is_crd) {
    if (removed) {
      OnCrdDeleted(final_state->object);
    } else {
      OnCrdWritten(final_state->object);
    }
  }
  ReplyObject(r, final_state->object, 200, res);
}

void ApiServer::Update(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  const std::string expected = ResourceVersionOf(*body);
  WriteExisting(
      r,
      [&](const json& current) -> Result<json> {
        if (!expected.empty() && expected != ResourceVersionOf(current)) {
          return storage_internal::UpdateConflictError(r.key);
        }
        return *body;
      },
      res);
}

namespace {

// Applies a PATCH body of `content_type` to `current`.
Result<json> ApplyPatch(const std::string& content_type, const std::string& body,
                        const json& current, const ResourceInfo& resource, bool custom) {
  const std::string type = content_type.substr(0, content_type.find(';'));
  json patch = json::parse(body, nullptr, false);
  if (patch.is_discarded()) {
    return Status::InvalidArgument("the body of the request was in an unknown format: " + type +
                                   " (not valid JSON)");
  }
  if (type == "application/json-patch+json") return ApplyJsonPatch(current, patch);
  if (type == "application/merge-patch+json") return ApplyMergePatch(current, patch);
  if (type == "application/strategic-merge-patch+json") {
    if (custom) {
      return Status::InvalidArgument(
          "strategic merge patch is not supported for custom resources; use --type=merge");
    }
    return ApplyStrategicMergePatch(current, patch, DefaultPatchMeta(resource.kind));
  }
  return Status::InvalidArgument(
      "the body of the request was in an unknown format - accepted "
      "media types include: application/json-patch+json, "
      "application/merge-patch+json, "
      "application/strategic-merge-patch+json");
}

bool SupportedPatchType(const std::string& content_type, bool custom) {
  const std::string type = content_type.substr(0, content_type.find(';'));
  return type == "application/json-patch+json" || type == "application/merge-patch+json" ||
         (!custom && type == "application/strategic-merge-patch+json");
}

}  // namespace

void ApiServer::Patch(Request& r, httplib::Response& res) {
  const std::string content_type = r.http.get_header_value("Content-Type");
  const bool custom = !r.resource.crd_name.empty();
  if (!SupportedPatchType(content_type, custom)) {
    const json body = StatusJson(
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json" +
            std::string(custom ? "" : ", application/strategic-merge-patch+json"),
        r.Subject());
    res.status = 415;
    res.set_content(body.dump(), "application/json");
    return;
  }
  WriteExisting(
      r,
      [&](const json& current) -> Result<json> {
        const json served = ForOutput(r.resource, current);
        SLUICE_ASSIGN_OR_RETURN(json patched,
                                ApplyPatch(content_type, r.http.body, served, r.resource, custom));
        const std::string rv = ResourceVersionOf(patched);
        if (!rv.empty() && rv != ResourceVersionOf(current)) {
          return storage_internal::UpdateConflictError(r.key);
        }
        return patched;
      },
      res);
}

void ApiServer::Delete(Request& r, httplib::Response& res) {
  std::optional<json> body = r.decoded_body;
  if (!body && !r.http.body.empty()) {
    json parsed = json::parse(r.http.body, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      ReplyStatus(Status::InvalidArgument("the DeleteOptions body is not a JSON object"), &r, res);
      return;
    }
    body = std::move(parsed);
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
    json parsed = json::parse(r.http.body, nullptr, false);
    if (parsed.is_object()) body = std::move(parsed);
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

// ---- Scale -----------------------------------------------------------------------------------

namespace {

json ScaleOf(const ResourceInfo& resource, const json& object) {
  const ScaleSubresource& scale = *resource.scale;
  const json& meta = object.at("metadata");
  json out = {{"apiVersion", "autoscaling/v1"},
              {"kind", "Scale"},
              {"metadata",
               {{"name", meta.value("name", "")},
                {"uid", meta.value("uid", "")},
                {"resourceVersion", meta.value("resourceVersion", "")},
                {"creationTimestamp", meta.value("creationTimestamp", "")}}},
              {"spec", json::object()},
              {"status", {{"replicas", 0}}}};
  if (meta.contains("namespace")) out["metadata"]["namespace"] = meta["namespace"];
  if (const json* v = AtDottedPath(object, scale.spec_replicas_path); v && v->is_number_integer()) {
    out["spec"]["replicas"] = *v;
  }
  if (const json* v = AtDottedPath(object, scale.status_replicas_path);
      v && v->is_number_integer()) {
    out["status"]["replicas"] = *v;
  }
  if (!scale.label_selector_path.empty()) {
    if (const json* v = AtDottedPath(object, scale.label_selector_path); v && v->is_string()) {
      out["status"]["selector"] = *v;
    }
  }
  return out;
}

}  // namespace

void ApiServer::GetScale(Request& r, httplib::Response& res) {
  Result<Stored> stored = storage_->Get(r.key);
  if (!stored.ok()) {
    ReplyStatus(stored.status(), &r, res);
    return;
  }
  res.set_content(ScaleOf(r.resource, stored->object).dump(), "application/json");
}

void ApiServer::WriteScale(Request& r, httplib::Response& res) {
  const std::string content_type = r.http.get_header_value("Content-Type");
  const bool is_patch = r.info.verb == "patch";
  if (is_patch && !SupportedPatchType(content_type, /*custom=*/false)) {
    const json body = StatusJson(415, "UnsupportedMediaType",
                                 "the body of the request was in an unknown format", r.Subject());
    res.status = 415;
    res.set_content(body.dump(), "application/json");
    return;
  }
  std::optional<json> put_body;
  if (!is_patch) {
    Result<json> body = r.Body();
    if (!body.ok()) {
      ReplyStatus(body.status(), &r, res);
      return;
    }
    put_body = std::move(*body);
  }
  const std::string spec_path = r.resource.scale->spec_replicas_path;
  // The scale write is an update of the main resource's spec replicas field.
  Request main = r;
  main.info.subresource.clear();
  httplib::Response inner;
  WriteExisting(
      main,
      [&](const json& current) -> Result<json> {
        json scale = ScaleOf(r.resource, current);
        json next_scale;
        if (is_patch) {
          SLUICE_ASSIGN_OR_RETURN(next_scale,
                                  ApplyPatch(content_type, r.http.body, scale, r.resource, false));
        } else {
          next_scale = *put_body;
        }
        const std::string rv = ResourceVersionOf(next_scale);
        if (!rv.empty() && rv != ResourceVersionOf(current)) {
          return storage_internal::UpdateConflictError(r.key);
        }
        const json replicas = next_scale.value("/spec/replicas"_json_pointer, json());
        if (!replicas.is_number_integer() || replicas.get<int64_t>() < 0) {
          return Status::Unprocessable("spec.replicas: Invalid value: " + replicas.dump() +
                                           ": must be a non-negative integer",
                                       "spec.replicas");
        }
        json next = current;
        SetDottedPath(next, spec_path, replicas);
        return next;
      },
      inner);
  if (inner.status != 200) {
    res.status = inner.status;
    res.set_content(inner.body, "application/json");
    return;
  }
  json object = json::parse(inner.body);
  res.set_content(ScaleOf(r.resource, object).dump(), "application/json");
}

// ---- CRDs ------------------------------------------------------------------------------------

void ApiServer::OnCrdWritten(const json& crd) {
  const std::string name = crd.value("/metadata/name"_json_pointer, "");
  std::unique_lock lock(registry_mu_);
  if (Status s = registry_.AddCrd(crd); !s.ok()) {
    logger_.Error("CRD update not served", {{"crd", name}, {"error", s.message()}});
    return;
  }
  crds_[name] = crd;
}

void ApiServer::OnCrdDeleted(const json& crd) {
  const std::string name = crd.value("/metadata/name"_json_pointer, "");
  const std::string group = crd.value("/spec/group"_json_pointer, "");
  const std::string plural = crd.value("/spec/names/plural"_json_pointer, "");
  {
    std::unique_lock lock(registry_mu_);
    registry_.RemoveCrd(name);
    crds_.erase(name);
  }
  // The custom resources go with their definition.
  const std::string resource = group + "/" + plural;
  std::string token;
  do {
    Result<ListResult> page = storage_->List(resource, std::nullopt, kWatchInitialPage, token);
    if (!page.ok()) {
      logger_.Error("listing custom resources of a deleted CRD failed",
                    {{"crd", name}, {"error", page.status().message()}});
      return;
    }
    for (const Stored& s : page->items) {
      ObjectKey key{resource, s.object.value("/metadata/namespace"_json_pointer, ""),
                    s.object.value("/metadata/name"_json_pointer, "")};
      Result<Stored> gone = storage_->Delete(key, std::nullopt);
      if (!gone.ok() && gone.status().code() != StatusCode::kNotFound) {
        logger_.Error("deleting a custom resource of a deleted CRD failed",
                      {{"object", key.ToString()}, {"error", gone.status().message()}});
      }
    }
    token = page->continue_token;
  } while (!token.empty());
}

// ---- serviceaccounts/token and the default ServiceAccount ---------------------------------------

void ApiServer::CreateToken(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  const TokenRequestReply reply =
      ServeTokenRequest(*storage_, authenticator_->settings(), r.info.namespace_, r.info.name,
                        *body, clock_->WallNow());
  res.status = reply.code;
  res.set_content(reply.body.dump(), "application/json");
}

void ApiServer::CreateReview(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  Result<RbacPolicy> policy = ReadRbacPolicy(*storage_);
  if (!policy.ok()) {
    ReplyStatus(policy.status(), &r, res);
    return;
  }
  Result<json> answer =
      AnswerReview(r.resource.plural, std::move(*body), r.user, r.info.namespace_, *policy);
  if (!answer.ok() && answer.status().code() == StatusCode::kUnprocessable) {
    const json invalid = InvalidStatusJson(r.QualifiedKind(), "", r.resource.group, r.resource.kind,
                                           {{answer.status().field(), answer.status().message()}});
    res.status = 422;
    res.set_content(invalid.dump(), "application/json");
    return;
  }
  if (!answer.ok()) {
    ReplyStatus(answer.status(), &r, res);
    return;
  }
  (*answer)["apiVersion"] = r.resource.ApiVersion();
  (*answer)["kind"] = r.resource.kind;
  res.status = 201;
  res.set_content(answer->dump(), "application/json");
}

void ApiServer::AddDefaultServiceAccount(const std::string& namespace_) {
  std::optional<ResourceInfo> accounts = FindResource("", "v1", "serviceaccounts");
  if (!accounts) return;
  const Status s = EnsureDefaultServiceAccount(*storage_, *accounts, namespace_, clock_->WallNow());
  if (!s.ok()) {
    logger_.Warn("cannot create the default ServiceAccount",
                 {{"namespace", namespace_}, {"error", s.message()}});
  }
}

// ---- pods/log --------------------------------------------------------------------------------

void ApiServer::PodLog(Request& r, httplib::Response& res) {
  Result<Stored> pod = storage_->Get(r.key);
  if (!pod.ok()) {
    ReplyStatus(pod.status(), &r, res);
    return;
  }
  const json& object = pod->object;
  std::string container = Param(r.http, "container");
  std::vector<std::string> names;
  for (const json& c : object.value("/spec/containers"_json_pointer, json::array())) {
    names.push_back(c.value("name", ""));
  }
  if (container.empty()) {
    if (names.size() != 1) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : " ") + n;
      ReplyStatus(Status::InvalidArgument("a container name must be specified for pod " +
                                          r.info.name + ", choose one of: [" + list + "]"),
                  &r, res);
      return;
    }
    container = names.front();
  } else if (std::find(names.begin(), names.end(), container) == names.end()) {
    ReplyStatus(
        Status::InvalidArgument("container " + container + " is not valid for pod " + r.info.name),
        &r, res);
    return;
  }
  const std::string node_name = object.value("/spec/nodeName"_json_pointer, "");
  if (node_name.empty()) {
    ReplyStatus(Status::InvalidArgument("pod " + r.info.name + " does not have a host assigned"),
                &r, res);
    return;
  }
  Result<Stored> node = storage_->Get(ObjectKey{"core/nodes", "", node_name});
  if (!node.ok()) {
    ReplyStatus(Status::NotFound("nodes \"" + node_name + "\" not found"), &r, res);
    return;
  }
  std::string address;
  for (const json& a : node->object.value("/status/addresses"_json_pointer, json::array())) {
    if (a.value("type", "") == "InternalIP") address = a.value("address", "");
  }
  const int port =
      node->object.value("/status/daemonEndpoints/kubeletEndpoint/Port"_json_pointer, 0);
  if (address.empty() || port <= 0) {
    ReplyStatus(Status::Unavailable("node " + node_name +
                                    " publishes no kubelet endpoint (status.addresses InternalIP "
                                    "and status.daemonEndpoints.kubeletEndpoint.Port)"),
                &r, res);
    return;
  }
  std::string query;
  for (const char* p : {"follow", "tailLines", "timestamps", "sinceSeconds", "sinceTime",
                        "limitBytes", "previous"}) {
    if (r.http.has_param(p)) {
      query += (query.empty() ? "?" : "&") + std::string(p) + "=" +
               http::PercentEncode(r.http.get_param_value(p));
    }
  }
  http::ClientOptions client_options;
  client_options.base_url = "http://" + address + ":" + std::to_string(port);
  client_options.connect_timeout = options_.log_connect_timeout;
  client_options.read_timeout = std::chrono::hours(24);
  client_options.max_attempts = 1;
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(client_options);
  if (!client.ok()) {
    ReplyStatus(client.status(), &r, res);
    return;
  }
  const std::string path =
      "/containerLogs/" + r.info.namespace_ + "/" + r.info.name + "/" + container + query;
  std::shared_ptr<http::Client> shared(std::move(*client));
  CancellationToken shutdown = http_->shutdown_token();
  if (!TruthyParam(r.http, "follow")) {
    Result<http::Response> reply = shared->Get(path);
    if (!reply.ok()) {
      ReplyStatus(Status::Unavailable("fetching the log from node " + node_name + ": " +
                                      reply.status().message()),
                  &r, res);
      return;
    }
    if (reply->status != 200) {
      ReplyStatus(reply->ToStatus(), &r, res);
      return;
    }
    res.set_content(reply->body, "text/plain");
    return;
  }
  DisableCompression(r.http);
  res.set_chunked_content_provider(
      "text/plain", [shared, path, shutdown](size_t, httplib::DataSink& sink) -> bool {
        http::Request request;
        request.path = path;
        request.cancel = shutdown;
        Result<http::Response> head = shared->Stream(
            std::move(request), [](const http::Response& h) { return h.status == 200; },
            [&sink](std::string_view data) {
              return sink.is_writable() && sink.write(data.data(), data.size());
            });
        if (head.ok() && head->status != 200) {
          const std::string message = "error: " + head->ToStatus().message() + "\n";
          sink.write(message.data(), message.size());
        }
        sink.done();
        return true;
      });
}

}  // namespace sluice::apiserver
