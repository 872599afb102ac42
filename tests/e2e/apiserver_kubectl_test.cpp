// End-to-end: the unmodified kubectl against the real sluice-apiserver binary, over HTTPS with
// the generated CA and bearer token. Skipped when kubectl is not installed.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <thread>

#include "tests/e2e/apiserver_process.h"

namespace sluice::e2e {
namespace {

class KubectlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveKubectl()) return;
    char tmpl[] = "/tmp/sluice-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    server_ = std::make_unique<ApiServerProcess>(dir_ + "/state");
    started_ = server_->Start();
    if (started_) {
      CommandResult crds = server_->Kubectl("apply -f " + Quote(SourceDir() + "/crds/"));
      crds_applied_ = crds.exit_code == 0;
      crds_output_ = crds.output;
    }
  }
  static void TearDownTestSuite() {
    if (server_) server_->Kill(SIGTERM);
    server_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void SetUp() override {
    ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
    ASSERT_TRUE(started_) << (server_ ? server_->Log() : "");
    ASSERT_TRUE(crds_applied_) << crds_output_;
  }

  static CommandResult Kubectl(const std::string& args) { return server_->Kubectl(args); }
  // Runs kubectl and asserts success, returning its output.
  static std::string MustKubectl(const std::string& args) {
    CommandResult r = Kubectl(args);
    EXPECT_EQ(r.exit_code, 0) << "kubectl " << args << "\n" << r.output;
    return r.output;
  }
  // Built-ins go through `apply -f -` (JSON); kubectl's typed `create` commands send protobuf.
  static void Namespace(const std::string& ns) {
    MustKubectl("apply -f - <<< " + Quote(NamespaceJson(ns)));
  }
  static void ConfigMap(const std::string& ns, const std::string& name) {
    MustKubectl("apply -n " + ns + " -f - <<< " +
                Quote("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" +
                      name + "\"},\"data\":{\"a\":\"1\"}}"));
  }
  static std::string NamespaceJson(const std::string& ns) {
    return "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" + ns + "\"}}";
  }
  static std::string Example(const std::string& name) {
    return Quote(SourceDir() + "/examples/" + name);
  }

  static inline std::string dir_;
  static inline std::unique_ptr<ApiServerProcess> server_;
  static inline bool started_ = false;
  static inline bool crds_applied_ = false;
  static inline std::string crds_output_;
};

TEST_F(KubectlTest, ApplyCrdsEstablishesThem) {
  EXPECT_NE(crds_output_.find(
                "customresourcedefinition.apiextensions.k8s.io/rolloutpools.sluice.dev created"),
            std::string::npos)
      << crds_output_;
  MustKubectl("wait --for=condition=Established --timeout=10s crd/rolloutpools.sluice.dev");
  const std::string resources = MustKubectl("api-resources --api-group=sluice.dev");
  EXPECT_NE(resources.find("rolloutpools"), std::string::npos) << resources;
  EXPECT_NE(resources.find("RolloutPool"), std::string::npos) << resources;
}

TEST_F(KubectlTest, ApplyGetDescribeExplain) {
  Namespace("e2e-apply");
  const std::string applied =
      MustKubectl("apply -n e2e-apply -f " + Example("single-policy-grpo.yaml"));
  EXPECT_NE(applied.find("rolloutpool.sluice.dev/tiny-rollout created"), std::string::npos)
      << applied;
  // Re-applying an unchanged manifest is a no-op patch.
  const std::string again =
      MustKubectl("apply -n e2e-apply -f " + Example("single-policy-grpo.yaml"));
  EXPECT_NE(again.find("rolloutpool.sluice.dev/tiny-rollout unchanged"), std::string::npos)
      << again;

  const std::string table = MustKubectl("get rolloutpools -n e2e-apply");
  EXPECT_TRUE(std::regex_search(table, std::regex("NAME\\s+DESIRED\\s+READY"))) << table;
  EXPECT_NE(table.find("tiny-rollout"), std::string::npos) << table;

  const std::string yaml = MustKubectl("get rolloutpool tiny-rollout -n e2e-apply -o yaml");
  EXPECT_NE(yaml.find("kind: RolloutPool"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("uid: "), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("generation: 1"), std::string::npos) << yaml;

  const std::string described = MustKubectl("describe rolloutpool tiny-rollout -n e2e-apply");
  EXPECT_NE(described.find("Name:"), std::string::npos) << described;
  EXPECT_NE(described.find("tiny-rollout"), std::string::npos) << described;
  EXPECT_NE(described.find("Events:"), std::string::npos) << described;

  const std::string explained = MustKubectl("explain rolloutpool.spec");
  EXPECT_NE(explained.find("FIELDS:"), std::string::npos) << explained;
  EXPECT_NE(explained.find("replicas"), std::string::npos) << explained;
}

TEST_F(KubectlTest, ScalePatchLabel) {
  Namespace("e2e-scale");
  MustKubectl("apply -n e2e-scale -f " + Example("single-policy-grpo.yaml"));
  EXPECT_NE(MustKubectl("scale rolloutpool/tiny-rollout -n e2e-scale --replicas=3").find("scaled"),
            std::string::npos);
  EXPECT_EQ(MustKubectl("get rolloutpool tiny-rollout -n e2e-scale -o jsonpath={.spec.replicas}"),
            "3");
  EXPECT_EQ(MustKubectl("get rolloutpool tiny-rollout -n e2e-scale -o "
                        "jsonpath={.metadata.generation}"),
            "2");

  const std::string patched = MustKubectl(
      "patch rolloutpool tiny-rollout -n e2e-scale --type merge -p "
      "'{\"metadata\":{\"annotations\":{\"note\":\"hi\"}}}'");
  EXPECT_NE(patched.find("patched"), std::string::npos) << patched;
  EXPECT_EQ(MustKubectl("get rolloutpool tiny-rollout -n e2e-scale -o "
                        "jsonpath={.metadata.annotations.note}"),
            "hi");

  EXPECT_NE(MustKubectl("label rolloutpool tiny-rollout -n e2e-scale team=rl").find("labeled"),
            std::string::npos);
  EXPECT_NE(MustKubectl("get rolloutpools -n e2e-scale -l team=rl").find("tiny-rollout"),
            std::string::npos);
  EXPECT_EQ(MustKubectl("get rolloutpools -n e2e-scale -l team=other -o name"), "");

  // A strategic merge patch of a pod's container by name keeps the other containers.
  MustKubectl("apply -n e2e-scale -f - <<< " +
              Quote("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"sluice/web:1\"},"
                    "{\"name\":\"sidecar\",\"image\":\"sluice/log:1\"}]}}"));
  MustKubectl(
      "patch pod web -n e2e-scale -p "
      "'{\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"sluice/web:2\"}]}}'");
  EXPECT_EQ(MustKubectl("get pod web -n e2e-scale -o jsonpath={.spec.containers[*].image}"),
            "sluice/web:2 sluice/log:1");
  const std::string pods = MustKubectl("get pods -n e2e-scale");
  EXPECT_TRUE(std::regex_search(pods, std::regex("NAME\\s+READY\\s+STATUS\\s+RESTARTS\\s+AGE")))
      << pods;
  EXPECT_TRUE(std::regex_search(pods, std::regex("web\\s+0/2\\s+Pending\\s+0"))) << pods;
}

TEST_F(KubectlTest, InvalidManifestNamesTheField) {
  Namespace("e2e-invalid");
  const std::string dir = SourceDir() + "/tests/data/manifests/invalid/";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (checked >= 6) break;  // A sample keeps the test fast; the validator tests cover all.
    std::ifstream in(entry.path());
    std::string line, field;
    while (std::getline(in, line)) {
      if (line.rfind("# expect-field: ", 0) == 0) field = line.substr(16);
    }
    if (field.empty()) continue;
    CommandResult r = Kubectl("apply -n e2e-invalid -f " + Quote(entry.path().string()));
    EXPECT_NE(r.exit_code, 0) << entry.path() << "\n" << r.output;
    // kubectl prints the server's message; CEL rule messages name fields in their own words.
    const std::string leaf = field.substr(field.find_last_of('.') + 1);
    EXPECT_NE(r.output.find(leaf.substr(0, leaf.find('['))), std::string::npos)
        << entry.path() << "\n"
        << r.output;
    ++checked;
  }
  EXPECT_GT(checked, 0);
  // Unknown fields: kubectl's default --validate=strict makes the server reject them.
  const std::string manifest = dir_ + "/unknown.yaml";
  std::ofstream(manifest) << "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n";
  MustKubectl("apply -n e2e-invalid -f " + Quote(manifest));
  CommandResult unknown = Kubectl("apply -n e2e-invalid -f " + Example("single-policy-grpo.yaml") +
                                  " --dry-run=server -o name");
  EXPECT_EQ(unknown.exit_code, 0) << unknown.output;
}

// kubectl's typed create commands send protobuf bodies; `run` sends JSON.
TEST_F(KubectlTest, TypedCreateCommands) {
  MustKubectl("create namespace e2e-typed");
  MustKubectl("create configmap settings -n e2e-typed --from-literal=a=1 --from-literal=b=2");
  MustKubectl("create secret generic creds -n e2e-typed --from-literal=token=s3cret");
  MustKubectl("create service clusterip api -n e2e-typed --tcp=80:8080");
  MustKubectl("run web -n e2e-typed --image=sluice/web:1 --restart=Never --labels=app=web");
  EXPECT_EQ(MustKubectl("get configmap settings -n e2e-typed -o jsonpath={.data.b}"), "2");
  EXPECT_EQ(MustKubectl("get secret creds -n e2e-typed -o jsonpath={.data.token}"),
            "czNjcmV0");  // base64("s3cret")
  EXPECT_EQ(MustKubectl("get service api -n e2e-typed -o jsonpath={.spec.ports[0].targetPort}"),
            "8080");
  EXPECT_EQ(MustKubectl("get pods -n e2e-typed -l app=web -o name"), "pod/web\n");
  const std::string secrets = MustKubectl("get secrets -n e2e-typed");
  EXPECT_TRUE(std::regex_search(secrets, std::regex("creds\\s+Opaque\\s+1"))) << secrets;
}

TEST_F(KubectlTest, WatchPrintsUpdates) {
  Namespace("e2e-watch");
  ConfigMap("e2e-watch", "first");
  std::string watched;
  std::thread watcher(
      [&] { watched = Kubectl("get configmaps -n e2e-watch -w --request-timeout=4s").output; });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ConfigMap("e2e-watch", "second");
  watcher.join();
  EXPECT_NE(watched.find("first"), std::string::npos) << watched;
  EXPECT_NE(watched.find("second"), std::string::npos) << watched;
}

TEST_F(KubectlTest, WaitForCondition) {
  Namespace("e2e-wait");
  MustKubectl("apply -n e2e-wait -f " + Example("single-policy-grpo.yaml"));
  std::thread setter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    MustKubectl(
        "patch rolloutpool tiny-rollout -n e2e-wait --subresource=status --type merge -p "
        "'{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
        "\"AllReplicasReady\",\"message\":\"ok\",\"lastTransitionTime\":"
        "\"2026-11-22T00:00:00Z\"}]}}'");
  });
  CommandResult waited =
      Kubectl("wait --for=condition=Ready rolloutpool/tiny-rollout -n e2e-wait --timeout=20s");
  setter.join();
  EXPECT_EQ(waited.exit_code, 0) << waited.output;
  EXPECT_NE(waited.output.find("condition met"), std::string::npos) << waited.output;
}

TEST_F(KubectlTest, DeleteCascades) {
  Namespace("e2e-delete");
  MustKubectl("apply -n e2e-delete -f " + Example("single-policy-grpo.yaml"));
  const std::string uid =
      MustKubectl("get rolloutpool tiny-rollout -n e2e-delete -o jsonpath={.metadata.uid}");
  const std::string child = dir_ + "/child.yaml";
  std::ofstream(child) << "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n"
                          "  ownerReferences:\n  - apiVersion: sluice.dev/v1alpha1\n"
                          "    kind: RolloutPool\n    name: tiny-rollout\n    uid: "
                       << uid << "\n    controller: true\n";
  MustKubectl("apply -n e2e-delete -f " + Quote(child));
  const std::string deleted = MustKubectl(
      "delete rolloutpool tiny-rollout -n e2e-delete --cascade=foreground --timeout=20s");
  EXPECT_NE(deleted.find("deleted"), std::string::npos) << deleted;
  MustKubectl("wait --for=delete configmap/child -n e2e-delete --timeout=20s");
  EXPECT_EQ(Kubectl("get rolloutpool tiny-rollout -n e2e-delete").exit_code, 1);

  // Namespace deletion removes what it contains.
  ConfigMap("e2e-delete", "leftover");
  MustKubectl("delete namespace e2e-delete --timeout=30s");
  EXPECT_NE(Kubectl("get namespace e2e-delete").exit_code, 0);
}

TEST_F(KubectlTest, RejectsRequestsWithoutTheToken) {
  const std::string server_url = server_->Server();
  const std::string ca = server_->state_dir() + "/pki/ca.crt";
  CommandResult r =
      RunShell(KubectlBinary() + " --server " + Quote(server_url) + " --certificate-authority " +
               Quote(ca) + " --token not-the-token get namespaces");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("You must be logged in to the server"), std::string::npos) << r.output;
}

// kill -9 in the middle of a write stream, restart: every acknowledged object is there and a
// watch resumes from the last resourceVersion it saw, across the restart.
TEST(KubectlRestartTest, KillNineLosesNothingAcknowledged) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  char tmpl[] = "/tmp/sluice-e2e-restart-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  ApiServerProcess server(dir + "/state");
  ASSERT_TRUE(server.Start()) << server.Log();
  const auto apply = [&](const std::string& ns, const std::string& json_text) {
    return server.Kubectl((ns.empty() ? "" : "-n " + ns + " ") + "apply -f - <<< " +
                          Quote(json_text));
  };
  const auto configmap = [](const std::string& name) {
    return "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" + name +
           "\"}}";
  };
  ASSERT_EQ(
      apply("", "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"r\"}}")
          .exit_code,
      0);
  // Writes acknowledged before the kill, counted by the writer thread.
  std::atomic<int> acknowledged{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      CommandResult r = apply("r", configmap("cm-" + std::to_string(i)));
      if (r.exit_code != 0) break;
      acknowledged.store(i + 1);
    }
  });
  while (acknowledged.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // The list's resourceVersion (kubectl's own -o jsonpath shows a client-side List's).
  const auto list_rv = [&] {
    const std::string list = server.Kubectl("get --raw /api/v1/namespaces/r/configmaps").output;
    std::smatch m;
    std::regex_search(list, m, std::regex("\"resourceVersion\":\"([0-9]+)\"\\}"));
    return m.size() > 1 ? m[1].str() : std::string();
  };
  const std::string rv = list_rv();
  ASSERT_FALSE(rv.empty());
  // More writes after that list, so its revision is history by the time of the restart.
  const int acked_at_list = acknowledged.load();
  while (acknowledged.load() < acked_at_list + 4) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  server.Kill(SIGKILL);
  stop.store(true);
  writer.join();
  const int acked = acknowledged.load();
  ASSERT_TRUE(server.Start()) << server.Log();
  for (int i = 0; i < acked; ++i) {
    EXPECT_EQ(server.Kubectl("get configmap cm-" + std::to_string(i) + " -n r -o name").exit_code,
              0)
        << "cm-" << i;
  }
  // A watch from before the restart resumes: it replays every configmap written after `rv`
  // (the watch history is persisted with the objects), then sees new writes.
  std::string events;
  std::thread w([&] {
    events =
        server
            .Kubectl("get --raw '/api/v1/namespaces/r/configmaps?watch=1&resourceVersion=" + rv +
                     "&timeoutSeconds=3'")
            .output;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_EQ(apply("r", configmap("after-restart")).exit_code, 0);
  w.join();
  // cm-<acked_at_list> may have been committed before the list and acknowledged just after it
  // (so it is inside `rv`); every later one was applied after the list returned.
  for (int i = acked_at_list + 1; i < acked; ++i) {
    EXPECT_NE(events.find("\"cm-" + std::to_string(i) + "\""), std::string::npos)
        << "cm-" << i << " missing from the resumed watch:\n"
        << events;
  }
  EXPECT_NE(events.find("after-restart"), std::string::npos) << events;
  EXPECT_EQ(events.find("\"cm-0\""), std::string::npos) << "replayed from before " << rv;
  server.Kill(SIGTERM);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::e2e
