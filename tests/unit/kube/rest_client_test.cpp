// RestClient, errors, DynamicClient and discovery against a scripted server on loopback.
#include "kube/rest_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/metrics/exposition.h"
#include "kube/core_resources.h"
#include "kube/discovery.h"
#include "kube/dynamic_client.h"
#include "kube/errors.h"
#include "tests/unit/kube/test_server.h"

namespace sluice::kube {
namespace {

namespace fs = std::filesystem;
using testing::AutoAdvance;
using testing::ReplyStatus;
using testing::ScriptedServer;

RestRequest Root() {
  RestRequest r;
  r.path = "/";
  return r;
}

RestClientOptions FastOptions(FakeClock* clock) {
  RestClientOptions o;
  o.backoff.base_delay = std::chrono::milliseconds(100);
  o.backoff.max_delay = std::chrono::milliseconds(400);
  o.clock = clock;
  return o;
}

std::unique_ptr<RestClient> MakeClient(RestConfig config, RestClientOptions options) {
  Result<std::unique_ptr<RestClient>> c = RestClient::Create(std::move(config), options);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

TEST(KubeErrorsTest, MapsEveryStatusReason) {
  struct Case {
    int code;
    std::string reason;
    StatusCode want;
    bool (*pred)(const Status&);
  };
  const std::vector<Case> cases = {
      {404, "NotFound", StatusCode::kNotFound, IsNotFound},
      {409, "AlreadyExists", StatusCode::kAlreadyExists, IsAlreadyExists},
      {409, "Conflict", StatusCode::kConflict, IsConflict},
      {422, "Invalid", StatusCode::kUnprocessable, IsInvalid},
      {403, "Forbidden", StatusCode::kPermissionDenied, IsForbidden},
      {401, "Unauthorized", StatusCode::kUnauthenticated, IsUnauthorized},
      {410, "Expired", StatusCode::kGone, IsGone},
      {410, "Gone", StatusCode::kGone, IsGone},
      {429, "TooManyRequests", StatusCode::kTooManyRequests, IsTooManyRequests},
      {500, "ServerTimeout", StatusCode::kDeadlineExceeded, IsServerTimeout},
      {504, "Timeout", StatusCode::kDeadlineExceeded, IsServerTimeout},
      {500, "InternalError", StatusCode::kInternal, IsInternalError},
      {400, "BadRequest", StatusCode::kInvalidArgument, IsBadRequest},
  };
  for (const Case& c : cases) {
    const std::string body = R"({"kind":"Status","reason":")" + c.reason +
                             R"(","message":"m","code":)" + std::to_string(c.code) + "}";
    const Status s = ParseApiError(c.code, body, "").ToStatus();
    EXPECT_EQ(s.code(), c.want) << c.reason;
    EXPECT_TRUE(c.pred(s)) << c.reason;
    EXPECT_EQ(s.message(), "m");
  }
  // Not a Status body: the HTTP code decides.
  EXPECT_EQ(ParseApiError(404, "<html>", "").ToStatus().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseApiError(503, "", "").ToStatus().code(), StatusCode::kUnavailable);
}

TEST(KubeErrorsTest, InvalidKeepsCausesAndRetryAfterIsRead) {
  const ApiError e = ParseApiError(422, R"({"kind":"Status","reason":"Invalid","code":422,
      "message":"RolloutPool.sluice.dev \"p\" is invalid: spec.replicas: must be >= 0",
      "details":{"causes":[{"reason":"FieldValueInvalid","message":"must be >= 0",
      "field":"spec.replicas"},{"reason":"FieldValueRequired","message":"Required value",
      "field":"spec.policy"}]}})",
                                   "");
  ASSERT_EQ(e.causes.size(), 2u);
  EXPECT_EQ(e.causes[1].field, "spec.policy");
  EXPECT_EQ(e.causes[0].type, "FieldValueInvalid");
  EXPECT_EQ(e.ToStatus().field(), "spec.replicas");
  const ApiError no_message = ParseApiError(
      422, R"({"kind":"Status","reason":"Invalid","details":{"causes":[{"message":"bad",
      "field":"a"},{"message":"worse","field":"b"}]}})",
      "");
  EXPECT_EQ(no_message.ToStatus().message(), "a: bad; b: worse");
  EXPECT_EQ(ParseApiError(429, "{}", "7").retry_after, std::chrono::seconds(7));
  EXPECT_EQ(ParseApiError(500, R"({"kind":"Status","reason":"ServerTimeout",
      "details":{"retryAfterSeconds":3}})",
                          "")
                .retry_after,
            std::chrono::seconds(3));
}

TEST(KubeErrorsTest, ABodyOfAnyShapeParsesWithoutThrowing) {
  // A kind of another type: not a Status, so the body is the message.
  EXPECT_EQ(ParseApiError(404, R"({"kind":1})", "").ToStatus().code(), StatusCode::kNotFound);
  // A code no HTTP reply has is ignored; a wild Retry-After is capped at a day.
  ApiError e = ParseApiError(
      409, R"({"kind":"Status","code":4294967705,"details":{"retryAfterSeconds":99999999999}})",
      "");
  EXPECT_EQ(e.http_code, 409);
  ASSERT_TRUE(e.retry_after.has_value());
  EXPECT_EQ(*e.retry_after, std::chrono::seconds(86400));
  e = ParseApiError(429, R"({"kind":"Status","details":{"retryAfterSeconds":-5}})", "");
  EXPECT_EQ(e.retry_after, std::chrono::seconds(0));
  // Too deep a body is not parsed.
  e = ParseApiError(500, std::string(3000, '[') + std::string(3000, ']'), "");
  EXPECT_EQ(e.message, std::string(512, '['));
}

TEST(RestClientTest, SendsTokenUserAgentAndMapsErrors) {
  ScriptedServer server;
  server.SetHandler([](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/api/v1/namespaces/ns/pods/missing") {
      return ReplyStatus(res, 404, "NotFound", "pods \\\"missing\\\" not found");
    }
    res.set_content(R"({"kind":"Pod","metadata":{"name":"p"}})", "application/json");
  });
  FakeClock clock;
  RestConfig cfg;
  cfg.host = server.Url();
  cfg.bearer_token = "tok";
  metrics::Registry registry;
  RestClientOptions opts = FastOptions(&clock);
  opts.registry = &registry;
  auto client = MakeClient(cfg, opts);
  DynamicClient dyn(*client);
  Result<nlohmann::json> pod = Pods(dyn, "ns").Get("p");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ((*pod)["metadata"]["name"], "p");
  Result<nlohmann::json> missing = Pods(dyn, "ns").Get("missing");
  EXPECT_TRUE(IsNotFound(missing.status()));
  EXPECT_EQ(missing.status().message(), "pods \"missing\" not found");
  const auto seen = server.Requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].Header("Authorization"), "Bearer tok");
  EXPECT_EQ(seen[0].Header("User-Agent"), "sluice-operator/0.1.0");
  EXPECT_EQ(seen[0].Header("Accept"), "application/json");
  const std::string text = metrics::ExposeText(registry);
  EXPECT_NE(text.find("rest_client_requests_total{code=\"404\",method=\"GET\""), std::string::npos)
      << text;
}

TEST(RestClientTest, BasicAuthAndRotatingTokenFile) {
  ScriptedServer server;
  server.SetHandler([](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  FakeClock clock;
  RestConfig basic;
  basic.host = server.Url();
  basic.username = "admin";
  basic.password = "pw";
  ASSERT_TRUE(MakeClient(basic, FastOptions(&clock))->Do(Root()).ok());
  EXPECT_EQ(server.Requests().back().Header("Authorization"), "Basic YWRtaW46cHc=");

  const fs::path dir = fs::temp_directory_path() / ("kube-token-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "token") << "first\n";
  RestConfig file;
  file.host = server.Url();
  file.token_file = (dir / "token").string();
  auto client = MakeClient(file, FastOptions(&clock));
  ASSERT_TRUE(client->Do(Root()).ok());
  EXPECT_EQ(server.Requests().back().Header("Authorization"), "Bearer first");
  // Rotation: a new file content with a new mtime.
  std::ofstream(dir / "token") << "second\n";
  fs::last_write_time(dir / "token", fs::last_write_time(dir / "token") + std::chrono::seconds(5));
  ASSERT_TRUE(client->Do(Root()).ok());
  EXPECT_EQ(server.Requests().back().Header("Authorization"), "Bearer second");
  fs::remove_all(dir);
}

TEST(RestClientTest, RetriesTransientErrorsHonouringRetryAfterButNotConflict) {
  ScriptedServer server;
  std::atomic<int> failures{2};
  server.SetHandler([&](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/conflict") return ReplyStatus(res, 409, "Conflict", "changed");
    if (req.path == "/unavailable") return ReplyStatus(res, 503, "ServiceUnavailable", "down");
    if (failures.fetch_sub(1) > 0) {
      res.set_header("Retry-After", "2");
      return ReplyStatus(res, 429, "TooManyRequests", "slow down");
    }
    res.set_content("{}", "application/json");
  });
  FakeClock clock;
  RestConfig cfg;
  cfg.host = server.Url();
  cfg.qps = 0;  // Only the retry waits count here.
  auto client = MakeClient(cfg, FastOptions(&clock));
  {
    AutoAdvance advance(clock);
    RestRequest post;
    post.method = "POST";
    post.path = "/limited";
    post.body = "{}";
    ASSERT_TRUE(client->Do(post).ok());  // 429 is retried even for POST.
    EXPECT_GE(advance.advanced(), std::chrono::milliseconds(4000));
    EXPECT_LT(advance.advanced(), std::chrono::milliseconds(4200));
  }
  EXPECT_EQ(server.Count(), 3u);

  RestRequest conflict;
  conflict.method = "PUT";
  conflict.path = "/conflict";
  EXPECT_TRUE(IsConflict(client->Do(conflict).status()));
  EXPECT_EQ(server.Count(), 4u);  // Not retried.

  {
    AutoAdvance advance(clock);
    RestRequest get;
    get.path = "/unavailable";
    EXPECT_EQ(client->Do(get).status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(server.Count(), 9u);  // 5 attempts.
    RestRequest post;
    post.method = "POST";
    post.path = "/unavailable";
    EXPECT_EQ(client->Do(post).status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(server.Count(), 10u);  // A POST is not repeated on 503.
  }
}

TEST(RestClientTest, ClientSideRateLimitUsesTheClock) {
  ScriptedServer server;
  server.SetHandler([](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  FakeClock clock;
  RestConfig cfg;
  cfg.host = server.Url();
  cfg.qps = 2;
  cfg.burst = 3;
  auto client = MakeClient(cfg, FastOptions(&clock));
  AutoAdvance advance(clock);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Do(Root()).ok());
  EXPECT_EQ(advance.advanced().count(), 0);  // The burst passes at once.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(client->Do(Root()).ok());
  // Four more at 2 qps: about two seconds.
  EXPECT_GE(advance.advanced(), std::chrono::milliseconds(1990));
  EXPECT_LE(advance.advanced(), std::chrono::milliseconds(2100));
}

TEST(RestClientTest, ExecPluginTokenIsRefreshedOn401) {
  const fs::path dir = fs::temp_directory_path() / ("kube-exec-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path plugin = dir / "plugin.sh";
  std::ofstream(plugin) << R"(#!/bin/sh
n=$(cat "$0.count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$0.count"
echo "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t$n\"}}"
)";
  chmod(plugin.c_str(), 0755);
  ScriptedServer server;
  server.SetHandler([](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "Bearer t2") {
      return ReplyStatus(res, 401, "Unauthorized", "Unauthorized");
    }
    res.set_content("{}", "application/json");
  });
  FakeClock clock;
  RestConfig cfg;
  cfg.host = server.Url();
  ExecConfig exec;
  exec.api_version = kExecApiV1beta1;
  exec.command = plugin.string();
  cfg.exec = std::make_shared<ExecCredentialProvider>(exec, clock);
  auto client = MakeClient(cfg, FastOptions(&clock));
  ASSERT_TRUE(client->Do(Root()).ok());
  EXPECT_EQ(cfg.exec->runs(), 2);
  ASSERT_TRUE(client->Do(Root()).ok());
  EXPECT_EQ(cfg.exec->runs(), 2);  // Cached again.
  fs::remove_all(dir);
}

TEST(DynamicClientTest, PathsQueriesAndBodiesOfEveryVerb) {
  const GroupVersionResource pools{"sluice.dev", "v1alpha1", "rolloutpools", true};
  EXPECT_EQ(ResourcePath(pools, "ns", "p", "scale"),
            "/apis/sluice.dev/v1alpha1/namespaces/ns/rolloutpools/p/scale");
  EXPECT_EQ(ResourcePath(kNamespaces, "ignored", "x"), "/api/v1/namespaces/x");
  EXPECT_EQ(ResourcePath(kPods, ""), "/api/v1/pods");

  ScriptedServer server;
  server.SetHandler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" && req.path.ends_with("/rolloutpools")) {
      const std::string cont = req.get_param_value("continue");
      if (cont.empty()) {
        res.set_content(R"({"kind":"RolloutPoolList","metadata":{"resourceVersion":"10",
            "continue":"page2"},"items":[{"metadata":{"name":"a"}}]})",
                        "application/json");
      } else {
        res.set_content(R"({"kind":"RolloutPoolList","metadata":{"resourceVersion":"11"},
            "items":[{"metadata":{"name":"b"}}]})",
                        "application/json");
      }
      return;
    }
    res.set_content(R"({"ok":true})", "application/json");
  });
  FakeClock clock;
  RestConfig cfg;
  cfg.host = server.Url();
  cfg.qps = 0;
  auto client = MakeClient(cfg, FastOptions(&clock));
  DynamicClient dyn(*client);
  ResourceClient rc = dyn.Resource(pools, "ns");

  ListOptions lo;
  lo.label_selector = "app=x,tier!=db";
  lo.field_selector = "metadata.name=a";
  lo.limit = 1;
  Result<ObjectList> all = rc.ListAll(lo);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->items.size(), 2u);
  EXPECT_EQ((*all->items[1])["metadata"]["name"], "b");
  EXPECT_EQ((*all->items[0])["kind"], "RolloutPool");
  EXPECT_EQ((*all->items[0])["apiVersion"], "sluice.dev/v1alpha1");
  EXPECT_EQ(all->resource_version, "11");
  auto seen = server.Requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].Param("labelSelector"), "app=x,tier!=db");
  EXPECT_EQ(seen[0].Param("fieldSelector"), "metadata.name=a");
  EXPECT_EQ(seen[0].Param("limit"), "1");
  EXPECT_EQ(seen[1].Param("continue"), "page2");

  const nlohmann::json obj = {{"apiVersion", "sluice.dev/v1alpha1"},
                              {"kind", "RolloutPool"},
                              {"metadata", {{"name", "p"}, {"resourceVersion", "5"}}}};
  ASSERT_TRUE(rc.Create(obj, {"sluice", false, true}).ok());
  ASSERT_TRUE(rc.Update(obj).ok());
  ASSERT_TRUE(rc.UpdateStatus(obj).ok());
  ASSERT_TRUE(rc.Patch("p", PatchType::kMerge, R"({"spec":{"x":1}})").ok());
  ASSERT_TRUE(rc.Patch("p", PatchType::kJson, R"([{"op":"remove","path":"/spec/x"}])").ok());
  ASSERT_TRUE(Pods(dyn, "ns").Patch("q", PatchType::kStrategicMerge, R"({"metadata":{}})").ok());
  ASSERT_TRUE(rc.Apply(obj, {"sluice-operator", true, false}).ok());
  EXPECT_FALSE(rc.Patch("p", PatchType::kApply, "{}").ok());  // Needs a field manager.
  DeleteOptions del;
  del.propagation_policy = "Foreground";
  del.grace_period_seconds = 0;
  del.precondition_uid = "u1";
  del.precondition_resource_version = "5";
  ASSERT_TRUE(rc.Delete("p", del).ok());
  ASSERT_TRUE(rc.GetScale("p").ok());
  ASSERT_TRUE(rc.UpdateScale("p", {{"spec", {{"replicas", 3}}}}).ok());

  seen = server.Requests();
  ASSERT_EQ(seen.size(), 12u);
  EXPECT_EQ(seen[2].method, "POST");
  EXPECT_EQ(seen[2].path, "/apis/sluice.dev/v1alpha1/namespaces/ns/rolloutpools");
  EXPECT_EQ(seen[2].Param("fieldManager"), "sluice");
  EXPECT_EQ(seen[2].Param("dryRun"), "All");
  EXPECT_EQ(seen[3].method, "PUT");
  EXPECT_EQ(nlohmann::json::parse(seen[3].body)["metadata"]["resourceVersion"], "5");
  EXPECT_EQ(seen[4].path, "/apis/sluice.dev/v1alpha1/namespaces/ns/rolloutpools/p/status");
  EXPECT_EQ(seen[5].Header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(seen[6].Header("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(seen[7].Header("Content-Type"), "application/strategic-merge-patch+json");
  EXPECT_EQ(seen[7].path, "/api/v1/namespaces/ns/pods/q");
  EXPECT_EQ(seen[8].Header("Content-Type"), "application/apply-patch+yaml");
  EXPECT_EQ(seen[8].Param("fieldManager"), "sluice-operator");
  EXPECT_EQ(seen[8].Param("force"), "true");
  EXPECT_EQ(seen[9].method, "DELETE");
  const nlohmann::json del_body = nlohmann::json::parse(seen[9].body);
  EXPECT_EQ(del_body["propagationPolicy"], "Foreground");
  EXPECT_EQ(del_body["gracePeriodSeconds"], 0);
  EXPECT_EQ(del_body["preconditions"]["uid"], "u1");
  EXPECT_EQ(del_body["preconditions"]["resourceVersion"], "5");
  EXPECT_EQ(seen[10].path, "/apis/sluice.dev/v1alpha1/namespaces/ns/rolloutpools/p/scale");
  EXPECT_EQ(seen[11].method, "PUT");
}

TEST(DiscoveryTest, CachesAndRefreshesWhenAResourceIsMissing) {
  ScriptedServer server;
  std::atomic<bool> crd_installed{false};
  server.SetHandler([&](const httplib::Request& req, httplib::Response& res) {
    if (req.path != "/apis/sluice.dev/v1alpha1") return ReplyStatus(res, 404, "NotFound", "no");
    std::string resources = R"([{"name":"policies","kind":"Policy","namespaced":true,
        "verbs":["get","list"]})";
    if (crd_installed) {
      resources += R"(,{"name":"rolloutpools","kind":"RolloutPool","namespaced":true},
          {"name":"rolloutpools/scale","kind":"Scale","namespaced":true})";
    }
    res.set_content(R"({"kind":"APIResourceList","resources":)" + resources + "]}",
                    "application/json");
  });
  FakeClock clock;
  RestConfig cfg;
  cfg.host = server.Url();
  cfg.qps = 0;
  auto client = MakeClient(cfg, FastOptions(&clock));
  DiscoveryClient discovery(*client);
  Result<GroupVersionResource> p = discovery.Find("sluice.dev", "v1alpha1", "Policy");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->resource, "policies");
  EXPECT_TRUE(discovery.Find("sluice.dev", "v1alpha1", "policies").ok());
  EXPECT_EQ(discovery.fetches(), 1);
  EXPECT_TRUE(IsNotFound(discovery.Find("sluice.dev", "v1alpha1", "RolloutPool").status()));
  EXPECT_EQ(discovery.fetches(), 2);  // Refreshed once before giving up.
  crd_installed = true;
  Result<GroupVersionResource> pool = discovery.Find("sluice.dev", "v1alpha1", "RolloutPool");
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->resource, "rolloutpools");
  EXPECT_TRUE(IsNotFound(discovery.ResourcesFor("other.dev", "v1").status()));
}

// ---- TLS, with certificates made by the openssl command line tool --------------------------

class RestTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("kube-tls-" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    const std::string cmd =
        "cd " + dir_->string() +
        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 "
        "-subj /CN=test-ca 2>/dev/null"
        " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
        "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:kubernetes.default "
        "2>/dev/null"
        " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
        "-out server.crt -days 2 -copy_extensions copy 2>/dev/null"
        " && openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
        "-subj /CN=operator 2>/dev/null"
        " && openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
        "-out client.crt -days 2 2>/dev/null";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(ok_) << "the openssl command could not make test certificates (make deps installs "
                        "Debian's openssl)";
  }
  static std::string P(const char* name) { return (*dir_ / name).string(); }
  static std::string Read(const char* name) {
    std::ifstream in(*dir_ / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  static fs::path* dir_;
  static bool ok_;
};
fs::path* RestTlsTest::dir_ = nullptr;
bool RestTlsTest::ok_ = false;

TEST_F(RestTlsTest, CaClientCertificateAndTokenFromKubeconfigData) {
  ScriptedServer server(P("server.crt"), P("server.key"), P("ca.crt"));
  server.SetHandler([](const httplib::Request& req, httplib::Response& res) {
    res.set_content(R"({"auth":")" + req.get_header_value("Authorization") + "\"}",
                    "application/json");
  });
  FakeClock clock;
  RestConfig cfg;
  cfg.host = server.Url();
  cfg.tls.ca_pem = Read("ca.crt");
  cfg.tls.client_cert_pem = Read("client.crt");
  cfg.tls.client_key_pem = Read("client.key");
  cfg.bearer_token = "tls-token";
  auto client = MakeClient(cfg, FastOptions(&clock));
  Result<nlohmann::json> r = client->DoJson(Root());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["auth"], "Bearer tls-token");

  // Without a client certificate the handshake fails; it is an error, not a hang.
  RestConfig no_cert = cfg;
  no_cert.tls.client_cert_pem.clear();
  no_cert.tls.client_key_pem.clear();
  RestClientOptions one_try = FastOptions(&clock);
  one_try.max_attempts = 1;
  EXPECT_FALSE(MakeClient(no_cert, one_try)->Do(Root()).ok());

  // Another CA does not verify the server.
  RestConfig wrong_ca = cfg;
  wrong_ca.tls.ca_pem = Read("client.crt");
  EXPECT_FALSE(MakeClient(wrong_ca, one_try)->Do(Root()).ok());

  // tls-server-name: verify the certificate against another name.
  RestConfig named = cfg;
  named.tls.ca_pem.clear();
  named.tls.ca_file = P("ca.crt");
  named.tls.server_name = "kubernetes.default";
  EXPECT_TRUE(MakeClient(named, FastOptions(&clock))->Do(Root()).ok());
}

}  // namespace
}  // namespace sluice::kube
