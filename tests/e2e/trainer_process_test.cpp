// The real sluice-trainer against the real sluice-dataflow: a feeder leases tasks and submits
// synthetic groups (character-vocabulary tokens, reward 1 for completions starting with 'a');
// the trainer takes batches, trains, acknowledges, publishes and announces each version (seen in
// the dataflow's lease replies with the weights URL and digest), checkpoints, exits 0 after its
// steps, and a second run resumes from the newest checkpoint; a third, after a crash that lost
// the newest checkpoint, continues above the dataflow's versions. In between, a run that never gets
// a batch exports the resumed version as an HF directory (POST /v1/weights/{version}/export) under
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
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/child_process.h"
#include "tests/e2e/dataflow_process.h"
#include "tests/support/read_file.h"
#include "workers/dataflow/client/trajectory_codec.h"

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

// Runs sluice-trainer to completion (or kills it after `timeout`); returns its wait status.
int RunTrainer(const std::vector<std::string>& flags, const std::string& log,
               std::chrono::seconds timeout) {
  ChildProcess trainer("sluice-trainer", flags, log);
  return trainer.Wait(timeout);
}

bool HaveTrainer() { return fs::exists(BinDir() + "/sluice-trainer"); }

// trainer.json for a tiny built-in policy trained for `steps` steps, checkpointing every
// `every_steps` (keep 2).
json TrainerConfig(int steps, int every_steps) {
  json config = json::parse(R"({
    "trainerJob": {"metadata": {"name": "train", "namespace": "rl"},
      "spec": {"policyRef": {"name": "actor"}, "dataflowRef": {"name": "arith"},
               "microBatchTokens": 64, "optimizer": {"lr": 0.01},
               "checkpoint": {"keep": 2, "pvc": {"claimName": "ckpt"}}}},
    "policy": {"metadata": {"name": "actor", "namespace": "rl"},
      "spec": {"model": {"dtype": "float32", "source": {"builtin": {"layers": 1, "hiddenSize": 32,
               "heads": 2, "kvHeads": 2, "intermediateSize": 64, "maxSequenceLength": 64}}}}},
    "dataflow": {"metadata": {"name": "arith", "namespace": "rl"},
      "spec": {"dataset": {"builtin": {}},
               "workflow": {"type": "single-turn", "roles": [{"name": "solver", "policy": "actor"}]}}}
  })");
  config["trainerJob"]["spec"]["steps"] = steps;
  config["trainerJob"]["spec"]["checkpoint"]["everySteps"] = every_steps;
  return config;
}

// The dataflow's announcement of "actor" as a lease reply lists it; null when there is none.
json AnnouncedActor(DataflowProcess& df) {
  Result<http::Response> r = df.client().Post(
      "/v1/leases",
      json({{"worker_id", "probe"}, {"capacity", 0}, {"hosted_policies", {{"actor", 0}}}}).dump(),
      "application/json");
  if (!r.ok() || r->status != 200) return nullptr;
  const json reply = json::parse(r->body);  // Iterating a temporary's member would dangle.
  for (const json& v : reply["versions"]) {
    if (v.value("policy", "") == "actor") return v;
  }
  return nullptr;
}

TEST(TrainerProcessTest, TrainsOnDataflowBatchesAnnouncesVersionsAndResumes) {
  ASSERT_TRUE(HaveTrainer()) << "sluice-trainer is not built in " << BinDir();
  const std::string dir = ::testing::TempDir() + "/trainer_e2e_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  DataflowProcess df(dir, kToken);
  ASSERT_TRUE(df.Start({"--policies=actor", "--group-size=4", "--groups-per-batch=2",
                        "--capacity=64", "--max-wait=2s", "--builtin-count=1000",
                        // The feeder's samples are all of version 0.
                        "--max-staleness=100"}))
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

  std::ofstream(dir + "/trainer.json") << TrainerConfig(3, 2).dump();
  const std::string url = df.base_url();
  const std::vector<std::string> flags = {"--config=" + dir + "/trainer.json",
                                          "--dataflow-url=" + url,
                                          "--token-file=" + dir + "/token",
                                          "--address=127.0.0.1",
                                          "--port=0",
                                          "--checkpoint-dir=" + dir + "/ckpt",
                                          "--batch-wait=2s"};

  int status = RunTrainer(flags, dir + "/trainer-1.log", std::chrono::seconds(120));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << status << "\n"
      << test_support::ReadFileOrEmpty(dir + "/trainer-1.log");
  EXPECT_TRUE(fs::exists(dir + "/ckpt/step-00000002"));
  EXPECT_TRUE(fs::exists(dir + "/ckpt/step-00000003"));
  const std::string log1 = test_support::ReadFileOrEmpty(dir + "/trainer-1.log");
  EXPECT_NE(log1.find("\"msg\":\"finished\""), std::string::npos) << log1;
  // --blas-threads' default sized OpenBLAS's pool (Debian's libtorch uses it; -1 if not).
  EXPECT_NE(log1.find("\"blas_threads\":1"), std::string::npos) << log1;

  // The dataflow knows version 3 with its weights URL and digest.
  const json v3 = AnnouncedActor(df);
  ASSERT_FALSE(v3.is_null());
  EXPECT_EQ(v3["number"], 3) << v3.dump();
  EXPECT_NE(v3.value("url", "").find("/v1/weights/3"), std::string::npos) << v3.dump();
  EXPECT_EQ(v3.value("digest", "").rfind("sha256:", 0), 0u) << v3.dump();

  // The export run: resumes from step 3, republishes version 3 (the same image: the dataflow's
  // version 3 moves to this process's address), then asks for batches of more groups than the
  // dataflow holds, so it stays up (without training) while the route is used.
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
    EXPECT_EQ(digest, v3["digest"]);
    const json moved = AnnouncedActor(df);
    EXPECT_EQ(moved["number"], 3) << moved.dump();
    EXPECT_EQ(moved["digest"], v3["digest"]) << moved.dump();
    EXPECT_NE(moved["url"], v3["url"]) << moved.dump();
    EXPECT_EQ(trainer.Log().find("continuing above"), std::string::npos) << trainer.Log();

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
    EXPECT_EQ(test_support::ReadFileOrEmpty(path + "/model.safetensors"),
              image->body);  // Byte for byte.
    const json hf = json::parse(test_support::ReadFileOrEmpty(path + "/config.json"));
    EXPECT_EQ(hf["model_type"], "llama");
    EXPECT_EQ(hf["architectures"], json::array({"LlamaForCausalLM"}));
    EXPECT_EQ(hf["torch_dtype"], "float32");
    EXPECT_EQ(hf["hidden_size"], 32);
    EXPECT_EQ(hf["num_hidden_layers"], 1);
    const json record = json::parse(test_support::ReadFileOrEmpty(path + "/sluice_export.json"));
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
  more.push_back("--blas-threads=2");
  status = RunTrainer(more, dir + "/trainer-2.log", std::chrono::seconds(120));
  const std::string log2 = test_support::ReadFileOrEmpty(dir + "/trainer-2.log");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << log2;
  EXPECT_NE(log2.find("\"blas_threads\":2"), std::string::npos) << log2;
  EXPECT_NE(log2.find("\"msg\":\"resumed\""), std::string::npos) << log2;
  EXPECT_NE(log2.find("\"step\":4"), std::string::npos) << log2;
  EXPECT_TRUE(fs::exists(dir + "/ckpt/step-00000004"));
  EXPECT_FALSE(fs::exists(dir + "/ckpt/step-00000002"));  // keep: 2.
  // Checkpoint pruning leaves the exports alone.
  EXPECT_TRUE(fs::exists(dir + "/ckpt/exports/actor-v3/model.safetensors"));
  EXPECT_EQ(AnnouncedActor(df)["number"], 4);

  // A crash after announcing version 4 but before its checkpoint: the restart resumes from step
  // 3 and must not announce 4 again for other weights. It continues above the dataflow: the
  // resumed weights become version 5, and steps 4 and 5 versions 6 and 7.
  fs::remove_all(dir + "/ckpt/step-00000004");
  std::vector<std::string> after_crash = flags;
  after_crash.push_back("--steps=5");
  status = RunTrainer(after_crash, dir + "/trainer-3.log", std::chrono::seconds(120));
  const std::string log3 = test_support::ReadFileOrEmpty(dir + "/trainer-3.log");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << log3;
  EXPECT_NE(log3.find("\"msg\":\"continuing above the dataflow's versions\""), std::string::npos)
      << log3;
  const json v7 = AnnouncedActor(df);
  EXPECT_EQ(v7["number"], 7) << v7.dump();
  EXPECT_NE(v7.value("url", "").find("/v1/weights/7"), std::string::npos) << v7.dump();
  const json state =
      json::parse(test_support::ReadFileOrEmpty(dir + "/ckpt/step-00000005/state.json"));
  EXPECT_EQ(state["step"], 5) << state.dump();
  EXPECT_EQ(state["version"], 7) << state.dump();

  // The disk damages the newest checkpoint: the restart skips it (a warning naming the file),
  // resumes from step 4 (version 6) and, the dataflow being at 7, continues at 8: steps 5 and 6
  // are versions 9 and 10.
  {
    std::fstream f(dir + "/ckpt/step-00000005/weights.pt",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  std::vector<std::string> after_damage = flags;
  after_damage.push_back("--steps=6");
  status = RunTrainer(after_damage, dir + "/trainer-4.log", std::chrono::seconds(120));
  const std::string log4 = test_support::ReadFileOrEmpty(dir + "/trainer-4.log");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << log4;
  EXPECT_NE(log4.find("checkpoint unusable"), std::string::npos) << log4;
  EXPECT_NE(log4.find("weights.pt does not match its checksum"), std::string::npos) << log4;
  const size_t resumed = log4.find("\"msg\":\"resumed\"");
  ASSERT_NE(resumed, std::string::npos) << log4;
  const size_t line_start = log4.rfind('\n', resumed) + 1;  // npos + 1 == 0 on the first line.
  const std::string line = log4.substr(line_start, log4.find('\n', resumed) - line_start);
  EXPECT_NE(line.find("step-00000004"), std::string::npos) << line;
  EXPECT_EQ(AnnouncedActor(df)["number"], 10);
  EXPECT_EQ(
      json::parse(test_support::ReadFileOrEmpty(dir + "/ckpt/step-00000006/state.json"))["version"],
      10);
}

// Leases and submits `groups` groups, synchronously (the test decides how much there is to train).
void Feed(DataflowProcess& df, int groups, std::mt19937& rng) {
  int fed = 0;
  std::string last;  // The last failed lease request's answer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (fed < groups && std::chrono::steady_clock::now() < deadline) {
    json req = {{"worker_id", "feeder"}, {"capacity", groups - fed}, {"wait", 1}};
    Result<http::Response> r = df.client().Post("/v1/leases", req.dump(), "application/json");
    if (!r.ok() || r->status != 200) {
      last = r.ok() ? std::to_string(r->status) + " " + r->body : r.status().ToString();
      continue;
    }
    const json reply = json::parse(r->body);  // Iterating a temporary's member would dangle.
    for (const json& t : reply["tasks"]) {
      Result<http::Response> sub =
          df.client().Post("/v1/trajectories", GroupFor(t, rng), "application/octet-stream");
      if (sub.ok() && sub->status == 200) {
        ++fed;
      } else {
        last = sub.ok() ? std::to_string(sub->status) + " " + sub->body : sub.status().ToString();
      }
    }
  }
  ASSERT_EQ(fed, groups) << last;
}

json ActorStatus(DataflowProcess& df) {
  Result<http::Response> r = df.client().Get("/v1/status");
  if (!r.ok() || r->status != 200) return json::object();
  return json::parse(r->body)["policies"]["actor"];
}

// step -> batch id, from a trainer log's "step" lines.
std::map<int64_t, std::string> StepBatches(const std::string& log) {
  std::map<int64_t, std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "") == "step") {
      out[j.value("step", int64_t{-1})] = j.value("batch", "");
    }
  }
  return out;
}

// kill -9 of the trainer between checkpoints: the batches it trained after its newest checkpoint
// are held by the dataflow, come back to the restarted trainer in order, and every batch is
// trained exactly once in the weights that survive.
TEST(TrainerProcessTest, AKilledTrainerTrainsEveryBatchExactlyOnce) {
  ASSERT_TRUE(HaveTrainer()) << "sluice-trainer is not built in " << BinDir();
  const std::string dir = ::testing::TempDir() + "/trainer_e2e_kill_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  DataflowProcess df(dir, kToken);
  ASSERT_TRUE(
      df.Start({"--policies=actor", "--group-size=4", "--groups-per-batch=2", "--capacity=64",
                "--max-wait=2s", "--builtin-count=1000", "--max-staleness=100"}))
      << df.Log();
  std::ofstream(dir + "/trainer.json") << TrainerConfig(6, 3).dump();
  const std::vector<std::string> flags = {"--config=" + dir + "/trainer.json",
                                          "--dataflow-url=" + df.base_url(),
                                          "--token-file=" + dir + "/token",
                                          "--address=127.0.0.1",
                                          "--port=0",
                                          "--checkpoint-dir=" + dir + "/ckpt",
                                          "--batch-wait=2s"};
  std::mt19937 rng(11);

  // Four batches' worth: the trainer checkpoints step 3, trains step 4 and waits for more.
  Feed(df, 8, rng);
  std::string log1;
  {
    ChildProcess trainer("sluice-trainer", flags, dir + "/trainer-1.log");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    // The step's log line comes after its held ack and its announcement.
    while (StepBatches(trainer.Log()).size() < 4) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << trainer.Log();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    trainer.Signal(SIGKILL);
    (void)trainer.Wait(std::chrono::seconds(10));
    log1 = trainer.Log();
  }
  ASSERT_TRUE(fs::exists(dir + "/ckpt/step-00000003")) << log1;
  const std::map<int64_t, std::string> first = StepBatches(log1);
  ASSERT_EQ(first.size(), 4U) << log1;
  json actor = ActorStatus(df);
  EXPECT_EQ(actor["acked_batches"], 4) << actor.dump();
  EXPECT_EQ(actor["held_batches"], 4) << "step 3's checkpoint keeps its interval held once more";

  // The restart resumes from step 3: batch 4 comes back first; two more batches finish the job.
  Feed(df, 4, rng);
  const int status = RunTrainer(flags, dir + "/trainer-2.log", std::chrono::seconds(120));
  const std::string log2 = test_support::ReadFileOrEmpty(dir + "/trainer-2.log");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << log2;
  EXPECT_NE(log2.find("batches trained after the checkpoint come back"), std::string::npos) << log2;
  const std::map<int64_t, std::string> second = StepBatches(log2);
  ASSERT_EQ(second.size(), 3U) << log2;
  EXPECT_EQ(second.begin()->first, 4);
  EXPECT_EQ(second.at(4), first.at(4)) << "the killed run's step 4, trained again as step 4";
  std::set<std::string> trained;
  for (int64_t s = 1; s <= 3; ++s) trained.insert(first.at(s));
  for (const auto& [s, id] : second) trained.insert(id);
  EXPECT_EQ(trained.size(), 6U) << "six distinct batches in the surviving lineage";
  actor = ActorStatus(df);
  EXPECT_EQ(actor["acked_batches"], 6) << actor.dump();
  EXPECT_EQ(actor["served_batches"], 6) << actor.dump();
  // Batch 4, and batch 5 when the killed run's long poll took it (for nobody) once fed.
  EXPECT_GE(actor["reserved_batches"].get<int64_t>(), 1) << actor.dump();
  EXPECT_LE(actor["reserved_batches"].get<int64_t>(), 2) << actor.dump();
  EXPECT_EQ(actor["held_batches"], 0) << "the last step's checkpoint releases everything";
  EXPECT_EQ(actor["unacked_batches"], 0) << actor.dump();
  // Versions: the killed run announced 4; the resumed weights (step 3) continue at 5.
  EXPECT_EQ(AnnouncedActor(df)["number"], 8);
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
  EXPECT_NE(test_support::ReadFileOrEmpty(dir + "/trainer.log").find("trainerJob.spec.steps"),
            std::string::npos)
      << test_support::ReadFileOrEmpty(dir + "/trainer.log");
}

}  // namespace
}  // namespace sluice::e2e
