// Test helpers for the main job's end-to-end runs (examples/reverse-grpo.yaml through the
// operator): the example's objects, the diagnostics a failure prints, a client for the Dataflow's
// own API and the accounting identities every run must satisfy, faults or not.
//
// Thread safety: functions over their arguments; no shared state.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/base64.h"
#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "common/http/hosts_file.h"
#include "tests/e2e/main_job/example_manifest.h"
#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {

// The example's objects.
inline constexpr char kExample[] = "reverse-grpo";  // The file's stem and the TrainerJob's name.
inline constexpr char kDataflow[] = "digits";
inline constexpr char kPool[] = "rev-rollout";
inline constexpr char kPolicy[] = "rev";  // The Dataflow's primary policy.

// What a failure message needs: the pods, the experiment's objects, each pod's log tail (and its
// previous container's when it restarted) and the operator's log.
inline std::string Diagnostics(const SluiceSession& cluster) {
  using nlohmann::json;
  std::string out = "\n--- pods\n" + cluster.Kubectl("get pods -o wide").output;
  out += "\n--- trainerjob\n" +
         cluster.Kubectl(std::string("get trainerjob ") + kExample + " -o yaml").output;
  out += "\n--- dataflow\n" +
         cluster.Kubectl(std::string("get dataflow ") + kDataflow + " -o yaml").output;
  out += "\n--- rolloutpool\n" +
         cluster.Kubectl(std::string("get rolloutpool ") + kPool + " -o yaml").output;
  out +=
      "\n--- events\n" + cluster
                             .Kubectl(
                                 "get events --sort-by=.lastTimestamp -o custom-columns="
                                 "LAST:.lastTimestamp,OBJECT:.involvedObject.name,REASON:.reason,"
                                 "MESSAGE:.message")
                             .output;
  const json pods = cluster.Get("pods");
  if (pods.is_object()) {
    for (const json& pod : pods.value("items", json::array())) {
      const std::string name = pod.value("/metadata/name"_json_pointer, "");
      out += "\n--- logs of " + name + "\n" + cluster.Kubectl("logs " + name + " --tail=40").output;
      if (pod.value("/status/containerStatuses/0/restartCount"_json_pointer, 0) > 0) {
        out += "\n--- previous logs of " + name + "\n" +
               cluster.Kubectl("logs " + name + " --previous --tail=40").output;
      }
    }
  }
  return out + "\n--- operator log\n" + cluster.Log("operator");
}

// A live pod's facts, from `kubectl get pods`.
struct PodFacts {
  std::string name, uid, node;
  bool ready = false;
  int64_t restarts = 0;
  std::string container_id;  // "sluice://<pid>" on the local cluster.
};

// The pods with this label selector that are not being deleted, in the API server's order.
inline std::vector<PodFacts> LivePods(const SluiceSession& cluster, const std::string& selector) {
  using nlohmann::json;
  const json pods = cluster.Get("pods -l " + selector);
  std::vector<PodFacts> out;
  if (!pods.is_object()) return out;
  for (const json& p : pods.value("items", json::array())) {
    if (p.contains("/metadata/deletionTimestamp"_json_pointer)) continue;
    PodFacts f;
    f.name = p.value("/metadata/name"_json_pointer, "");
    f.uid = p.value("/metadata/uid"_json_pointer, "");
    f.node = p.value("/spec/nodeName"_json_pointer, "");
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Ready") f.ready = c.value("status", "") == "True";
    }
    f.restarts = p.value("/status/containerStatuses/0/restartCount"_json_pointer, int64_t{0});
    f.container_id = p.value("/status/containerStatuses/0/containerID"_json_pointer, "");
    out.push_back(std::move(f));
  }
  return out;
}

// The process id of the pod's container on the local cluster (its containerID is
// "sluice://<pid>"); 0 when the pod has none.
inline pid_t ContainerPid(const PodFacts& pod) {
  constexpr std::string_view kScheme = "sluice://";
  if (pod.container_id.rfind(kScheme, 0) != 0) return 0;
  return static_cast<pid_t>(std::stol(pod.container_id.substr(kScheme.size())));
}

// The one live pod with this label selector; empty when there is not exactly one.
inline PodFacts OnlyPod(const SluiceSession& cluster, const std::string& selector) {
  std::vector<PodFacts> pods = LivePods(cluster, selector);
  return pods.size() == 1 ? pods.front() : PodFacts{};
}

// `kubectl scale` of the example pool to `replicas`, then waits up to `timeout` until that many
// live replicas are Ready. Their facts; empty when the wait ran out or the scale was refused.
inline std::vector<PodFacts> ScalePoolAndWait(const SluiceSession& cluster, int replicas,
                                              std::chrono::seconds timeout) {
  std::vector<PodFacts> pods;
  if (cluster
          .Kubectl(std::string("scale rolloutpool ") + kPool +
                   " --replicas=" + std::to_string(replicas))
          .exit_code != 0) {
    return pods;
  }
  const bool ready = WaitUntil(
      [&] {
        pods = LivePods(cluster, std::string("sluice.dev/pool=") + kPool);
        if (pods.size() != static_cast<size_t>(replicas)) return false;
        for (const PodFacts& p : pods) {
          if (!p.ready) return false;
        }
        return true;
      },
      timeout);
  return ready ? pods : std::vector<PodFacts>{};
}

// The example TrainerJob's status.version; 0 before the first.
inline int64_t TrainerVersion(const SluiceSession& cluster) {
  const nlohmann::json job = cluster.Get(std::string("trainerjob ") + kExample);
  return job.is_object() ? job.value("/status/version"_json_pointer, int64_t{0}) : 0;
}

// The version of policy `kPolicy` the replica's "ready: weights loaded at join" log line names;
// -1 without such a line.
inline int64_t JoinVersion(const SluiceSession& cluster, const std::string& pod) {
  using nlohmann::json;
  std::istringstream lines(cluster.Kubectl("logs " + pod).output);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t brace = line.find('{');
    if (brace == std::string::npos) continue;
    const json entry = json::parse(line.substr(brace), nullptr, false);
    if (!entry.is_object() || entry.value("msg", "") != "ready: weights loaded at join") continue;
    return entry.value(json::json_pointer(std::string("/versions/") + kPolicy), int64_t{-1});
  }
  return -1;
}

// The demo's manifest with `edits` applied (example_manifest.h).
inline ::testing::AssertionResult DemoManifest(const std::vector<Edit>& edits,
                                               std::string* manifest) {
  return EditedExample(kExample, edits, manifest);
}

// The demo shortened for CI on 2 cores, the same shape as the demo.
struct ShortRun {
  int64_t dataset_rows = 2000;    // Dataflow spec.dataset.builtin.count (demo: 20000).
  int64_t every_versions = 10;    // Dataflow spec.evaluation.everyVersions (demo: 50).
  int64_t eval_samples = 40;      // spec.evaluation.samples (demo: 400).
  int64_t warm_start_steps = 5;   // TrainerJob spec.warmStart.steps (demo: 60).
  int64_t prompts_per_step = 32;  // spec.warmStart.promptsPerStep (demo: 64).
  int64_t warmup_steps = 1;       // spec.warmStart.warmupSteps (demo: 10), below warm_start_steps.
  int64_t steps = 25;             // TrainerJob spec.steps, the RL steps (demo: 590).
  int64_t rollout_replicas = 1;   // RolloutPool spec.replicas (demo: 2).
};

// The exact edits that turn the demo into `run`.
inline std::vector<Edit> ShortRunEdits(const ShortRun& run) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  return {
      {"\n      count: 20000\n", "\n      count: " + n(run.dataset_rows) + "\n"},
      {"\n    everyVersions: 50\n", "\n    everyVersions: " + n(run.every_versions) + "\n"},
      {"\n    samples: 400\n", "\n    samples: " + n(run.eval_samples) + "\n"},
      {"\n  warmStart:\n    steps: 60\n    promptsPerStep: 64\n",
       "\n  warmStart:\n    steps: " + n(run.warm_start_steps) +
           "\n    promptsPerStep: " + n(run.prompts_per_step) + "\n"},
      {"\n    warmupSteps: 10 ", "\n    warmupSteps: " + n(run.warmup_steps) + " "},
      {"\n  steps: 590 ", "\n  steps: " + n(run.steps) + " "},  // The TrainerJob's (RL) steps.
      {"\n  replicas: 2\n", "\n  replicas: " + n(run.rollout_replicas) + "\n"},  // The pool's.
  };
}

// The Dataflow's own API (GET /v1/status) at the Service its CR names, resolved through the local
// cluster's hosts file (as the workers reach it), with the token of its Secret.
class DataflowApi {
 public:
  // Fails the calling test (ASSERT inside) when the CR or its Secret is not as expected; check
  // `ok()` after.
  void Connect(const SluiceSession& cluster) {
    using nlohmann::json;
    const json df = cluster.Get(std::string("dataflow ") + kDataflow);
    ASSERT_TRUE(df.is_object()) << Diagnostics(cluster);
    const std::string endpoint = df.value("/status/endpoint"_json_pointer, "");
    ASSERT_EQ(endpoint, std::string("https://") + kDataflow + ".default.svc:8080") << df.dump(2);
    // Its certificate verifies against the CA the operator gives the workers (<df>-ca).
    const json ca = cluster.Get(std::string("configmap ") + kDataflow + "-ca");
    ASSERT_TRUE(ca.is_object() && ca.contains("/data/ca.crt"_json_pointer)) << Diagnostics(cluster);
    const json secret = cluster.Get(std::string("secret ") + kDataflow + "-token");
    ASSERT_TRUE(secret.is_object()) << Diagnostics(cluster);
    Result<std::string> token = Base64Decode(secret.value("/data/token"_json_pointer, ""));
    ASSERT_TRUE(token.ok() && !token->empty()) << secret.dump(2);
    http::ClientOptions options;
    options.base_url = endpoint;
    options.tls.ca_pem = ca.at("/data/ca.crt"_json_pointer).get<std::string>();
    options.resolver = std::make_shared<http::HostsFileResolver>(cluster.state() + "/node/hosts");
    options.token = http::TokenSource::FromValue(*token);
    options.max_attempts = 1;
    Result<std::unique_ptr<http::Client>> client = http::Client::Create(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  bool ok() const { return client_ != nullptr; }

  // GET /v1/status as JSON; null with `last_error()` set when it fails.
  nlohmann::json Status() {
    Result<http::Response> r = client_->Get("/v1/status");
    if (!r.ok()) {
      last_error_ = r.status().ToString();
      return nullptr;
    }
    if (r->status != 200) {
      last_error_ = r->ToStatus().ToString();
      return nullptr;
    }
    return nlohmann::json::parse(r->body, nullptr, false);
  }
  const std::string& last_error() const { return last_error_; }

 private:
  std::unique_ptr<http::Client> client_;
  std::string last_error_;
};

// The run's shape, for the accounting below.
struct RunShape {
  int64_t steps = 0;             // TrainerJob spec.steps (RL steps).
  int64_t group_size = 0;        // Dataflow spec.sampling.groupSize.
  int64_t groups_per_batch = 0;  // Dataflow spec.batch.groupsPerBatch.
  int64_t eval_rounds = 0;       // Evaluation rounds the run completes.
  int64_t eval_samples = 0;      // spec.evaluation.samples.
  // The run survived faults: a batch may have been served again after its trainer's long poll
  // broke (reserved_batches), and an evaluation task may have been set aside.
  bool faults = false;
};

// The accounting of the Dataflow's primary policy (workers/dataflow/dataflow_core_status.cpp),
// from one GET /v1/status: every accepted trajectory was trained, is in an unacknowledged batch,
// was dropped as stale or is still buffered, and the trainer acknowledged exactly one batch of
// groupsPerBatch groups per RL step. The counters are read in one StatusJson call under the
// core's lock, so the identities hold exactly although the rollout replicas keep submitting
// after the trainer finished (until admission closes). Eval trajectories never reach them:
// SubmitLocked scores an eval task's group into its round instead of the buffer. The example has
// no replay (replayRatio 0), no filters and staleAction drop.
inline void ExpectAccounting(const nlohmann::json& status, const RunShape& run) {
  using nlohmann::json;
  ASSERT_TRUE(status.contains(json::json_pointer("/policies/" + std::string(kPolicy))))
      << status.dump(2);
  const json& policy_status = status["policies"][kPolicy];
  for (const char* key :
       {"accepted_groups", "accepted_samples", "filtered_groups", "filtered_samples",
        "stale_dropped_groups", "stale_dropped_samples", "buffered_groups", "buffered_samples",
        "served_batches", "served_groups", "reserved_batches", "replayed_groups", "acked_batches",
        "acked_groups", "unacked_batches", "unacked_groups"}) {
    ASSERT_TRUE(policy_status.contains(key) && policy_status[key].is_number_integer())
        << key << " is missing from the status of policy " << kPolicy << ": "
        << policy_status.dump(2);
  }
  auto count = [&](const char* key) { return policy_status[key].get<int64_t>(); };
  const std::string context = status.dump(2);

  // (1) Submissions. submits.accepted counts every task's first (winning) submit, train and eval.
  //     A single-policy train group becomes exactly one (prompt, policy) group: accepted into the
  //     buffer (accepted_groups) or dropped whole by a filter (filtered_groups). Every eval task
  //     of each scored round was submitted once: no task was set aside (tasks_failed 0; a set
  //     aside one could also be submitted late, after its round was scored).
  const int64_t rounds = status.value("/eval/completed"_json_pointer, int64_t{-1});
  EXPECT_EQ(rounds, run.eval_rounds) << context;
  int64_t eval_prompts = 0;  // Per round: one eval task per prompt (repeat 1).
  for (const json& d : status.value("/eval/last/datasets"_json_pointer, json::array())) {
    eval_prompts += d.value("prompts", int64_t{0});
  }
  EXPECT_EQ(eval_prompts, run.eval_samples) << context;
  if (!run.faults) {
    EXPECT_EQ(status.value("/leases/tasks_failed"_json_pointer, int64_t{-1}), 0) << context;
    EXPECT_EQ(status.value("/submits/accepted"_json_pointer, int64_t{-1}),
              count("accepted_groups") + count("filtered_groups") + rounds * eval_prompts)
        << context;
  }
  // (2) Each submitted training group carried group_size trajectories (one per completion), and
  //     each was accepted or filtered; filters (none here) removed no single trajectory from a
  //     kept group, so every accepted group holds group_size of them.
  EXPECT_EQ(count("accepted_samples") + count("filtered_samples"),
            run.group_size * (count("accepted_groups") + count("filtered_groups")))
      << context;
  EXPECT_EQ(count("filtered_samples"), run.group_size * count("filtered_groups")) << context;
  // (3) Where every accepted group is now. A group leaves the buffer only in TakeBatch: dropped as
  //     stale (stale_dropped_groups) or served fresh in a new batch (served_groups; a re-served
  //     batch is not counted again); a served batch is either acknowledged (acked_groups, trained)
  //     or not yet (unacked_groups). Replayed copies of trained groups count in neither.
  EXPECT_EQ(count("accepted_groups"), count("acked_groups") + count("unacked_groups") +
                                          count("stale_dropped_groups") + count("buffered_groups"))
      << context;
  EXPECT_EQ(count("served_groups"), count("acked_groups") + count("unacked_groups")) << context;
  // The same in trajectories.
  EXPECT_EQ(count("accepted_samples"),
            run.group_size * (count("acked_groups") + count("unacked_groups")) +
                count("stale_dropped_samples") + count("buffered_samples"))
      << context;
  // (4) The trainer acknowledged one batch per RL step, each of groupsPerBatch fresh groups and
  //     each trained once, and no group was replayed. Without faults no batch was served again
  //     after its ack timeout (reserved_batches). Every batch served is acknowledged or still
  //     outstanding.
  EXPECT_EQ(count("acked_batches"), run.steps) << context;
  EXPECT_EQ(count("acked_groups"), run.steps * run.groups_per_batch) << context;
  EXPECT_EQ(count("served_batches"), count("acked_batches") + count("unacked_batches")) << context;
  if (!run.faults) {
    EXPECT_EQ(count("reserved_batches"), 0) << context;
  }
  EXPECT_EQ(count("replayed_groups"), 0) << context;
}

// Once the run has ended: waits (up to 60 s) until the Dataflow has no evaluation round in
// progress (the accounting counts the eval submissions of completed rounds only; `sluice run`
// saw the last round, an earlier one may lag by a task), then checks ExpectAccounting with
// `run`'s groupSize and groupsPerBatch read from the Dataflow's spec.
inline void ExpectAccountingOnceSettled(const SluiceSession& cluster, RunShape run) {
  using nlohmann::json;
  const json df = cluster.Get(std::string("dataflow ") + kDataflow);
  ASSERT_TRUE(df.is_object()) << Diagnostics(cluster);
  run.group_size = df.value("/spec/sampling/groupSize"_json_pointer, int64_t{0});
  run.groups_per_batch = df.value("/spec/batch/groupsPerBatch"_json_pointer, int64_t{0});
  ASSERT_GT(run.group_size, 0) << df.dump(2);
  ASSERT_GT(run.groups_per_batch, 0) << df.dump(2);
  DataflowApi api;
  api.Connect(cluster);
  ASSERT_TRUE(api.ok());
  json status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status = api.Status();
        return status.is_object() &&
               status.value("/eval/rounds_in_progress"_json_pointer, int64_t{-1}) == 0;
      },
      std::chrono::seconds(60)))
      << api.last_error() << "\n"
      << status.dump(2) << Diagnostics(cluster);
  ExpectAccounting(status, run);
}

}  // namespace sluice::e2e
