#include "localcluster/apiserver/apiserver_program.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/config/program_start.h"
#include "common/http/bearer_token.h"
#include "common/logging/logger.h"
#include "common/process/signals.h"
#include "localcluster/apiserver/access_token.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/apiserver_flags.h"
#include "localcluster/apiserver/kubeconfig_writer.h"
#include "localcluster/apiserver/serving_certs.h"
#include "localcluster/apiserver/sqlite_storage.h"

namespace sluice::apiserver {
namespace {

bool IsLoopback(const std::string& address) {
  return address == "127.0.0.1" || address == "localhost" || address == "::1" ||
         address.rfind("127.", 0) == 0;
}

}  // namespace

int RunApiServer(int argc, char** argv) {
  const config::Spec spec = ApiServerFlagSpec();
  int exit_code = 0;
  std::optional<config::Config> cfg =
      config::StartProgram(spec, argc, argv, "sluice-apiserver",
                           "A Kubernetes-compatible API server for one machine: kubectl "
                           "and the Sluice operator use it as they use a cluster.",
                           &exit_code);
  if (!cfg) return exit_code;
  log::Logger logger("apiserver");

  const std::string state_dir = cfg->GetString("state-dir");
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    std::cerr << "sluice-apiserver: flag --state-dir: cannot create " << state_dir << ": "
              << ec.message() << "\n";
    return 2;
  }
  const std::string address = cfg->GetString("address");
  const bool insecure = cfg->GetBool("insecure-http");
  if (insecure && !IsLoopback(address)) {
    std::cerr << "sluice-apiserver: flag --insecure-http: plain HTTP is only allowed on a "
                 "loopback address, not "
              << address << "\n";
    return 2;
  }

  CancellationSource stop;
  if (Status s = InstallShutdownSignals(stop); !s.ok()) {
    std::cerr << "sluice-apiserver: " << s.ToString() << "\n";
    return 1;
  }

  const std::string token_file =
      cfg->IsSet("token-file") ? cfg->GetString("token-file") : state_dir + "/token";
  Result<std::string> token = EnsureAccessToken(token_file);
  if (!token.ok()) {
    std::cerr << "sluice-apiserver: flag --token-file: " << token.status().message() << "\n";
    return 1;
  }

  const std::string key_file = cfg->IsSet("service-account-signing-key-file")
                                   ? cfg->GetString("service-account-signing-key-file")
                                   : state_dir + "/service-account.key";
  // The key is a random secret kept like the access token (0600, made once, never rotated here).
  Result<std::string> signing_key = EnsureAccessToken(key_file);
  if (!signing_key.ok()) {
    std::cerr << "sluice-apiserver: flag --service-account-signing-key-file: "
              << signing_key.status().message() << "\n";
    return 1;
  }

  SqliteStorageOptions storage_options;
  storage_options.path = state_dir + "/objects.db";
  storage_options.synchronous_full = cfg->GetBool("synchronous-full");
  storage_options.watch.history_capacity = static_cast<size_t>(cfg->GetInt("watch-history"));
  storage_options.watch.watcher_queue_capacity = static_cast<size_t>(cfg->GetInt("watcher-queue"));
  Result<std::unique_ptr<SqliteStorage>> storage = SqliteStorage::Open(storage_options);
  if (!storage.ok()) {
    std::cerr << "sluice-apiserver: opening " << storage_options.path << ": "
              << storage.status().message() << "\n";
    return 1;
  }

  ApiServerOptions options;
  options.http.address = address;
  options.http.port = static_cast<int>(cfg->GetInt("port"));
  options.http.max_body_bytes = cfg->GetBytes("max-body-bytes");
  options.http.worker_threads = static_cast<size_t>(cfg->GetInt("worker-threads"));
  options.http.max_queued_connections = options.http.worker_threads;
  // kubectl (client-go) never sends a bearer token over plain HTTP, so the loopback-only
  // insecure mode serves without authentication, like kube-apiserver's old insecure port.
  if (!insecure) options.http.auth = http::TokenSource::FromValue(*token);
  options.http.shutdown_grace = std::chrono::seconds(5);
  options.service_account_tokens.signing_key = *signing_key;
  options.service_account_tokens.issuer = cfg->GetString("service-account-issuer");
  options.rate_limit_qps = cfg->GetDouble("rate-limit-qps");
  options.rate_limit_burst = cfg->GetDouble("rate-limit-burst");
  options.max_watches_per_identity = static_cast<size_t>(cfg->GetInt("max-watches-per-identity"));

  std::string ca_pem;
  if (!insecure) {
    std::vector<std::string> hosts = cfg->GetStringList("tls-hosts");
    if (address != "0.0.0.0" && address != "::") hosts.push_back(address);
    Result<ServingCerts> certs =
        EnsureServingCerts(state_dir + "/pki", hosts, SystemClock().WallNow());
    if (!certs.ok()) {
      std::cerr << "sluice-apiserver: serving certificates: " << certs.status().message() << "\n";
      return 1;
    }
    options.http.tls = http::ServerTlsOptions{certs->cert_file, certs->key_file, ""};
    ca_pem = certs->ca_pem;
    if (!certs->reason.empty()) logger.Info("serving certificates", {{"reason", certs->reason}});
  }

  SystemClock clock;
  metrics::Registry registry;
  Result<std::unique_ptr<ApiServer>> server =
      ApiServer::Create(std::move(options), std::move(*storage), &clock, &registry, logger);
  if (!server.ok()) {
    std::cerr << "sluice-apiserver: " << server.status().message() << "\n";
    return 1;
  }
  if (Status s = (*server)->Start(); !s.ok()) {
    std::cerr << "sluice-apiserver: " << s.ToString() << "\n";
    return 1;
  }
  const std::string host = (address == "0.0.0.0" || address == "::") ? "127.0.0.1" : address;
  const std::string url = std::string(insecure ? "http://" : "https://") + host + ":" +
                          std::to_string((*server)->port());
  KubeconfigParams kubeconfig;
  kubeconfig.server = url;
  kubeconfig.ca_pem = ca_pem;
  kubeconfig.insecure = insecure;
  kubeconfig.token = *token;
  const std::string kubeconfig_path = cfg->GetString("kubeconfig").empty()
                                          ? state_dir + "/kubeconfig"
                                          : cfg->GetString("kubeconfig");
  if (Status s = WriteKubeconfig(kubeconfig_path, kubeconfig); !s.ok()) {
    std::cerr << "sluice-apiserver: flag --kubeconfig: " << s.message() << "\n";
    (*server)->Shutdown();
    return 1;
  }
  logger.Info("serving", {{"url", url}, {"kubeconfig", kubeconfig_path}, {"state_dir", state_dir}});
  while (!stop.Token().WaitFor(std::chrono::hours(1))) {
  }
  logger.Info("shutting down");
  (*server)->Shutdown();
  return 0;
}

}  // namespace sluice::apiserver
