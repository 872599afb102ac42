// The fixture of the dataflow HTTP benchmark (dataflow_http_bench_harness.h): the workload, the
// leased-task handles, scratch directories, and the in-process service with its HTTP server.
#include "bench/dataflow_http_bench_harness.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string_view>
#include <system_error>
#include <utility>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "common/http/bearer_token.h"
#include "common/logging/logger.h"

namespace sluice::dataflow::http_bench {
namespace {

using bench::BenchClock;
using bench::Check;
using bench::Seconds;
using bench::TempPath;

constexpr char kToken[] = "bench-token";
constexpr uint64_t kNoSnapshots = uint64_t{1} << 62;

const log::Logger& QuietLogger() {
  static const log::Logger logger("bench", SystemClock::Instance(), [](std::string_view) {});
  return logger;
}

}  // namespace

Dataset MakeDataset() {
  DatasetSource source;
  source.builtin = BuiltinDataset{"arithmetic", 10000, 100, 7};
  source.epochs = 100;
  Result<Dataset> dataset = Dataset::Load(source);
  Check(dataset.status(), "dataset");
  return std::move(dataset).value();
}

DataflowConfig MakeConfig() {
  DataflowConfig c;
  c.policies = {kPolicy};
  c.group_size = kSamplesPerGroup;
  c.lease_duration = std::chrono::seconds(3600);
  c.capacity_groups = int64_t{1} << 30;  // Never throttles,
  c.staleness.max_staleness = 100000;    // nor does the staleness budget (no versions here).
  c.groups_per_batch = kBatchGroups;
  c.ack_timeout = std::chrono::seconds(3600);
  c.sampling = {{"temperature", 1.0}, {"max_tokens", kTokensPerSample - kPromptTokens}};
  c.workflow = {{"type", "single-turn"}};
  c.epochs = 100;
  return c;
}

std::vector<Sample> TemplateSamples() {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> logprob(-4.0f, 0.0f);
  std::vector<Sample> samples(kSamplesPerGroup);
  for (int i = 0; i < kSamplesPerGroup; ++i) {
    Sample& s = samples[static_cast<size_t>(i)];
    s.policy = kPolicy;
    s.tokens.resize(kTokensPerSample);
    s.loss_mask.resize(kTokensPerSample);
    s.behaviour_logprobs.resize(kTokensPerSample);
    s.versions.resize(kTokensPerSample);
    for (int t = 0; t < kTokensPerSample; ++t) {
      const bool generated = t >= kPromptTokens;
      const size_t at = static_cast<size_t>(t);
      s.tokens[at] = static_cast<int32_t>(rng() % 151000);
      s.loss_mask[at] = generated ? 1 : 0;
      s.behaviour_logprobs[at] = generated ? logprob(rng) : 0.0f;
      s.versions[at] = generated ? 0 : kNoVersion;
    }
    s.reward = i % 2;
    s.finish_reason = "stop";
    s.turn_starts = {static_cast<uint32_t>(kPromptTokens)};
    s.generation_seconds = 2.5;
    s.reward_seconds = 0.01;
  }
  return samples;
}

std::vector<Leased> FromReply(const LeaseReply& reply) {
  std::vector<Leased> out;
  for (const LeasedTask& t : reply.tasks) {
    out.push_back({t.task_id, t.lease_id, t.prompt_id, t.attempt});
  }
  return out;
}

void EncodeFor(const Leased& task, TrajectoryGroup& group, std::string* body) {
  group.task_id = task.task_id;
  group.lease_id = task.lease_id;
  group.prompt_id = task.prompt_id;
  group.attempt = task.attempt;
  for (Sample& s : group.samples) s.prompt_id = task.prompt_id;
  body->clear();
  Check(EncodeTrajectoryGroup(group, body), "encode");
}

std::string NewDir(const std::string& name) {
  static int counter = 0;
  const std::string dir = TempPath() + "/" + name + "-" + std::to_string(++counter);
  std::filesystem::create_directories(dir);
  return dir;
}

void RemoveDir(const std::string& dir) {
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

Harness::Harness(const Dataset* dataset, const std::string& wal_dir, bool fsync, bool serve) {
  registry_ = std::make_unique<metrics::Registry>();
  DataflowServiceOptions options;
  options.wal.dir = wal_dir;
  options.wal.fsync = fsync;
  options.snapshot_bytes = kNoSnapshots;
  options.snapshot_on_stop = false;
  options.maintenance_interval = std::chrono::milliseconds(1000);
  service_ = std::make_unique<DataflowService>(
      options, MakeConfig(), dataset, &SystemClock::Instance(), registry_.get(), QuietLogger());
  if (serve) {
    http::ServerOptions so;
    so.name = "dataflow-bench";
    so.port = 0;
    so.max_body_bytes = size_t{64} << 20;
    so.worker_threads = kServerWorkers;
    so.max_queued_connections = kServerWorkers;
    so.auth = http::TokenSource::FromValue(kToken);
    so.access_log = true;
    server_ = std::make_unique<http::Server>(so, registry_.get(), QuietLogger());
    service_->Register(*server_);
    Check(server_->Start(), "server start");
  }
}

Harness::~Harness() {
  if (server_) server_->Shutdown();
  Check(service_->Stop(), "service stop");
  service_.reset();
  server_.reset();
}

double Harness::Recover() {
  const BenchClock::time_point began = BenchClock::now();
  Check(service_->Recover(), "recover");
  return Seconds(began);
}

std::unique_ptr<http::Client> Harness::NewClient() const {
  http::ClientOptions co;
  co.base_url = server_->BaseUrl();
  co.token = http::TokenSource::FromValue(kToken);
  co.max_attempts = 1;
  co.read_timeout = std::chrono::milliseconds(60000);
  return std::move(http::Client::Create(co)).value();
}

}  // namespace sluice::dataflow::http_bench
