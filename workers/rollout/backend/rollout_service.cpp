#include "workers/rollout/backend/rollout_service.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/hosts_file.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/model/nn/blas_threads.h"
#include "workers/rollout/backend/engine_backend.h"
#include "workers/rollout/backend/hosted_policies.h"
#include "workers/rollout/external/openai_backend.h"
#include "workers/rollout/external_weight_sink.h"
#include "workers/rollout/rollout_flags.h"
#include "workers/rollout/rollout_settings.h"
#include "workers/rollout/rollout_worker.h"
#include "workers/rollout/sandbox/sandbox_policy.h"
#include "workers/rollout/weight_updater.h"
#include "workers/rollout/worker_host.h"
#include "workers/weights/weight_read_scope.h"

namespace sluice::rollout {
namespace {

constexpr const char* kProgram = "sluice-rollout";

// MemAvailable from /proc/meminfo, in bytes; 0 when unknown.
uint64_t AvailableHostMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace

int ServeRollout(service::Service& svc) {
  const config::Config* cfg = &svc.config;
  log::Logger& logger = svc.logger;
  CancellationSource stop = svc.stop;
  metrics::Registry& registry = svc.registry;
  const std::shared_ptr<http::TokenSource>& token = svc.token;
  const std::vector<std::string> hosted = SplitPolicyList(cfg->GetString("policies"));
  if (hosted.empty()) {
    std::cerr << kProgram << ": flag --policies: must name at least one policy\n";
    return 2;
  }
  Result<RolloutSettings> settings = LoadRolloutConfigFile(cfg->GetString("policy-config"), hosted,
                                                           cfg->GetString("model-cache-dir"));
  if (!settings.ok()) {
    std::cerr << kProgram << ": flag --policy-config: " << settings.status().ToString() << "\n";
    return 2;
  }
  // Model-written code never sees this worker's tokens, configuration, weights or caches.
  SandboxPolicy sandbox;
  sandbox.isolation = *ParseSandboxIsolation(cfg->GetString("sandbox-isolation"));
  const char* tmpdir = std::getenv("TMPDIR");
  sandbox.hidden_directories = WorkerHiddenDirectories(
      {cfg->GetString("weights-volume"), cfg->GetString("model-cache-dir"),
       cfg->GetString("staging-dir"), tmpdir != nullptr ? tmpdir : ""},
      {cfg->GetString("token-file"), cfg->GetString("environment-token-file"),
       cfg->GetString("policy-config")});
  SetSandboxPolicy(sandbox);
  if (cfg->GetInt("threads") > 0) torch::set_num_threads(static_cast<int>(cfg->GetInt("threads")));
  if (cfg->GetInt("blas-threads") > 0) {
    model::SetOpenBlasThreads(static_cast<int>(cfg->GetInt("blas-threads")));
  }

  // The environment server is user code outside the experiment: it gets its own credential, if
  // any, and never the experiment's token.
  std::string environment_token;
  if (const std::string& file = cfg->GetString("environment-token-file"); !file.empty()) {
    Result<std::shared_ptr<http::TokenSource>> source = http::TokenSource::FromFile(file);
    if (!source.ok()) {
      std::cerr << kProgram << ": flag --environment-token-file: " << source.status().message()
                << "\n";
      return 2;
    }
    environment_token = (*source)->Get();
  }
  std::shared_ptr<http::HostsFileResolver> resolver;
  if (const char* f = std::getenv("SLUICE_HOSTS_FILE"); f != nullptr && *f != '\0') {
    resolver = std::make_shared<http::HostsFileResolver>(f);
  }
  std::string replica = cfg->GetString("replica");
  if (replica.empty()) {
    const char* host = std::getenv("HOSTNAME");
    replica = host != nullptr ? host : "rollout";
  }
  const std::string pool = cfg->GetString("pool").empty() ? settings->pool : cfg->GetString("pool");

  // The engine.
  engine::EngineOptions engine_options;
  engine_options.max_tokens_per_step = cfg->GetInt("max-batch-tokens");
  engine_options.max_running = static_cast<int32_t>(cfg->GetInt("max-concurrent-sequences"));
  const uint64_t available = AvailableHostMemory();
  const uint64_t cap = cfg->GetBytes("kv-cache-max-bytes");
  engine_options.kv_cache_bytes = static_cast<int64_t>(
      available == 0
          ? cap
          : std::min<uint64_t>(cap, static_cast<uint64_t>(cfg->GetDouble("kv-cache-fraction") *
                                                          static_cast<double>(available) /
                                                          static_cast<double>(hosted.size()))));
  const bool builtin = cfg->GetString("engine") == "builtin";
  std::unique_ptr<EngineBackend> engine_backend;
  std::unique_ptr<OpenAiBackend> external_backend;
  std::unique_ptr<ExternalWeightSink> external_sink;
  GenerationBackend* backend = nullptr;
  WeightSink* sink = nullptr;
  if (builtin) {
    engine_backend = std::make_unique<EngineBackend>(engine_options);
    backend = engine_backend.get();
    sink = engine_backend.get();
  } else {
    // One server holds one set of weights: one policy, from an HF directory it can load too.
    const HostedPolicy& p = settings->policies.front();
    if (settings->policies.size() != 1 || p.model.directory.empty()) {
      std::cerr << kProgram << ": flag --engine: " << cfg->GetString("engine")
                << " serves exactly one policy whose model is a directory (path or pvc)\n";
      return 2;
    }
    OpenAiBackendOptions o;
    o.base_url = cfg->GetString("engine-url");
    o.flavour = cfg->GetString("engine") == "vllm" ? ServerFlavour::kVllm : ServerFlavour::kSglang;
    o.served_models[p.name] = cfg->GetString("served-model-name").empty()
                                  ? p.model.directory
                                  : cfg->GetString("served-model-name");
    o.max_concurrent_requests = static_cast<int>(cfg->GetInt("max-concurrent-sequences"));
    Result<std::unique_ptr<OpenAiBackend>> made = OpenAiBackend::Create(o);
    if (!made.ok()) {
      std::cerr << kProgram << ": flag --engine-url: " << made.status().ToString() << "\n";
      return 2;
    }
    external_backend = std::move(*made);
    external_sink = std::make_unique<ExternalWeightSink>(
        external_backend.get(), cfg->GetString("weights-volume"), p.model.directory,
        static_cast<int>(std::max<int64_t>(2, p.keep_versions)));
    backend = external_backend.get();
    sink = external_sink.get();
  }

  // HTTP first, so /healthz answers while the models load.
  std::string staging = cfg->GetString("staging-dir");
  if (staging.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    staging = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/sluice-rollout-" +
              replica + "-weights";
  }
  WeightUpdaterOptions wu;
  wu.token = token;
  wu.tls = svc.PeerTls();
  wu.relay_server_name = cfg->GetString("relay-server-name");
  wu.resolver = resolver;
  wu.staging_dir = staging;
  wu.dataflow_url = cfg->GetString("dataflow-url");
  for (const HostedPolicy& p : settings->policies) {
    wu.keep_versions = std::max<size_t>(wu.keep_versions, static_cast<size_t>(p.keep_versions));
    wu.chunk_bytes[p.name] = p.chunk_bytes;
  }
  WeightUpdater updater(hosted, 0, wu, sink, &registry);
  updater.SetRelay(cfg->GetString("weights-relay"));

  http::ServerOptions options = svc.ServerOptions();
  options.write_timeout = std::chrono::milliseconds(120000);
  // A peer holds the same rollout token: it may read this replica's relayed versions only.
  if (Status st = svc.AdmitControlToken(options, weights::WeightReadScope("/v1/relay/[^/]+"));
      !st.ok()) {
    std::cerr << kProgram << ": " << st.ToString() << "\n";
    return 2;
  }
  http::Server server(options, &registry, logger);
  WorkerHost host(&updater,
                  std::chrono::duration_cast<std::chrono::seconds>(cfg->GetDuration("drain-grace")),
                  &logger);
  host.Register(server);
  if (Status s = server.Start(); !s.ok()) {
    std::cerr << kProgram << ": " << s.ToString() << "\n";
    return 1;
  }
  logger.Info("listening", {{"url", server.BaseUrl()},
                            {"replica", replica},
                            {"pool", pool},
                            {"blas_threads", model::OpenBlasThreads()}});

  // Models.
  HostedPolicyLoad loaded =
      LoadHostedPolicies(settings->policies, engine_backend.get(), resolver, stop.Token(), logger);
  if (loaded.failure) {
    server.Shutdown();
    const Status& s = loaded.failure->status;
    if (s.code() == StatusCode::kCancelled) return 0;
    logger.Error(loaded.failure->what,
                 {{"policy", loaded.failure->policy}, {"error", s.ToString()}});
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }

  http::ClientOptions client_options;
  client_options.base_url = cfg->GetString("dataflow-url");
  client_options.token = token;
  client_options.tls = svc.PeerTls();
  client_options.resolver = resolver;
  client_options.read_timeout = std::chrono::milliseconds(
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg->GetDuration("lease-wait")) +
      std::chrono::milliseconds(30000));
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(client_options);
  if (!client.ok()) {
    std::cerr << kProgram << ": flag --dataflow-url: " << client.status().ToString() << "\n";
    server.Shutdown();
    return 2;
  }
  dataflow::DataflowClient dataflow(std::shared_ptr<http::Client>(std::move(*client)));

  RolloutWorkerOptions wo;
  wo.worker_id = replica;
  wo.pool = pool;
  wo.region = cfg->GetString("region");
  wo.max_sequences = cfg->GetInt("max-concurrent-sequences");
  wo.max_episodes = cfg->GetInt("max-episodes") > 0
                        ? cfg->GetInt("max-episodes")
                        : std::max<int64_t>(1, cfg->GetInt("max-concurrent-sequences") / 4);
  wo.lease_wait = std::chrono::duration_cast<std::chrono::seconds>(cfg->GetDuration("lease-wait"));
  wo.environment_token = environment_token;
  EngineGauges gauges;
  if (builtin) {
    gauges.kv_usage = [&engine_backend] { return engine_backend->KvUsage(); };
    gauges.tokens_per_second = [&engine_backend] { return engine_backend->TokensPerSecond(); };
  }
  host.SetWorker(std::make_unique<RolloutWorker>(wo, &dataflow, backend, loaded.texts, &updater,
                                                 gauges, &registry));
  // SIGTERM: drain (stop leasing, let episodes finish within --drain-grace), then stop.
  host.Run(stop);
  logger.Info("shut down", {});
  server.Shutdown();
  return 0;
}

}  // namespace sluice::rollout
