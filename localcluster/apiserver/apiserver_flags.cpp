#include "localcluster/apiserver/apiserver_flags.h"

#include "localcluster/apiserver/service_account_token.h"

namespace sluice::apiserver {

config::Spec ApiServerFlagSpec() {
  config::Spec spec("SLUICE_APISERVER");
  spec.Add(config::Option::String("state-dir", ".sluice/apiserver",
                                  "Directory for the database, certificates, token and "
                                  "kubeconfig; created if missing."))
      .Add(config::Option::String("address", "127.0.0.1", "Address to listen on."))
      .Add(config::Option::Int("port", 6443, "Port to listen on; 0 picks a free one.")
               .Min(0)
               .Max(65535))
      .Add(config::Option::Bool("insecure-http", false,
                                "Serve plain HTTP without authentication instead of HTTPS "
                                "with a bearer token; only allowed on a loopback address."))
      .Add(config::Option::StringList("tls-hosts", {},
                                      "Extra DNS names and IPs for the serving certificate "
                                      "(localhost and 127.0.0.1 are always included)."))
      .Add(config::Option::String("kubeconfig", "",
                                  "Where to write the kubeconfig; default <state-dir>/kubeconfig."))
      .Add(config::Option::String("token-file", "",
                                  "Bearer token file; default <state-dir>/token, generated on "
                                  "first start."))
      .Add(config::Option::String("service-account-signing-key-file", "",
                                  "HMAC key that signs service-account tokens; default "
                                  "<state-dir>/service-account.key, generated on first start. "
                                  "Replacing it invalidates every token issued."))
      .Add(config::Option::String("service-account-issuer", kDefaultTokenIssuer,
                                  "The iss claim of service-account tokens; tokens with another "
                                  "are refused."))
      .Add(config::Option::Bytes("max-body-bytes", 3u << 20, "Largest request body accepted."))
      .Add(config::Option::Double("rate-limit-qps", 200,
                                  "Requests per second allowed per client; 0 disables.")
               .Min(0.0))
      .Add(config::Option::Double("rate-limit-burst", 400, "Burst allowed per client.").Min(1.0))
      .Add(config::Option::Int("worker-threads", 256,
                               "HTTP worker threads; each open watch holds one.")
               .Min(4)
               .Max(4096))
      .Add(config::Option::Int("max-watches-per-identity", 128,
                               "Open watches one user (a ServiceAccount, the admin, the node "
                               "agent) may hold; more get 429. Keep it well under "
                               "--worker-threads. 0: no limit.")
               .Min(0))
      .Add(config::Option::Int("watch-history", 10000,
                               "Events kept for watches resuming from a past resourceVersion.")
               .Min(1))
      .Add(config::Option::Int("watcher-queue", 1000,
                               "Events a slow watcher may have pending before it is "
                               "disconnected.")
               .Min(1))
      .Add(config::Option::Bool("synchronous-full", false,
                                "fsync every commit (durable across power loss; slower)."))
      .Add(config::Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info",
                                "Minimum level of the JSON log lines on stderr."));
  return spec;
}

}  // namespace sluice::apiserver
