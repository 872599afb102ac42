#include "workers/trainer/torch/trainer_service.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/hosts_file.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/model/model_download.h"
#include "workers/model/nn/blas_threads.h"
#include "workers/model/nn/decoder_model.h"
#include "workers/trainer/export_route.h"
#include "workers/trainer/master_address.h"
#include "workers/trainer/run_schedule.h"
#include "workers/trainer/torch/communicator.h"
#include "workers/trainer/torch/policy_trainer.h"
#include "workers/trainer/torch/run_resume.h"
#include "workers/trainer/torch/training_loop.h"
#include "workers/trainer/torch/warm_start_runner.h"
#include "workers/trainer/trainer_flags.h"
#include "workers/trainer/trainer_settings.h"
#include "workers/trainer/trainer_status.h"
#include "workers/weights/hf_export.h"
#include "workers/weights/weight_read_scope.h"
#include "workers/weights/weight_routes.h"
#include "workers/weights/weight_store.h"

namespace sluice::trainer {
namespace {

constexpr const char* kProgram = "sluice-trainer";

// The pod hosts file ($SLUICE_HOSTS_FILE) knows the headless Service's names on the local cluster
// (master_address.h); the system resolver (inside c10d) handles everything else.
std::string HostsFile() {
  const char* file = std::getenv("SLUICE_HOSTS_FILE");
  return file != nullptr ? file : "";
}

std::shared_ptr<http::HostsFileResolver> HostsResolver() {
  if (const char* file = std::getenv("SLUICE_HOSTS_FILE"); file != nullptr && *file != '\0') {
    return std::make_shared<http::HostsFileResolver>(file);
  }
  return nullptr;
}

Result<model::DecoderModel> LoadModel(const model::ModelSource& source) {
  if (!source.builtin_uri.empty()) return model::DecoderModel::FromBuiltin(source.builtin_uri);
  return model::DecoderModel::LoadHf(source.directory);
}

}  // namespace

int ServeTrainer(service::Service& svc, const std::string& trainer_config) {
  const config::Config* cfg = &svc.config;
  log::Logger& logger = svc.logger;
  CancellationSource stop = svc.stop;
  metrics::Registry& registry = svc.registry;
  const std::shared_ptr<http::TokenSource>& token = svc.token;
  const int rank = static_cast<int>(cfg->GetInt("rank"));
  const int world = static_cast<int>(cfg->GetInt("world-size"));
  if (rank >= world) {
    std::cerr << kProgram << ": flag --rank: " << rank << " is not below --world-size " << world
              << "\n";
    return 2;
  }
  Result<TrainerSettings> settings =
      LoadTrainerConfigFile(trainer_config, cfg->GetString("model-cache-dir"));
  if (!settings.ok()) {
    std::cerr << kProgram << ": flag --config: " << settings.status().ToString() << "\n";
    return 2;
  }
  const int64_t steps = cfg->GetInt("steps") > 0 ? cfg->GetInt("steps") : settings->spec.steps;
  if (cfg->GetInt("threads") > 0) torch::set_num_threads(static_cast<int>(cfg->GetInt("threads")));
  if (cfg->GetInt("blas-threads") > 0) {
    model::SetOpenBlasThreads(static_cast<int>(cfg->GetInt("blas-threads")));
  }

  // HTTP first, so /healthz answers during rendezvous and model load.
  TrainerStatusBoard board(&registry, settings->policy, rank);
  weights::WeightStore store(
      static_cast<size_t>(std::max<int64_t>(settings->policy_spec.weight_sync.keep_versions, 1)));
  weights::WeightRoutes weight_routes(store, &registry);
  // The tokenizer and generation files travel with every export; a model directory that cannot
  // be listed fails the model load below with its own error (a uri model's is listed once it is
  // downloaded).
  std::vector<std::string> sidecars;
  if (!settings->model.directory.empty()) {
    Result<std::vector<std::string>> files = weights::HfSidecarFiles(settings->model.directory);
    if (files.ok()) sidecars = std::move(*files);
  }
  ExportRoute export_route(store, ExportRoot(*cfg), settings->policy, std::move(sidecars), logger);
  http::ServerOptions options = svc.ServerOptions();
  options.write_timeout = std::chrono::milliseconds(120000);  // Large weight downloads.
  if (Status st = svc.AdmitRolloutToken(options, weights::WeightReadScope("")); !st.ok()) {
    std::cerr << kProgram << ": " << st.ToString() << "\n";
    return 2;
  }
  http::Server server(options, &registry, logger);
  server.AddReadinessCheck("gang", [&board]() {
    return board.ready() ? Status::Ok() : Status::Unavailable("joining the gang, loading");
  });
  server.Get("/v1/status", [&board](const httplib::Request&, httplib::Response& res) {
    http::ReplyJson(res, board.StatusJson());
  });
  if (rank == 0) {
    weight_routes.Register(server);
    export_route.Register(server);
  }
  if (Status s = server.Start(); !s.ok()) {
    std::cerr << kProgram << ": " << s.ToString() << "\n";
    return 1;
  }
  logger.Info("listening", {{"url", server.BaseUrl()}, {"rank", rank}, {"world_size", world}});

  auto fail = [&](const std::string& what, const Status& st) {
    board.SetPhase("Failed");
    logger.Error(what, {{"error", st.ToString()}});
    server.Shutdown();
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  };

  // A uri model: every rank downloads it into its node's cache (or finds it there) before the
  // rendezvous, so the collectives' timeout does not have to cover the transfer.
  if (!settings->model.uri.empty()) {
    board.SetPhase("Initializing", "downloading the model from " + settings->model.uri);
    model::ModelDownloadOptions download;
    download.resolver = HostsResolver();
    download.cancel = stop.Token();
    download.on_file = [&logger](const std::string& file, uint64_t bytes) {
      logger.Info("model file downloaded", {{"file", file}, {"bytes", bytes}});
    };
    Result<model::ModelDownload> got =
        model::FetchModelSource(settings->model, settings->text.tokenizer_file, download);
    if (!got.ok() && got.status().code() == StatusCode::kCancelled) {
      logger.Info("stopped while downloading the model");
      server.Shutdown();
      return 0;
    }
    if (!got.ok()) return fail("cannot download the model", got.status());
    logger.Info("model downloaded", {{"uri", settings->model.uri},
                                     {"directory", got->directory},
                                     {"reused", got->reused},
                                     {"files", got->files},
                                     {"bytes", got->bytes}});
    Result<std::vector<std::string>> files = weights::HfSidecarFiles(settings->model.directory);
    if (files.ok()) export_route.SetExtraFiles(std::move(*files));
    board.SetPhase("Initializing");
  }

  // Rendezvous.
  GlooOptions gloo;
  gloo.rank = rank;
  gloo.world_size = world;
  gloo.master_port = static_cast<int>(cfg->GetInt("master-port"));
  gloo.bind_address =
      cfg->GetString("address") == "0.0.0.0" ? "127.0.0.1" : cfg->GetString("address");
  gloo.timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg->GetDuration("collective-timeout"));
  Result<std::string> master =
      ResolveMasterAddress(cfg->GetString("master-addr"), HostsFile(), gloo.timeout, stop.Token(),
                           SystemClock::Instance());
  if (!master.ok() && master.status().code() == StatusCode::kCancelled) {
    logger.Info("stopped while looking up rank 0's address");
    server.Shutdown();
    return 0;
  }
  if (!master.ok()) return fail("rendezvous failed", master.status());
  gloo.master_addr = *master;
  Result<std::unique_ptr<Communicator>> comm = ConnectGloo(gloo);
  if (!comm.ok()) return fail("rendezvous failed", comm.status());

  const model::ModelSource source = settings->model;
  const std::string checkpoint_dir = cfg->GetString("checkpoint-dir");
  const bool checkpoints = !checkpoint_dir.empty() && settings->spec.checkpoint.has_value();

  // Rank 0's client of the dataflow (batches, acks, announcements, the warm start's rows).
  http::ClientOptions client_options;
  client_options.base_url = cfg->GetString("dataflow-url");
  client_options.token = token;
  client_options.tls = svc.PeerTls();
  client_options.resolver = HostsResolver();
  client_options.read_timeout = std::chrono::milliseconds(
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg->GetDuration("batch-wait")) +
      std::chrono::milliseconds(30000));
  Result<std::unique_ptr<http::Client>> http_client = http::Client::Create(client_options);
  if (!http_client.ok()) return fail("flag --dataflow-url", http_client.status());
  dataflow::DataflowClient dataflow(std::shared_ptr<http::Client>(std::move(*http_client)));

  // The warm start (spec.warmStart): supervised steps on the training split; RL then starts
  // from its weights, published as version spec.warmStart.steps.
  std::unique_ptr<PolicyTrainer> warm;
  if (settings->spec.warm_start) {
    WarmStartInputs in;
    in.settings = &*settings;
    in.loader = [&source] { return LoadModel(source); };
    in.comm = comm->get();
    in.fetch_rows = [&dataflow] { return dataflow.AllTrainRows(); };
    in.fetch_timeout = cfg->GetDuration("dataflow-timeout");
    in.checkpoint_dir = checkpoints ? checkpoint_dir : "";
    in.logger = &logger;
    in.stop = stop.Token();
    in.on_step = [&](const StepReport& r, int64_t total) {
      board.SetPhase("Running",
                     "warm start: step " + std::to_string(r.step) + " of " + std::to_string(total));
      logger.Info("warm start step", {{"step", r.step},
                                      {"steps", total},
                                      {"loss", r.loss},
                                      {"tokens_per_second", r.tokens_per_second}});
    };
    Result<std::unique_ptr<PolicyTrainer>> w = RunWarmStart(in);
    if (!w.ok() && w.status().code() == StatusCode::kCancelled) {
      logger.Info("stopped during the warm start");
      server.Shutdown();
      return 0;
    }
    if (!w.ok()) return fail("warm start failed", w.status());
    warm = std::move(*w);
  }
  PolicyTrainerOptions trainer_options;
  if (settings->spec.warm_start) trainer_options.version_base = settings->spec.warm_start->steps;
  auto initial_weights = [&source, &warm]() -> Result<model::DecoderModel> {
    Result<model::DecoderModel> m = LoadModel(source);
    if (m.ok() && warm) SLUICE_RETURN_IF_ERROR(CopyWeights(warm->model(), *m));
    return m;
  };
  Result<std::unique_ptr<PolicyTrainer>> trainer =
      PolicyTrainer::Create(*settings, initial_weights, comm->get(), trainer_options);
  if (!trainer.ok()) return fail("cannot build the trainer", trainer.status());
  warm.reset();  // Its optimizer state is no longer needed.
  PolicyTrainer& t = **trainer;
  export_route.SetModelConfig(t.model().config());

  // Rank 0: the weights it announces.
  std::string advertise = cfg->GetString("advertise-address");
  if (advertise.empty()) advertise = gloo.bind_address;
  TrainingLoopParts parts;
  parts.settings = &*settings;
  parts.trainer = &t;
  parts.comm = comm->get();
  parts.dataflow = &dataflow;
  parts.store = &store;
  parts.board = &board;
  parts.logger = &logger;
  parts.stop = stop.Token();
  parts.rank = rank;
  parts.steps = steps;
  parts.checkpoint_dir = checkpoints ? checkpoint_dir : "";
  const char* scheme = cfg->GetString("tls-cert-file").empty() ? "http://" : "https://";
  parts.weights_base = scheme + advertise + ":" + std::to_string(server.port()) + "/v1/weights/";
  parts.batch_wait =
      std::chrono::duration_cast<std::chrono::seconds>(cfg->GetDuration("batch-wait"));
  parts.dataflow_timeout = cfg->GetDuration("dataflow-timeout");
  parts.groups_per_batch = cfg->GetInt("groups-per-batch");
  // Resume from the newest usable checkpoint, at a version no earlier run announced.
  const ResumeOutcome resumed = ResumeRun(parts, checkpoint_dir);
  if (resumed.failure) return fail(resumed.failure->what, resumed.failure->status);
  board.SetStart(t.step(), t.version());
  RunSchedule schedule(steps, checkpoints ? settings->spec.checkpoint->every_steps : 0);
  schedule.Resumed(resumed.checkpointed_step, resumed.held_through);
  TrainingLoop loop(std::move(parts), schedule);
  if (rank == 0) {
    if (Status s = loop.PublishAndAnnounce(); !s.ok()) return fail("publishing failed", s);
  }
  board.SetPhase("Running");
  board.SetReady(true);
  logger.Info("training", {{"policy", settings->policy},
                           {"steps", steps},
                           {"from_step", t.step()},
                           {"algorithm", settings->spec.algorithm.type},
                           {"blas_threads", model::OpenBlasThreads()}});

  const LoopOutcome outcome = loop.Run();
  if (outcome.failure) return fail(outcome.failure->what, outcome.failure->status);
  if (std::optional<LoopFailure> f = loop.Finish(outcome.end)) return fail(f->what, f->status);
  if (outcome.end == RunEnd::kStarved) {
    // The data ran out before --steps: what was learned is kept; say so and wait to be stopped.
    board.SetPhase("Starved", "the dataflow can no longer feed policy " + settings->policy +
                                  " after step " + std::to_string(t.step()) + " of " +
                                  std::to_string(steps) + ": " + loop.starved_reason());
    logger.Warn("starved; waiting for SIGTERM",
                {{"step", t.step()}, {"steps", steps}, {"reason", loop.starved_reason()}});
    stop.Token().Wait();
    server.Shutdown();
    return 1;
  }
  const bool finished = outcome.end == RunEnd::kFinished;
  board.SetPhase(finished ? "Succeeded" : "Running");
  logger.Info(finished ? "finished" : "stopped", {{"step", t.step()}, {"version", t.version()}});
  // Rank 0 is where replicas fetch the final version from: keep serving it a while.
  const auto final_grace = cfg->GetDuration("final-weights-grace");
  if (finished && rank == 0 && final_grace.count() > 0 && !stop.Token().IsCancelled()) {
    logger.Info("serving the final weights until stopped",
                {{"version", t.version()},
                 {"grace_seconds", std::chrono::duration<double>(final_grace).count()}});
    stop.Token().WaitFor(final_grace);
  }
  server.Shutdown();
  return 0;
}

}  // namespace sluice::trainer
