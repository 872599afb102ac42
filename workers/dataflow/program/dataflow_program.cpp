#include "workers/dataflow/program/dataflow_program.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_service.h"
#include "workers/dataflow/rollout_route_scope.h"
#include "workers/dataflow/settings/dataflow_flags.h"
#include "workers/dataflow/settings/dataflow_settings.h"
#include "workers/weights/final_weights.h"
#include "workers/weights/weight_read_scope.h"

namespace sluice::dataflow {

int ServeDataflow(service::Service& s) {
  const config::Config& cfg = s.config;
  std::optional<DataflowSettings> from_manifest;
  if (const std::string& manifest = cfg.GetString("dataflow-manifest"); !manifest.empty()) {
    Result<api::Dataflow> df = LoadDataflowManifestFile(manifest, cfg.GetString("dataflow-name"));
    if (!df.ok()) return s.Fail(2, "flag --dataflow-manifest: " + df.status().message());
    const DataflowMounts mounts{cfg.GetString("dataset-mount-dir"),
                                cfg.GetString("dataset-pvc-mount-dir")};
    Result<DataflowSettings> mapped = SettingsFromDataflow(*df, mounts);
    if (!mapped.ok()) {
      return s.Fail(2, "Dataflow " + df->metadata.name + " in " + manifest + ": " +
                           mapped.status().ToString());
    }
    from_manifest = std::move(mapped).value();
    s.logger.Info("configured from a Dataflow", {{"manifest", manifest},
                                                 {"dataflow", from_manifest->name},
                                                 {"policies", from_manifest->config.policies}});
  } else if (cfg.IsSet("dataflow-name")) {
    return s.Fail(2, "flag --dataflow-name: needs --dataflow-manifest");
  }
  Result<DataflowFlagSettings> settings =
      ResolveDataflowFlags(cfg, from_manifest ? &*from_manifest : nullptr);
  if (!settings.ok()) return s.Fail(2, settings.status().ToString());
  Result<Dataset> dataset = Dataset::Load(settings->dataset);
  if (!dataset.ok()) return s.Fail(2, "dataset: " + dataset.status().ToString());
  s.logger.Info("dataset loaded", {{"name", dataset->name()},
                                   {"train_rows", dataset->train_size()},
                                   {"eval_rows", dataset->eval_size()}});

  http::ServerOptions options = s.ServerOptions();
  std::vector<http::RouteScope> rollout_scope = RolloutRouteScope();
  for (http::RouteScope& r : weights::WeightReadScope("/v1/final/[^/]+")) {
    rollout_scope.push_back(std::move(r));
  }
  if (Status st = s.AdmitRolloutToken(options, std::move(rollout_scope)); !st.ok()) {
    return s.Fail(2, st.ToString());
  }
  // Long polls may hold a request up to max-wait; writing a large batch takes time too.
  options.read_timeout = std::chrono::milliseconds(60000);
  options.write_timeout = std::chrono::milliseconds(60000);
  http::Server server(options, &s.registry, s.logger);
  DataflowService dataflow(settings->service, settings->config, &*dataset, &SystemClock::Instance(),
                           &s.registry, s.logger);
  dataflow.Register(server);
  // The final weights of policies whose trainers have finished, for rollout replicas created
  // after the trainer's pods are gone (workers/weights/final_weights.h), beside the log.
  using Announced = weights::FinalWeights::Announced;
  weights::FinalWeights final_weights(
      settings->service.wal.dir + "/final-weights", settings->config.policies,
      [&dataflow](const std::string& policy) -> Result<std::optional<Announced>> {
        if (!dataflow.recovered()) return Status::Unavailable("the dataflow is recovering");
        for (const PolicyVersion& v : dataflow.core()->AnnouncedVersions()) {
          if (v.policy == policy)
            return std::optional(Announced{v.version.number, v.version.digest});
        }
        return std::optional<Announced>();
      });
  final_weights.Register(server);
  if (Status st = server.Start(); !st.ok()) return s.Fail(1, st.ToString());
  s.logger.Info("listening", {{"url", server.BaseUrl()}, {"port", server.port()}});
  if (Status st = dataflow.Recover(); !st.ok()) {
    server.Shutdown();
    return s.Fail(st.code() == StatusCode::kInvalidArgument ? 2 : 1, st.ToString());
  }
  if (Status st = final_weights.Load(); !st.ok()) {
    // Not fatal: the trainer, or a ready replica, still serves the version.
    s.logger.Warn("final weights not loaded", {{"error", st.ToString()}});
  }

  // Serve until SIGTERM/SIGINT or a log failure.
  CancellationSource done;
  CancellationRegistration on_stop = s.stop.Token().OnCancel([&done] { done.Cancel(); });
  CancellationRegistration on_fatal = dataflow.fatal_token().OnCancel([&done] { done.Cancel(); });
  done.Token().Wait();
  const bool fatal = dataflow.fatal_token().IsCancelled();
  s.logger.Info("shutting down", {{"reason", fatal ? "write-ahead log failure" : "signal"}});
  server.Shutdown();
  Status stopped = dataflow.Stop();
  if (fatal || !stopped.ok()) return 1;
  s.logger.Info("stopped cleanly");
  return 0;
}

}  // namespace sluice::dataflow
