// The real sluice-trainer against the real sluice-dataflow: a feeder leases tasks and submits
// synthetic groups (character-vocabulary tokens, reward 1 for completions starting with 'a');
// the trainer takes batches, trains, acknowledges, publishes and announces each version (seen in
// the dataflow's lease replies with the weights URL and digest), checkpoints, exits 0 after its
// steps, and a second run resumes from the newest checkpoint. In between, a run that never gets a
// batch exports the resumed version as an HF directory (POST /v1/weights/{version}/export) under
// <checkpoint-dir>/exports, which the resume that follows must ignore.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/child_process.h"
#include "tests/e2e/dataflow_process.h"
#include "workers/dataflow/trajectory_codec.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kToken[] = "trainer-e2e-token";

std::string GroupFor(const json& task, std::mt19937& rng) {
  dataflow::TrajectoryGroup g;
  g.task_id = task["task_id"].get<std::string>();
  g.attempt = task["attempt"].get<uint32_t>();
  g.lease_id = task["lease_id"].get<std::string>();
  g.worker_id = "feeder";
  g.prompt_id = task["prompt_id"].get<std::string>();
  for (int i = 0; i < 4; ++i) {
    dataflow::Sample s;
    s.policy = "actor";
    s.tokens = {'1', '+', '2', '='};
    const int n = 2 + static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) s.tokens.push_back('a' + static_cast<int32_t>(rng() % 3));
    s.loss_mask.assign(s.tokens.size(), 1);
    std::fill(s.loss_mask.begin(), s.loss_mask.begin() + 4, 0);
    s.behaviour_logprobs.assign(s.tokens.size(), -5.0f);
    s.versions.assign(s.tokens.size(), 0);
    std::fill(s.versions.begin(), s.versions.begin() + 4, -1);
    s.reward = s.tokens[4] == 'a' ? 1.0 : 0.0;
    s.finish_reason = "stop";
    g.samples.push_back(std::move(s));
  }
  std::string out;
  EXPECT_TRUE(dataflow::EncodeTrajectoryGroup(g, &out).ok());
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs sluice-trainer to completion (or kills it after `timeout`); returns its wait status.
int RunTrainer(const std::vector<std::string>& flags, const std::string& log,
               std::chrono::seconds timeout) {
  ChildProcess trainer("sluice-trainer", flags, log);
  return trainer.Wait(timeout);
}

bool HaveTrainer() { return fs::exists(BinDir() + "/sluice-trainer"); }

TEST(TrainerProcessTest, TrainsOnDataflowBatchesAnnouncesVersionsAndResumes) {
  ASSERT_TRUE(HaveTrainer()) << "sluice-trainer is not built in " << BinDir();
  const std::string dir = ::testing::TempDir() + "/trainer_e2e_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  DataflowProcess df(dir, kToken);
  ASSERT_TRUE(df.Start({"--policies=actor", "--group-size=4", "--groups-per-batch=2",
                        "--capacity=64", "--max-wait=2s", "--builtin-count=1000"}))
      << df.Log();

  // The feeder: keeps the dataflow supplied until the test ends (however it ends).
  std::atomic<bool> stop{false};
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread thread;
    ~Joiner() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } feeder{stop, std::thread([&] {
             std::mt19937 rng(5);
             while (!stop) {
               json req = {{"worker_id", "feeder"}, {"capacity", 2}, {"wait", 1}};
               Result<http::Response> r =
                   df.client().Post("/v1/leases", req.dump(), "application/json");
               if (!r.ok() || r->status != 200) continue;
               const json reply = json::parse(r->body);
               for (const json& t : reply["tasks"]) {
                 // A failed submit just leaves the task to expire and be leased again.
                 (void)df.client().Post("/v1/trajectories", GroupFor(t, rng),
                                        "application/octet-stream");
               }
             }
           })};

  const json config = json::parse(R"({
    "trainerJob": {"metadata": {"name": "train", "namespace": "rl"},
      "spec": {"policyRef": {"name": "actor"}, "dataflowRef": {"name": "arith"}, "steps": 3,
               "microBatchTokens": 64, "optimizer": {"lr": 0.01},
               "checkpoint": {"everySteps": 2, "keep": 2, "pvc": {"claimName": "ckpt"}}}},
    "policy": {"metadata": {"name": "actor", "namespace": "rl"},
      "spec": {"model": {"dtype": "float32", "source": {"builtin": {"layers": 1, "hiddenSize": 32,
               "heads": 2, "kvHeads": 2, "intermediateSize": 64, "maxSequenceLength": 64}}}}},
    "dataflow": {"metadata": {"name": "arith", "namespace": "rl"},
      "spec": {"dataset": {"builtin": {}},
               "workflow": {"type": "single-turn", "roles": [{"name": "solver", "policy": "actor"}]}}}
  })");
  std::ofstream(dir + "/trainer.json") << config.dump();
  const std::string url = df.base_url();
  const std::vector<std::string> flags = {"--config=" + dir + "/trainer.json",
                                          "--dataflow-url=" + url,
                                          "--token-file=" + dir + "/token",
                                          "--address=127.0.0.1",
                                          "--port=0",
                                          "--checkpoint-dir=" + dir + "/ckpt",
                                          "--batch-wait=2s"};

  int status = RunTrainer(flags, dir + "/trainer-1.log", std::chrono::seconds(120));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n"
                                                             << ReadFile(dir + "/trainer-1.log");
  EXPECT_TRUE(fs::exists(dir + "/ckpt/step-00000002"));
  EXPECT_TRUE(fs::exists(dir + "/ckpt/step-00000003"));
  const std::string log1 = ReadFile(dir + "/trainer-1.log");
  EXPECT_NE(log1.find("\"msg\":\"finished\""), std::string::npos) << log1;

  // The dataflow knows version 3 with its weights URL and digest.
  json lease = json::parse(
      df.client()
          .Post("/v1/leases",
                json({{"worker_id", "probe"}, {"capacity", 0}, {"hosted_policies", {{"actor", 0}}}})
                    .dump(),
                "application/json")
          ->body);
  bool found = false;
  for (const json& v : lease["versions"]) {
    if (v.value("policy", "") != "actor") continue;
    found = true;
    EXPECT_EQ(v["number"], 3) << v.dump();
    EXPECT_NE(v.value("url", "").find("/v1/weights/3"), std::string::npos) << v.dump();
    EXPECT_EQ(v.value("digest", "").rfind("sha256:", 0), 0u) << v.dump();
  }
  EXPECT_TRUE(found) << lease.dump();

  // The export run: resumes from step 3, republishes version 3, then asks for batches of more
  // groups than the dataflow holds, so it stays up (without training) while the route is used.
  {
    std::vector<std::string> idle = flags;
    idle.push_back("--steps=4");
    idle.push_back("--groups-per-batch=60000");
    ChildProcess trainer("sluice-trainer", idle, dir + "/trainer-export.log");
    std::unique_ptr<http::Client> client = trainer.Connect(kToken);
    ASSERT_NE(client, nullptr) << trainer.Log();
    Result<http::Response> image = Status::Internal("not fetched");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!(image = client->Get("/v1/weights/3")).ok() || image->status != 200) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << trainer.Log();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const std::string digest = image->Header("X-Sluice-Weights-Digest");

    Result<http::Response> exported = client->Post("/v1/weights/3/export", "", "application/json");
    ASSERT_TRUE(exported.ok()) << exported.status().ToString();
    ASSERT_EQ(exported->status, 200) << exported->body << "\n" << trainer.Log();
    const json reply = json::parse(exported->body);
    const std::string path = dir + "/ckpt/exports/actor-v3";
    EXPECT_EQ(reply["version"], 3);
    EXPECT_EQ(reply["path"], path);
    EXPECT_EQ(reply["digest"], digest);
    uint64_t bytes = 0;
    std::vector<std::string> names;
    for (const fs::directory_entry& f : fs::directory_iterator(path)) {
      bytes += f.file_size();
      names.push_back(f.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(reply["bytes"], bytes);
    // A builtin model has no tokenizer files to copy.
    EXPECT_EQ(names,
              (std::vector<std::string>{"config.json", "model.safetensors", "sluice_export.json"}));
    EXPECT_EQ(ReadFile(path + "/model.safetensors"), image->body);  // Byte for byte.
    const json hf = json::parse(ReadFile(path + "/config.json"));
    EXPECT_EQ(hf["model_type"], "llama");
    EXPECT_EQ(hf["architectures"], json::array({"LlamaForCausalLM"}));
    EXPECT_EQ(hf["torch_dtype"], "float32");
    EXPECT_EQ(hf["hidden_size"], 32);
    EXPECT_EQ(hf["num_hidden_layers"], 1);
    const json record = json::parse(ReadFile(path + "/sluice_export.json"));
    EXPECT_EQ(record["version"], 3);
    EXPECT_EQ(record["digest"], digest);
    EXPECT_EQ(record["policy"], "actor");

    // Again: the same directory, untouched.
    Result<http::Response> again = client->Post("/v1/weights/3/export", "", "application/json");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->status, 200) << again->body;
    EXPECT_EQ(json::parse(again->body)["created"], false) << again->body;
    // A version not held names the held ones; a malformed one is 400; no token is 401.
    Result<http::Response> absent = client->Post("/v1/weights/2/export", "", "application/json");
    ASSERT_TRUE(absent.ok());
    EXPECT_EQ(absent->status, 404) << absent->body;
    EXPECT_NE(absent->body.find("held: [3]"), std::string::npos) << absent->body;
    EXPECT_FALSE(fs::exists(dir + "/ckpt/exports/actor-v2"));
    Result<http::Response> bad = client->Post("/v1/weights/v3/export", "", "application/json");
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(bad->status, 400) << bad->body;
    Result<http::Response> anonymous =
        trainer.Connect("")->Post("/v1/weights/3/export", "", "application/json");
    ASSERT_TRUE(anonymous.ok());
    EXPECT_EQ(anonymous->status, 401) << anonymous->body;

    trainer.Signal(SIGTERM);
    status = trainer.Wait(std::chrono::seconds(30));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << trainer.Log();
  }

  // A second run with more steps resumes from step 3 and adds one.
  std::vector<std::string> more = flags;
  more.push_back("--steps=4");
  status = RunTrainer(more, dir + "/trainer-2.log", std::chrono::seconds(120));
  const std::string log2 = ReadFile(dir + "/trainer-2.log");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << log2;
  EXPECT_NE(log2.find("\"msg\":\"resumed\""), std::string::npos) << log2;
  EXPECT_NE(log2.find("\"step\":4"), std::string::npos) << log2;
  EXPECT_TRUE(fs::exists(dir + "/ckpt/step-00000004"));
  EXPECT_FALSE(fs::exists(dir + "/ckpt/step-00000002"));  // keep: 2.
  // Checkpoint pruning leaves the exports alone.
  EXPECT_TRUE(fs::exists(dir + "/ckpt/exports/actor-v3/model.safetensors"));
}

TEST(TrainerProcessTest, ABadConfigExitsTwoNamingTheField) {
  ASSERT_TRUE(HaveTrainer()) << "sluice-trainer is not built in " << BinDir();
  const std::string dir = ::testing::TempDir() + "/trainer_e2e_bad_" + std::to_string(getpid());
  fs::create_directories(dir);
  std::ofstream(dir + "/trainer.json") << R"({"trainerJob": {"metadata": {"name": "t"},
    "spec": {"policyRef": {"name": "a"}, "dataflowRef": {"name": "d"}, "steps": -1}}})";
  const int status =
      RunTrainer({"--config=" + dir + "/trainer.json", "--dataflow-url=http://127.0.0.1:1"},
                 dir + "/trainer.log", std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(ReadFile(dir + "/trainer.log").find("trainerJob.spec.steps"), std::string::npos)
      << ReadFile(dir + "/trainer.log");
}

}  // namespace
}  // namespace sluice::e2e
