// ServiceMain: what every long-running Sluice worker program does around its own work, written
// once. RunService parses the command line (flags > environment > --config YAML > defaults;
// --help and --version), turns SIGTERM and SIGINT into a cancellation token, makes the JSON-lines
// logger and the metrics registry, reads the bearer token file, and then runs the program's
// body with all of it in a Service. The body builds its HTTP server from
// Service::ServerOptions() (so /healthz, /readyz and /metrics come with it) and returns the exit
// status after its own graceful shutdown.
//
// AddServingOptions declares the flags that ServerOptions() and the token read: --address,
// --port, --token-file, --metrics-require-token, --shutdown-grace and the TLS files
// (--tls-cert-file and --tls-key-file to serve HTTPS, --tls-ca-file to verify the peers it
// calls: PeerTls), plus --max-body-bytes, --worker-threads, --rollout-token-file and
// --control-token-file where the program sets defaults for them.
//
// Usage (a main.cpp):
//   int main(int argc, char** argv) {
//     return service::RunService(Definition(), argc, argv, [](service::Service& s) {
//       http::Server server(s.ServerOptions(), &s.registry, s.logger);
//       ...
//       s.stop.Token().Wait();
//       server.Shutdown();
//       return 0;
//     });
//   }
//
// Exit statuses: 0 after --help or --version; 2 for a bad flag (a TLS certificate without its
// key, or the reverse), config file or token file
// (printed as "<program>: <message>"); 1 when the signal handlers cannot be installed; else the
// body's. A program may leave the serving flags out (the node agent serves with its own
// settings): it then has no token and does not call ServerOptions().
//
// Thread safety: RunService is called once, from main, before any thread starts. The Service it
// passes lives until the body returns; its members are safe to share as their own types say.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/config.h"
#include "common/config/spec.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/scoped_token.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"

namespace sluice::service {

// The serving flags' defaults and help that differ between programs.
struct ServingDefaults {
  std::string address = "0.0.0.0";
  std::string address_help = "Address to listen on (the pod's IP).";
  int port = 8080;
  // What the token guards, for --token-file's help.
  std::string token_help =
      "Bearer token this program's /v1 routes require and sends to its peers; empty: none "
      "(development only).";
  std::chrono::seconds shutdown_grace{5};
  std::optional<uint64_t> max_body_bytes;  // Declares --max-body-bytes when set.
  std::optional<int> worker_threads;       // Declares --worker-threads when set.
  // Declares --rollout-token-file, with this help, when not empty (Service::AdmitRolloutToken).
  std::string rollout_token_help;
  // Declares --control-token-file, with this help, when not empty (Service::AdmitControlToken).
  std::string control_token_help;
};

// Declares the serving flags on `spec` (see the file comment).
void AddServingOptions(config::Spec& spec, const ServingDefaults& defaults);

// A program: its name (in --help, --version and errors: "sluice-dataflow"), its component (the
// logger's and the HTTP server's name: "dataflow"), the --help summary and its flags.
struct ServiceDefinition {
  std::string program;
  std::string component;
  std::string summary;
  config::Spec spec;
};

// What RunService hands the body.
struct Service {
  const ServiceDefinition& definition;
  const config::Config& config;
  log::Logger& logger;
  // Cancelled by the first SIGTERM or SIGINT; the body may cancel it too (a copy shares it).
  CancellationSource stop;
  metrics::Registry& registry;
  // --token-file's token (re-read when the file rotates); null when the flag is empty or the
  // program does not declare it.
  std::shared_ptr<http::TokenSource> token;

  // The HTTP server's options from the serving flags (AddServingOptions must have declared
  // them): name, address, port, auth (the token), metrics_require_auth, shutdown_grace, tls (when
  // --tls-cert-file is set), and max_body_bytes and worker_threads when declared.
  // The body adjusts timeouts and the like on the copy.
  http::ServerOptions ServerOptions() const;
  // What verifies the Sluice peers this program calls (--tls-ca-file; empty: the system's CAs).
  // Only https:// URLs use it.
  http::ClientTlsOptions PeerTls() const;
  // Where the program declares --rollout-token-file and it is set: the rollout replicas' token,
  // read from that file, admits the routes of `scope` on a server with `options`
  // (http::ScopedTokenHook; the --token-file token still admits every route). InvalidArgument
  // naming the flag when the file cannot be read or --token-file is empty.
  Status AdmitRolloutToken(http::ServerOptions& options, std::vector<http::RouteScope> scope) const;
  // Where the program declares --control-token-file and it is set: that token (the operator's,
  // re-read when the file rotates) becomes the server's own, admitting every route, and
  // --token-file's token, when set, admits only the routes of `peer_scope` (role "peer"; the
  // program still sends it to the servers it calls). Without the flag `options` is unchanged.
  // InvalidArgument naming the flag when its file cannot be read.
  Status AdmitControlToken(http::ServerOptions& options,
                           std::vector<http::RouteScope> peer_scope) const;
  // Prints "<program>: <message>" on stderr and returns `exit_code`: for errors while starting.
  int Fail(int exit_code, std::string_view message) const;
};

using ServiceBody = std::function<int(Service& service)>;

// Runs the program (see the file comment); returns its exit status.
int RunService(const ServiceDefinition& definition, int argc, char** argv, const ServiceBody& body);

}  // namespace sluice::service
