#include "common/service/service_main.h"

#include <iostream>

#include "common/config/option.h"
#include "common/config/program_start.h"
#include "common/process/signals.h"

namespace sluice::service {

void AddServingOptions(config::Spec& spec, const ServingDefaults& d) {
  using config::Option;
  spec.Add(Option::String("address", d.address, d.address_help))
      .Add(Option::Int("port", d.port, "HTTP port; 0 picks a free one.").Min(0).Max(65535))
      .Add(Option::String("token-file", "", d.token_help))
      .Add(Option::Bool("metrics-require-token", true,
                        "Whether /metrics needs the token too (the operator's pods turn it off, "
                        "so Prometheus can scrape them)."))
      .Add(Option::Duration("shutdown-grace", d.shutdown_grace,
                            "Time in-flight requests get to finish on SIGTERM."))
      .Add(Option::String("tls-cert-file", "",
                          "PEM certificate chain to serve HTTPS with (read again when it "
                          "changes); empty: plain HTTP."))
      .Add(Option::String("tls-key-file", "", "PEM private key of --tls-cert-file."))
      .Add(Option::String("tls-ca-file", "",
                          "PEM CA bundle that verifies the Sluice peers this program calls at "
                          "https:// URLs (the dataflow, trainer rank 0, relays); empty: the "
                          "system's CAs."));
  if (d.max_body_bytes) {
    spec.Add(Option::Bytes("max-body-bytes", *d.max_body_bytes,
                           "Largest request body; larger ones get 413."));
  }
  if (!d.rollout_token_help.empty()) {
    spec.Add(Option::String("rollout-token-file", "", d.rollout_token_help));
  }
  if (!d.control_token_help.empty()) {
    spec.Add(Option::String("control-token-file", "", d.control_token_help));
  }
  if (d.worker_threads) {
    spec.Add(Option::Int("worker-threads", *d.worker_threads,
                         "HTTP worker threads (long polls hold one each).")
                 .Min(2)
                 .Max(1024));
  }
}

http::ServerOptions Service::ServerOptions() const {
  http::ServerOptions o;
  o.name = definition.component;
  o.address = config.GetString("address");
  o.port = static_cast<int>(config.GetInt("port"));
  o.auth = token;
  o.metrics_require_auth = config.GetBool("metrics-require-token");
  o.shutdown_grace =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.GetDuration("shutdown-grace"));
  if (definition.spec.Find("max-body-bytes") != nullptr) {
    o.max_body_bytes = config.GetBytes("max-body-bytes");
  }
  if (definition.spec.Find("worker-threads") != nullptr) {
    o.worker_threads = static_cast<size_t>(config.GetInt("worker-threads"));
  }
  if (const std::string& cert = config.GetString("tls-cert-file"); !cert.empty()) {
    o.tls = http::ServerTlsOptions{cert, config.GetString("tls-key-file"), ""};
  }
  return o;
}

http::ClientTlsOptions Service::PeerTls() const {
  http::ClientTlsOptions tls;
  if (definition.spec.Find("tls-ca-file") != nullptr) tls.ca_file = config.GetString("tls-ca-file");
  return tls;
}

namespace {

// A certificate needs its key and a key its certificate.
Status CheckServingTls(const config::Config& config) {
  const bool cert = !config.GetString("tls-cert-file").empty();
  const bool key = !config.GetString("tls-key-file").empty();
  if (cert && !key) {
    return Status::InvalidArgument("needed with --tls-cert-file", "--tls-key-file");
  }
  if (key && !cert) {
    return Status::InvalidArgument("needed with --tls-key-file", "--tls-cert-file");
  }
  return Status::Ok();
}

}  // namespace

Status Service::AdmitRolloutToken(http::ServerOptions& options,
                                  std::vector<http::RouteScope> scope) const {
  if (definition.spec.Find("rollout-token-file") == nullptr) return Status::Ok();
  const std::string& file = config.GetString("rollout-token-file");
  if (file.empty()) return Status::Ok();
  if (!options.auth) {
    return Status::InvalidArgument("needs --token-file (without it every route is open)",
                                   "--rollout-token-file");
  }
  Result<std::shared_ptr<http::TokenSource>> token = http::TokenSource::FromFile(file);
  if (!token.ok()) return Status::InvalidArgument(token.status().message(), "--rollout-token-file");
  std::vector<http::ScopedToken> tokens;
  tokens.emplace_back("rollout", *token, std::move(scope));
  options.authenticate_other = http::ScopedTokenHook(std::move(tokens));
  return Status::Ok();
}

Status Service::AdmitControlToken(http::ServerOptions& options,
                                  std::vector<http::RouteScope> peer_scope) const {
  if (definition.spec.Find("control-token-file") == nullptr) return Status::Ok();
  const std::string& file = config.GetString("control-token-file");
  if (file.empty()) return Status::Ok();
  Result<std::shared_ptr<http::TokenSource>> control = http::TokenSource::FromFile(file);
  if (!control.ok()) {
    return Status::InvalidArgument(control.status().message(), "--control-token-file");
  }
  options.auth = *control;
  if (token != nullptr) {
    std::vector<http::ScopedToken> tokens;
    tokens.emplace_back("peer", token, std::move(peer_scope));
    options.authenticate_other = http::ScopedTokenHook(std::move(tokens));
  }
  return Status::Ok();
}

int Service::Fail(int exit_code, std::string_view message) const {
  std::cerr << definition.program << ": " << message << "\n";
  return exit_code;
}

int RunService(const ServiceDefinition& definition, int argc, char** argv,
               const ServiceBody& body) {
  int exit_code = 0;
  std::optional<config::Config> cfg = config::StartProgram(
      definition.spec, argc, argv, definition.program, definition.summary, &exit_code);
  if (!cfg) return exit_code;
  CancellationSource stop;
  if (Status s = InstallShutdownSignals(stop); !s.ok()) {
    std::cerr << definition.program << ": " << s.ToString() << "\n";
    return 1;
  }
  if (definition.spec.Find("tls-cert-file") != nullptr) {
    if (Status s = CheckServingTls(*cfg); !s.ok()) {
      std::cerr << definition.program << ": flag " << s.field() << ": " << s.message() << "\n";
      return 2;
    }
  }
  log::Logger logger(definition.component);
  std::shared_ptr<http::TokenSource> token;
  if (definition.spec.Find("token-file") == nullptr) {
    // A program without the serving flags (the node agent) has no token of its own.
  } else if (const std::string& file = cfg->GetString("token-file"); !file.empty()) {
    Result<std::shared_ptr<http::TokenSource>> source = http::TokenSource::FromFile(file);
    if (!source.ok()) {
      std::cerr << definition.program << ": flag --token-file: " << source.status().message()
                << "\n";
      return 2;
    }
    token = *source;
  } else {
    logger.Warn("no --token-file: the API is open to anyone who can reach it");
  }
  metrics::Registry registry;
  Service service{definition, *cfg, logger, stop, registry, token};
  return body(service);
}

}  // namespace sluice::service
