// ApiServer's construction and bootstrap objects (system namespaces, default RBAC and
// ServiceAccounts), the replies every handler shares, and the routing of each request:
// authentication, rate limit, authorization, body decoding, then the handler of its verb and
// subresource. The handlers live in api_server_*.cpp, one concept each; what they share is in
// api_server_request.h.
#include "localcluster/apiserver/api_server.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/server.h"
#include "localcluster/apiserver/access_token.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/authenticator.h"
#include "localcluster/apiserver/custom_resources.h"
#include "localcluster/apiserver/deletion.h"
#include "localcluster/apiserver/garbage_collector.h"
#include "localcluster/apiserver/object_rules.h"
#include "localcluster/apiserver/protobuf_objects.h"
#include "localcluster/apiserver/rate_limiter.h"
#include "localcluster/apiserver/rbac_authorizer.h"
#include "localcluster/apiserver/request_authorization.h"
#include "localcluster/apiserver/request_info.h"
#include "localcluster/apiserver/service_accounts.h"
#include "localcluster/apiserver/watch_quota.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::Param;
using nlohmann::json;

// Storage keys group a resource's versions: "core/pods", "sluice.dev/rolloutpools".
std::string StorageKeyResource(const ResourceInfo& info) { return StorageResourceKey(info); }

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

bool WantsTable(const httplib::Request& req) {
  return req.get_header_value("Accept").find("as=Table") != std::string::npos;
}

}  // namespace

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
  watch_quota_ = std::make_unique<WatchQuota>(options_.max_watches_per_identity);
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
uint64_t ApiServer::gc_passes() const { return gc_->passes(); }

std::optional<ResourceInfo> ApiServer::FindResource(const std::string& group,
                                                    const std::string& version,
                                                    const std::string& plural) const {
  std::shared_lock lock(registry_mu_);
  const ResourceInfo* info = registry_.Find(group, version, plural);
  if (info == nullptr) return std::nullopt;
  return *info;
}

std::string ApiServer::LimitKey(const std::string& user, const std::string& peer) const {
  // One bucket and one watch quota per identity, not per token: a ServiceAccount's many tokens
  // share them. Without authentication (--insecure-http) every client is the same user, so the
  // peer address stands for the client.
  return options_.http.auth != nullptr ? "user:" + user : "addr:" + peer;
}

size_t ApiServer::open_watches(const std::string& identity) const {
  return watch_quota_->open(identity);
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
    const std::string client = LimitKey(user->name, req.remote_addr);
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

}  // namespace sluice::apiserver
