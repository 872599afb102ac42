// ApiServer: the HTTP front of the local Kubernetes-compatible API server (`sluice-apiserver`).
//
// It assembles the parts in this directory into kube-apiserver's REST API for the resources
// Sluice uses: discovery (legacy and aggregated), OpenAPI v2/v3, get/list/watch/create/update/
// patch/delete/deletecollection on built-in and CRD-defined resources, the status, scale and
// pods/log subresources, Table output for `kubectl get`, custom resource defaulting, pruning and
// validation (schema and CEL), finalizers and garbage collection. docs/local-cluster.md lists
// what it implements and every known difference from a real API server.
//
// Requests go through common/http/server.h (body cap, timeouts, access logs, /healthz, /readyz,
// /metrics); the Authenticator (authenticator.h) accepts the admin token and service-account
// tokens, answers anything else with kube's 401 and puts each request's user in the access log;
// a per-client token bucket answers 429 with Retry-After. Impersonation headers (`kubectl --as`)
// then RBAC (rbac_authorizer.h, request_authorization.h) decide every request's access, with
// kube's 403; Pod Security admission (pod_security.h) checks pods against their namespace's
// labels. ServiceAccounts get kube's defaults (service_accounts.h) and the TokenRequest
// subresource (token_request.h).
//
// Ownership: owns the storage, the registry of served resources and the garbage collector.
// Thread safety: Start/Shutdown from the owning thread; handlers run concurrently on the HTTP
// workers (the registry is guarded by a shared mutex; storage is thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/service_account_token.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {

class Authenticator;
class GarbageCollector;
class ClientRateLimiter;
class WatchQuota;
struct ErrorSubject;
struct RequestInfo;

struct ApiServerOptions {
  http::ServerOptions http;  // Address, port, TLS, token, body cap, worker threads.
  // Per-client request rate (client = the authenticated user, else the peer address); 0
  // disables.
  double rate_limit_qps = 200;
  double rate_limit_burst = 400;
  // BOOKMARK events are sent this often to watches that ask for them.
  std::chrono::seconds bookmark_interval{30};
  // Watches without timeoutSeconds end after this (kube: 30-60 min; clients re-watch).
  std::chrono::seconds max_watch_duration{1800};
  // Open watches each identity may hold (watch_quota.h): every watch holds a worker thread, so
  // keep this well under http.worker_threads. 0: no limit.
  size_t max_watches_per_identity = 128;
  // Garbage collector's full pass period (it also runs after every delete).
  std::chrono::milliseconds gc_period{2000};
  // /version's gitVersion.
  std::string version = "v1.32.0-sluice";
  // Pod logs are fetched from the node agent over plain HTTP at
  // http://<node InternalIP>:<status.daemonEndpoints.kubeletEndpoint.Port>/containerLogs/...
  std::chrono::seconds log_connect_timeout{5};
  // Service-account tokens (service_account_token.h): the HS256 signing key (main keeps one in
  // the state directory; empty: Create draws a random one, so tokens die with the server), the
  // issuer and the audiences the server accepts.
  TokenSettings service_account_tokens;
};

class ApiServer {
 public:
  // Loads the CRDs found in `storage` into the served resources. `clock` (for timestamps and
  // the GC) and `registry` must outlive the server; `registry` may be null.
  static Result<std::unique_ptr<ApiServer>> Create(ApiServerOptions options,
                                                   std::unique_ptr<Storage> storage, Clock* clock,
                                                   metrics::Registry* registry,
                                                   const log::Logger& logger);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  Status Start();
  // Stops accepting, ends watches, stops the garbage collector. Idempotent.
  void Shutdown();
  int port() const;
  std::string BaseUrl() const;
  Storage& storage() { return *storage_; }
  // Garbage collector passes finished so far (GarbageCollector::passes); for tests, which wait
  // for passes instead of sleeping. Callable from any thread.
  uint64_t gc_passes() const;
  // Watches the client `identity` holds open now (WatchQuota): "user:<name>" for an
  // authenticated user, "addr:<peer address>" without authentication (--insecure-http).
  // Callable from any thread.
  size_t open_watches(const std::string& identity) const;

 private:
  struct Request;  // One parsed API request; defined in api_server_request.h.

  ApiServer(ApiServerOptions options, std::unique_ptr<Storage> storage, Clock* clock,
            metrics::Registry* registry, const log::Logger& logger);
  Status LoadCrds();
  // Creates default, kube-system, kube-public and kube-node-lease when missing, as a cluster
  // has them from the start.
  Status EnsureSystemNamespaces();
  // Creates kube's default ClusterRoles and ClusterRoleBindings (rbac_authorizer.h) when missing.
  Status EnsureBootstrapRbac();

  // The key of a client's rate bucket and watch quota (see open_watches).
  std::string LimitKey(const std::string& user, const std::string& peer) const;
  void Handle(const std::string& method, const httplib::Request& req, httplib::Response& res);
  void HandleNonResource(const RequestInfo& info, const httplib::Request& req,
                         httplib::Response& res);
  void HandleResource(Request& r, httplib::Response& res);

  void Get(Request& r, httplib::Response& res);
  void List(Request& r, httplib::Response& res);
  void Watch(Request& r, httplib::Response& res);
  void Create(Request& r, httplib::Response& res);
  void Update(Request& r, httplib::Response& res);
  void Patch(Request& r, httplib::Response& res);
  void Delete(Request& r, httplib::Response& res);
  void DeleteCollection(Request& r, httplib::Response& res);
  void GetScale(Request& r, httplib::Response& res);
  void WriteScale(Request& r, httplib::Response& res);
  void PodLog(Request& r, httplib::Response& res);
  void CreateToken(Request& r, httplib::Response& res);  // serviceaccounts/token.
  // Access reviews (`kubectl auth can-i`, `kubectl auth whoami`): answered, not stored.
  void CreateReview(Request& r, httplib::Response& res);
  // Creates the `default` ServiceAccount of `namespace_` when missing (kube's serviceaccounts
  // controller, run inline after namespace creates and ServiceAccount deletes); errors are logged.
  void AddDefaultServiceAccount(const std::string& namespace_);

  // The shared write path of update, patch and scale: `fn` maps the current object to the
  // body-to-apply; admission (PrepareUpdate, CR validation) and finalization follow.
  using MutateFn = std::function<Result<nlohmann::json>(const nlohmann::json& current)>;
  void WriteExisting(Request& r, const MutateFn& fn, httplib::Response& res);
  // Admission of a new or updated object; errors are written to `res` (returns false).
  bool Admit(Request& r, nlohmann::json& object, const nlohmann::json* old_object,
             httplib::Response& res, Status* admit_error);
  // Pod Security admission (pod_security.h): namespace labels, pods, workload templates.
  bool AdmitPodSecurityOf(Request& r, const nlohmann::json& object,
                          const nlohmann::json* old_object, httplib::Response& res,
                          Status* admit_error);
  // Logs each CEL rule of `crd` the evaluator could not run, once per process.
  void LogSkippedRules(const std::string& crd, const std::vector<std::string>& rules);

  // Applies side effects of CRD writes to the served resources.
  void OnCrdWritten(const nlohmann::json& crd);
  void OnCrdDeleted(const nlohmann::json& crd);

  void ReplyObject(Request& r, const nlohmann::json& object, int code, httplib::Response& res);
  void ReplyStatus(const Status& status, const Request* r, httplib::Response& res);

  // Copies of the registry entry (and CRD, for custom resources) under the shared lock.
  std::optional<ResourceInfo> FindResource(const std::string& group, const std::string& version,
                                           const std::string& plural) const;
  std::optional<nlohmann::json> FindCrd(const std::string& name) const;

  ApiServerOptions options_;
  std::unique_ptr<Storage> storage_;
  Clock* clock_;
  log::Logger logger_;
  std::unique_ptr<Authenticator> authenticator_;  // Made before http_, whose hook uses it.
  std::unique_ptr<http::Server> http_;
  std::unique_ptr<GarbageCollector> gc_;
  std::unique_ptr<ClientRateLimiter> limiter_;
  std::unique_ptr<WatchQuota> watch_quota_;

  mutable std::shared_mutex registry_mu_;
  ResourceRegistry registry_;                   // Guarded by registry_mu_.
  std::map<std::string, nlohmann::json> crds_;  // By CRD name; guarded by registry_mu_.

  metrics::CounterFamily* requests_ =
      nullptr;                         // sluice_apiserver_requests_total{verb,resource,code}
  metrics::Gauge* watches_ = nullptr;  // sluice_apiserver_watches
  std::mutex skipped_mu_;
  std::set<std::string> skipped_logged_;  // CEL rules already reported as skipped.
};

}  // namespace sluice::apiserver
