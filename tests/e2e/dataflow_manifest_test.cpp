// Smoke test of `sluice-dataflow --dataflow-manifest`: the real binary configured from an
// example Dataflow serves /readyz and reports the manifest's policies and settings, explicit flags
// override the manifest, and an invalid manifest refuses to start (exit 2) listing every field
// error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.h"
#include "tests/e2e/apiserver_process.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ManifestProcess {
 public:
  explicit ManifestProcess(std::string dir) : dir_(std::move(dir)) {}
  ~ManifestProcess() { Kill(SIGKILL); }

  // Starts the binary with `extra` flags; true once /readyz answers 200.
  bool Start(const std::vector<std::string>& extra) {
    const std::string binary = BinDir() + "/sluice-dataflow";
    std::vector<std::string> args = {binary, "--address=127.0.0.1", "--port=0",
                                     "--wal-dir=" + dir_ + "/wal", "--log-level=info"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(LogPath().c_str(), "w", stderr);
      (void)out;
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    const std::regex port_re("\"msg\":\"listening\",\"url\":\"[^\"]*\",\"port\":([0-9]+)");
    const auto deadline = Steady::now() + std::chrono::seconds(20);
    while (Steady::now() < deadline) {
      std::smatch m;
      const std::string log = ReadAll(LogPath());
      if (std::regex_search(log, m, port_re)) {
        http::ClientOptions co;
        co.base_url = "http://127.0.0.1:" + std::string(m[1]);
        co.max_attempts = 1;
        client_ = std::move(http::Client::Create(co)).value();
        Result<http::Response> ready = client_->Get("/readyz");
        if (ready.ok() && ready->status == 200) return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = status;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  int Kill(int signal) {
    if (pid_ <= 0) return exit_status_;
    ::kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_status_ = status;
    return status;
  }

  json Status() {
    Result<http::Response> res = client_->Get("/v1/status");
    if (!res.ok() || res->status != 200) return json();
    return json::parse(res->body, nullptr, false);
  }

  http::Client& client() { return *client_; }
  int exit_status() const { return exit_status_; }
  std::string LogPath() const { return dir_ + "/dataflow.log"; }
  std::string Log() const { return ReadAll(LogPath()); }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  std::unique_ptr<http::Client> client_;
};

class DataflowManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-dataflow-manifest-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(DataflowManifestTest, ServesFromTheSinglePolicyExample) {
  ManifestProcess p(dir_.string());
  ASSERT_TRUE(p.Start({"--dataflow-manifest=" + SourceDir() + "/examples/single-policy-grpo.yaml",
                       "--capacity=100"}))
      << p.Log();
  const json status = p.Status();
  ASSERT_TRUE(status.is_object()) << p.Log();
  const std::string text = status.dump();
  EXPECT_NE(text.find("\"tiny\""), std::string::npos) << text;  // spec.workflow.roles' policy.
  EXPECT_NE(p.Log().find("\"dataflow\":\"arithmetic\""), std::string::npos) << p.Log();
  // Manifest: 20000 rows with 2% held out for eval.
  EXPECT_EQ(status["prompts"]["total"], 19600) << text;
  // An explicit flag overrides the manifest (whose 65536 trajectories would be 8192 groups).
  EXPECT_EQ(status["capacity_groups"], 100) << text;
  // Tasks carry the manifest's group size, sampling and workflow.
  Result<http::Response> lease = p.client().Post(
      "/v1/leases", json{{"worker_id", "w"}, {"capacity", 1}}.dump(), "application/json");
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_EQ(lease->status, 200) << lease->body;
  const json tasks = json::parse(lease->body)["tasks"];
  ASSERT_EQ(tasks.size(), 1u) << lease->body;
  EXPECT_EQ(tasks[0]["samples"], 8);
  EXPECT_EQ(tasks[0]["sampling"]["maxNewTokens"], 8);
  EXPECT_EQ(tasks[0]["workflow"]["reward"]["type"], "exact-match");
  EXPECT_EQ(p.Kill(SIGTERM), 0) << p.Log();
}

TEST_F(DataflowManifestTest, InvalidManifestRefusesToStartListingEveryError) {
  const std::string manifest = (dir_ / "bad.yaml").string();
  std::ofstream(manifest) << "apiVersion: sluice.dev/v1alpha1\nkind: Dataflow\n"
                             "metadata: {name: bad}\n"
                             "spec:\n  dataset: {builtin: {}}\n"
                             "  workflow: {roles: [{name: policy, policy: p}]}\n"
                             "  sampling: {groupSize: 0}\n  buffer: {order: lifo}\n";
  ManifestProcess p(dir_.string());
  EXPECT_FALSE(p.Start({"--dataflow-manifest=" + manifest}));
  ASSERT_TRUE(WIFEXITED(p.exit_status()));
  EXPECT_EQ(WEXITSTATUS(p.exit_status()), 2);
  const std::string log = p.Log();
  EXPECT_NE(log.find("spec.sampling.groupSize"), std::string::npos) << log;
  EXPECT_NE(log.find("spec.buffer.order"), std::string::npos) << log;
}

}  // namespace
}  // namespace sluice::e2e
