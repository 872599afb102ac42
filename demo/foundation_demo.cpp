// sluice-foundation-demo: the shared core working end to end, until the local cluster exists.
//
// It starts a real Sluice HTTP server (bearer auth, body limit, metrics, health, JSON-lines
// logs) with one endpoint that ingests trajectories in the binary wire format, idempotently by
// task id, the way the dataflow will. A real client then submits batches of trajectories,
// retries a duplicate, and sends the mistakes the standards promise to reject (a corrupted
// frame, a wrong token, an oversized body); the demo checks each reply, scrapes /metrics, runs
// `promtool check metrics` on it when promtool is installed, and shuts down gracefully.
//
// With --serve it keeps serving until SIGTERM or Ctrl-C instead, for curl and Prometheus.
// Exit status: 0 when every check passed, 1 otherwise, 2 for bad flags.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "common/clock.h"
#include "common/config/help.h"
#include "common/config/parse.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/level.h"
#include "common/logging/logger.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "common/process/signals.h"
#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "common/wire/frame.h"

namespace sluice {
namespace {

constexpr uint16_t kTrajectoryFrame = 1;

struct Trajectory {
  std::string task_id;
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  double reward = 0;
};

void EncodeTrajectory(const Trajectory& t, std::string* out) {
  std::string payload;
  wire::Encoder enc(&payload);
  enc.PutString(t.task_id);
  enc.PutI32Array(t.tokens);
  enc.PutF32Array(t.logprobs);
  enc.PutF64(t.reward);
  SLUICE_CHECK(wire::AppendFrame(kTrajectoryFrame, payload, out).ok());
}

Result<Trajectory> DecodeTrajectory(std::string_view payload) {
  Trajectory t;
  wire::Decoder dec(payload);
  SLUICE_RETURN_IF_ERROR(dec.GetString("task_id", &t.task_id));
  SLUICE_RETURN_IF_ERROR(dec.GetI32Array("tokens", &t.tokens));
  SLUICE_RETURN_IF_ERROR(dec.GetF32Array("logprobs", &t.logprobs));
  SLUICE_RETURN_IF_ERROR(dec.GetF64("reward", &t.reward));
  if (t.tokens.size() != t.logprobs.size()) {
    return Status::InvalidArgument("has " + std::to_string(t.tokens.size()) + " tokens but " +
                                       std::to_string(t.logprobs.size()) + " log-probs",
                                   "logprobs");
  }
  return t;
}

// The ingest side: what the dataflow's submit endpoint will grow into.
class TrajectoryStore {
 public:
  explicit TrajectoryStore(metrics::Registry& registry)
      : accepted_(registry
                      .AddCounter("sluice_demo_trajectories_accepted_total",
                                  "Trajectories accepted (duplicates excluded).", {})
                      .WithLabels({})),
        duplicates_(registry
                        .AddCounter("sluice_demo_trajectories_duplicate_total",
                                    "Submits of a task id already accepted.", {})
                        .WithLabels({})),
        tokens_(registry
                    .AddCounter("sluice_demo_tokens_accepted_total",
                                "Tokens in accepted trajectories.", {})
                    .WithLabels({})) {}

  void Handle(const httplib::Request& req, httplib::Response& res) {
    wire::FrameReader reader(std::string_view(req.body));
    std::vector<Trajectory> batch;
    while (!reader.AtEnd()) {
      Result<wire::Frame> frame = reader.Next();
      if (!frame.ok()) {
        // Reject the whole request: a client must never guess which part was kept.
        return http::ReplyError(
            res, Status::InvalidArgument(frame.status().message(),
                                         "body[" + std::to_string(batch.size()) + "]"));
      }
      if (frame->type != kTrajectoryFrame) {
        return http::ReplyError(
            res, Status::InvalidArgument("unknown frame type " + std::to_string(frame->type),
                                         "body[" + std::to_string(batch.size()) + "].type"));
      }
      Result<Trajectory> t = DecodeTrajectory(frame->payload);
      if (!t.ok()) {
        return http::ReplyError(
            res,
            Status::InvalidArgument(t.status().message(), "body[" + std::to_string(batch.size()) +
                                                              "]." + t.status().field()));
      }
      batch.push_back(std::move(t).value());
    }
    int accepted = 0;
    int duplicates = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Trajectory& t : batch) {
        if (!by_task_.emplace(t.task_id, t.tokens.size()).second) {
          ++duplicates;
          continue;
        }
        ++accepted;
        tokens_.Inc(static_cast<double>(t.tokens.size()));
      }
    }
    accepted_.Inc(accepted);
    duplicates_.Inc(duplicates);
    http::ReplyJson(res, {{"accepted", accepted}, {"duplicates", duplicates}});
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return by_task_.size();
  }

 private:
  std::mutex mu_;
  std::map<std::string, size_t> by_task_;
  metrics::Counter& accepted_;
  metrics::Counter& duplicates_;
  metrics::Counter& tokens_;
};

struct Checks {
  int passed = 0;
  int failed = 0;
  void Expect(bool ok, const std::string& what, const std::string& detail = {}) {
    (ok ? passed : failed)++;
    std::cout << (ok ? "  ok    " : "  FAIL  ") << what;
    if (!detail.empty()) std::cout << "  (" << detail << ")";
    std::cout << "\n";
  }
};

std::string RandomToken() {
  std::random_device rd;
  std::ostringstream out;
  for (int i = 0; i < 4; ++i) out << std::hex << rd();
  return out.str();
}

int RunChecks(http::Server& server, const std::string& token, int requests, int batch,
              TrajectoryStore& store) {
  Checks checks;
  http::ClientOptions options;
  options.base_url = server.BaseUrl();
  options.token = http::TokenSource::FromValue(token);
  std::unique_ptr<http::Client> client = std::move(http::Client::Create(options)).value();

  std::cout << "Submitting " << requests << " requests of " << batch
            << " trajectories (128 tokens each) to " << server.BaseUrl() << "\n";
  std::mt19937 rng(7);
  int accepted = 0;
  const auto start = SystemClock::Instance().Now();
  std::string first_body;
  for (int r = 0; r < requests; ++r) {
    std::string body;
    for (int i = 0; i < batch; ++i) {
      Trajectory t;
      t.task_id = "task-" + std::to_string(r) + "-" + std::to_string(i);
      for (int k = 0; k < 128; ++k) {
        t.tokens.push_back(static_cast<int32_t>(rng() % 32000));
        t.logprobs.push_back(-static_cast<float>(rng() % 1000) / 100.0f);
      }
      t.reward = (rng() % 2) ? 1.0 : 0.0;
      EncodeTrajectory(t, &body);
    }
    if (r == 0) first_body = body;
    http::Request req;
    req.method = "POST";
    req.path = "/v1/trajectories";
    req.body = std::move(body);
    req.content_type = "application/octet-stream";
    req.idempotent = true;  // Keyed by task id, so retrying is safe.
    Result<http::Response> res = client->Send(std::move(req));
    if (res.ok() && res->status == 200) {
      accepted += nlohmann::json::parse(res->body)["accepted"].get<int>();
    }
  }
  const double seconds =
      std::chrono::duration<double>(SystemClock::Instance().Now() - start).count();
  checks.Expect(accepted == requests * batch, "every trajectory accepted",
                std::to_string(accepted) + " in " + std::to_string(seconds) + " s, " +
                    std::to_string(static_cast<int>(accepted / seconds)) + " trajectories/s");

  Result<http::Response> dup =
      client->Post("/v1/trajectories", first_body, "application/octet-stream");
  checks.Expect(
      dup.ok() && dup->status == 200 && nlohmann::json::parse(dup->body)["duplicates"] == batch,
      "a repeated submit is idempotent (no trajectory counted twice)");

  std::string corrupt = first_body;
  corrupt[corrupt.size() / 2] ^= 0x10;
  Result<http::Response> bad =
      client->Post("/v1/trajectories", corrupt, "application/octet-stream");
  checks.Expect(bad.ok() && bad->status == 400, "a corrupted frame gets 400",
                bad.ok() ? bad->ToStatus().ToString() : bad.status().ToString());

  http::ClientOptions wrong = options;
  wrong.token = http::TokenSource::FromValue("not-the-token");
  Result<http::Response> unauth =
      std::move(http::Client::Create(wrong))
          .value()
          ->Post("/v1/trajectories", first_body, "application/octet-stream");
  checks.Expect(unauth.ok() && unauth->status == 401, "a wrong token gets 401",
                unauth.ok() ? unauth->ToStatus().ToString() : unauth.status().ToString());

  Result<http::Response> big =
      client->Post("/v1/trajectories", std::string(5 << 20, 'x'), "application/octet-stream");
  checks.Expect(big.ok() && big->status == 413, "an oversized body gets 413",
                big.ok() ? big->ToStatus().ToString() : big.status().ToString());

  checks.Expect(store.size() == static_cast<size_t>(requests * batch),
                "rejected requests changed nothing", std::to_string(store.size()) + " stored");

  Result<http::Response> ready = client->Get("/readyz");
  checks.Expect(ready.ok() && ready->status == 200, "/readyz reports ready");

  Result<http::Response> scrape = client->Get("/metrics");
  checks.Expect(scrape.ok() && scrape->status == 200 &&
                    scrape->body.find("sluice_demo_trajectories_accepted_total " +
                                      std::to_string(requests * batch)) != std::string::npos,
                "/metrics counts the accepted trajectories");
  if (scrape.ok() && std::system("command -v promtool >/dev/null 2>&1") == 0) {
    char path[] = "/tmp/sluice-demo-metrics-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd >= 0) {
      ::close(fd);
      std::ofstream(path) << scrape->body;
      const int rc = std::system(("promtool check metrics < " + std::string(path)).c_str());
      checks.Expect(rc == 0, "promtool check metrics accepts the exposition");
      ::unlink(path);
    }
  } else {
    std::cout << "  skip  promtool is not installed; exposition not checked\n";
  }

  std::cout << checks.passed << " passed, " << checks.failed << " failed\n";
  return checks.failed == 0 ? 0 : 1;
}

int Main(int argc, char** argv) {
  config::Spec spec("SLUICE_DEMO");
  spec.Add(config::Option::String("address", "127.0.0.1", "Address to listen on."))
      .Add(config::Option::Int("port", 0, "Port to listen on; 0 picks a free one.")
               .Min(0)
               .Max(65535))
      .Add(config::Option::String("token-file", "",
                                  "File holding the bearer token; empty makes a random one."))
      .Add(config::Option::Bool("serve", false,
                                "Keep serving until SIGTERM instead of running the checks."))
      .Add(config::Option::Int("requests", 200, "Submit requests to send.").Min(1))
      .Add(config::Option::Int("batch", 16, "Trajectories per request.").Min(1).Max(1000))
      .Add(config::Option::Enum("log-level", {"debug", "info", "warn", "error"}, "warn",
                                "Minimum level of the JSON log lines on stderr."));
  Result<config::Config> cfg = config::Parse(spec, argc, argv, config::EnvironmentFromProcess());
  if (!cfg.ok()) {
    std::cerr << "sluice-foundation-demo: " << cfg.status().message() << "\n";
    return 2;
  }
  if (cfg->HelpRequested()) {
    std::cout << config::HelpText(spec, "sluice-foundation-demo",
                                  "Runs Sluice's shared core end to end: an authenticated HTTP "
                                  "server ingesting wire-format trajectories, a client, metrics "
                                  "and graceful shutdown.");
    return 0;
  }
  log::SetMinLevel(log::ParseLevel(cfg->GetString("log-level")).value());

  CancellationSource stop;
  if (Status s = InstallShutdownSignals(stop); !s.ok()) {
    std::cerr << "sluice-foundation-demo: " << s.ToString() << "\n";
    return 1;
  }
  log::Logger logger("foundation-demo");

  std::string token;
  if (const std::string& file = cfg->GetString("token-file"); !file.empty()) {
    Result<std::shared_ptr<http::TokenSource>> source = http::TokenSource::FromFile(file);
    if (!source.ok()) {
      std::cerr << "sluice-foundation-demo: flag --token-file: " << source.status().message()
                << "\n";
      return 2;
    }
    token = (*source)->Get();
  } else {
    token = RandomToken();
  }

  metrics::Registry registry;
  http::ServerOptions options;
  options.name = "demo";
  options.address = cfg->GetString("address");
  options.port = static_cast<int>(cfg->GetInt("port"));
  options.max_body_bytes = 4u << 20;
  options.auth = http::TokenSource::FromValue(token);
  http::Server server(options, &registry, logger);
  TrajectoryStore store(registry);
  server.Post("/v1/trajectories", [&store](const httplib::Request& req, httplib::Response& res) {
    store.Handle(req, res);
  });
  if (Status s = server.Start(); !s.ok()) {
    std::cerr << "sluice-foundation-demo: " << s.ToString() << "\n";
    return 1;
  }

  int rc = 0;
  if (cfg->GetBool("serve")) {
    std::cout << "Serving on " << server.BaseUrl() << " with token " << token
              << "\nTry: curl -H 'Authorization: Bearer " << token << "' " << server.BaseUrl()
              << "/metrics\nCtrl-C or SIGTERM stops it gracefully.\n"
              << std::flush;
    stop.Token().Wait();
  } else {
    rc = RunChecks(server, token, static_cast<int>(cfg->GetInt("requests")),
                   static_cast<int>(cfg->GetInt("batch")), store);
  }
  const auto began = SystemClock::Instance().Now();
  server.Shutdown();
  std::cout << "Shut down gracefully in "
            << std::chrono::duration<double>(SystemClock::Instance().Now() - began).count()
            << " s\n";
  return rc;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
