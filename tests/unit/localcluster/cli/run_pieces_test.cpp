// Tests of the pure parts of `sluice run`: manifest splitting and kind resolution decisions
// (manifest.h), the merge patch a document applies, the status views and their join
// (experiment_status.h), the progress text (progress_render.h), the JSONL record
// (progress_row.h, progress_log.h), the exit decision (run_outcome.h) and the flags.
#include <gtest/gtest.h>
#include <unistd.h>

#include "localcluster/cli/command_line.h"
#include "localcluster/cli/experiment_status.h"
#include "localcluster/cli/manifest.h"
#include "localcluster/cli/progress_log.h"
#include "localcluster/cli/progress_render.h"
#include "localcluster/cli/progress_row.h"
#include "localcluster/cli/run_outcome.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

const config::Environment kEnv = {{"HOME", "/home/ada"}, {"PATH", "/usr/bin:/bin"}};

TEST(ManifestTest, SplitsDocumentsAndSkipsEmptyOnes) {
  Result<std::vector<ManifestDocument>> docs = ParseManifest("m.yaml", R"(# comment only
---
apiVersion: sluice.dev/v1alpha1
kind: Policy
metadata: {name: tiny}
---
# nothing
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {a: "1"}
)");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].kind(), "Policy");
  EXPECT_EQ((*docs)[0].name(), "tiny");
  EXPECT_EQ((*docs)[0].index, 1u);
  EXPECT_EQ((*docs)[1].Where(), "m.yaml document 2 (ConfigMap settings)");
}

TEST(ManifestTest, RejectsDocumentsWithoutIdentityAndBadYaml) {
  Result<std::vector<ManifestDocument>> docs =
      ParseManifest("m.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "m.yaml document 1 (ConfigMap ?): missing metadata.name");
  docs = ParseManifest("m.yaml", "metadata: {name: x}\n");
  EXPECT_EQ(docs.status().message(), "m.yaml document 1 (? x): missing apiVersion, kind");
  docs = ParseManifest("m.yaml", "- a\n- b\n");
  EXPECT_EQ(docs.status().message(), "m.yaml document 1: not a mapping");
  docs = ParseManifest("bad.yaml", "a: [1, 2\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message().rfind("bad.yaml: ", 0), 0u) << docs.status().message();
}

TEST(ManifestTest, ApiVersionDisplayNameAndRole) {
  Result<GroupVersion> gv = SplitApiVersion("sluice.dev/v1alpha1");
  ASSERT_TRUE(gv.ok());
  EXPECT_EQ(gv->group, "sluice.dev");
  EXPECT_EQ(gv->version, "v1alpha1");
  gv = SplitApiVersion("v1");
  ASSERT_TRUE(gv.ok());
  EXPECT_EQ(gv->group, "");
  EXPECT_EQ(gv->version, "v1");
  EXPECT_FALSE(SplitApiVersion("").ok());
  EXPECT_FALSE(SplitApiVersion("a/b/c").ok());
  EXPECT_FALSE(SplitApiVersion("apps/").ok());
  EXPECT_EQ(DisplayName("TrainerJob", "sluice.dev", "tiny"), "trainerjob.sluice.dev/tiny");
  EXPECT_EQ(DisplayName("ConfigMap", "", "settings"), "configmap/settings");
  EXPECT_EQ(RoleOf("sluice.dev", "TrainerJob"), ExperimentRole::kTrainerJob);
  EXPECT_EQ(RoleOf("sluice.dev", "RolloutPool"), ExperimentRole::kRolloutPool);
  EXPECT_EQ(RoleOf("sluice.dev", "Dataflow"), ExperimentRole::kDataflow);
  EXPECT_EQ(RoleOf("sluice.dev", "Policy"), ExperimentRole::kPolicy);
  EXPECT_EQ(RoleOf("", "TrainerJob"), ExperimentRole::kNone);
  EXPECT_EQ(RoleOf("sluice.dev", "ConfigMap"), ExperimentRole::kNone);
}

TEST(ManifestTest, MergePatchHoldsLabelsAnnotationsAndSpecNeverStatus) {
  json doc = json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "TrainerJob",
    "metadata": {"name": "t", "namespace": "x", "labels": {"team": "rl"},
                 "annotations": {"note": "hi"}, "uid": "u", "finalizers": ["f"]},
    "spec": {"steps": 10}, "status": {"phase": "Running"}})");
  EXPECT_EQ(ApplyPatch(doc), json::parse(R"({"metadata": {"labels": {"team": "rl"},
      "annotations": {"note": "hi"}}, "spec": {"steps": 10}})"));
  // A ConfigMap's data travels; empty label maps do not.
  json cm = json::parse(R"({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "c", "labels": {}}, "data": {"k": "v"}})");
  EXPECT_EQ(ApplyPatch(cm), json::parse(R"({"data": {"k": "v"}})"));
}

TEST(ManifestTest, DecideApply) {
  const json patch = json::parse(R"({"metadata": {"labels": {"a": "1"}}, "spec": {"steps": 10}})");
  EXPECT_EQ(DecideApply(nullptr, patch), ApplyAction::kCreate);
  // Server-set fields (defaults, uid, status) do not make a difference.
  json stored = json::parse(R"({"metadata": {"name": "t", "uid": "u", "labels": {"a": "1"}},
      "spec": {"steps": 10, "replicas": 1}, "status": {"phase": "Running"}})");
  EXPECT_EQ(DecideApply(&stored, patch), ApplyAction::kUnchanged);
  stored["spec"]["steps"] = 20;
  EXPECT_EQ(DecideApply(&stored, patch), ApplyAction::kConfigure);
  stored["spec"]["steps"] = 10.0;  // The same number as a double.
  EXPECT_EQ(DecideApply(&stored, patch), ApplyAction::kUnchanged);
  stored["metadata"]["labels"]["a"] = "2";
  EXPECT_EQ(DecideApply(&stored, patch), ApplyAction::kConfigure);
  EXPECT_STREQ(ApplyActionName(ApplyAction::kCreate), "created");
  EXPECT_STREQ(ApplyActionName(ApplyAction::kConfigure), "configured");
  EXPECT_STREQ(ApplyActionName(ApplyAction::kUnchanged), "unchanged");
}

json Trainer() {
  return json::parse(R"({
    "metadata": {"name": "tiny-grpo"},
    "spec": {"steps": 200, "dataflowRef": {"name": "arith"}},
    "status": {"phase": "Running", "step": 12, "version": 12,
               "lastMetrics": {"rewardMean": 0.41, "loss": 0.125, "stalenessMean": 0.8,
                               "tokensPerSecond": 1200.4, "dataWaitFraction": 0.123}}})");
}

ExperimentView FullView() {
  ExperimentView view;
  view.trainers.push_back(TrainerViewOf(Trainer()));
  view.dataflows.push_back(DataflowViewOf(json::parse(R"({"metadata": {"name": "other"},
      "status": {"buffered": 1}})")));
  view.dataflows.push_back(DataflowViewOf(json::parse(R"({"metadata": {"name": "arith"},
      "status": {"buffered": 64, "trajectoriesPerSecond": 30.5,
                 "evaluation": {"version": 10, "accuracy": 0.38}}})")));
  view.pools.push_back(PoolViewOf(json::parse(R"({"metadata": {"name": "us"},
      "spec": {"dataflowRef": {"name": "arith"}},
      "status": {"replicas": 2, "readyReplicas": 2, "tokensPerSecond": 4000,
                 "regions": [{"name": "local-us-east", "replicas": 2, "ready": 2}]}})")));
  view.pools.push_back(PoolViewOf(json::parse(R"({"metadata": {"name": "eu"},
      "spec": {"dataflowRef": {"name": "arith"}},
      "status": {"replicas": 1, "readyReplicas": 0, "tokensPerSecond": 1230,
                 "regions": [{"name": "local-eu-west", "replicas": 1, "ready": 0}]}})")));
  view.pools.push_back(PoolViewOf(json::parse(R"({"metadata": {"name": "unrelated"},
      "spec": {"dataflowRef": {"name": "other"}}, "status": {"tokensPerSecond": 99}})")));
  return view;
}

TEST(ExperimentStatusTest, ViewsReadTheStatusFields) {
  TrainerView t = TrainerViewOf(Trainer());
  EXPECT_EQ(t.name, "tiny-grpo");
  EXPECT_EQ(t.dataflow, "arith");
  EXPECT_EQ(t.phase, "Running");
  EXPECT_EQ(t.step, 12);
  EXPECT_EQ(t.steps, 200);
  EXPECT_EQ(t.version, 12);
  EXPECT_EQ(t.reward_mean, 0.41);
  EXPECT_EQ(t.loss, 0.125);
  EXPECT_EQ(t.staleness_mean, 0.8);
  EXPECT_EQ(t.tokens_per_second, 1200.4);
  EXPECT_EQ(t.data_wait_fraction, 0.123);
  // No status at all, or mistyped fields: unknown.
  TrainerView bare = TrainerViewOf(json::parse(R"({"metadata": {"name": "b"},
      "status": {"step": "twelve", "lastMetrics": 3}})"));
  EXPECT_EQ(bare.phase, "");
  EXPECT_FALSE(bare.step.has_value());
  EXPECT_FALSE(bare.reward_mean.has_value());
  EXPECT_FALSE(bare.data_wait_fraction.has_value());
  // The evaluation's episode figures; a policies[] entry without a name or a meanReward is
  // skipped, absent splits stay absent.
  DataflowView d = DataflowViewOf(json::parse(R"({"metadata": {"name": "mas"},
      "spec": {"workflow": {"type": "solve-and-verify"}},
      "status": {"evaluation": {"version": 20, "accuracy": 0.5, "toolCallShare": 0.25,
                 "policies": [
                   {"name": "verifier", "meanReward": 0.75, "meanRewardWhenCorrect": 0.5},
                   {"meanReward": 1}, {"name": "judge", "meanReward": "high"}]}}})"));
  EXPECT_EQ(d.workflow, "solve-and-verify");
  EXPECT_EQ(d.eval_version, 20);
  EXPECT_EQ(d.eval_tool_call_share, 0.25);
  EXPECT_EQ(d.eval_policies, (std::vector<EvalPolicyView>{{"verifier", 0.75, 0.5, std::nullopt}}));
  const DataflowView plain = DataflowViewOf(json::parse(R"({"metadata": {"name": "d"},
      "status": {"evaluation": {"version": 1, "accuracy": 0.5}}})"));
  EXPECT_EQ(plain.workflow, "");
  EXPECT_FALSE(plain.eval_tool_call_share.has_value());
  EXPECT_TRUE(plain.eval_policies.empty());
  PoolView p = PoolViewOf(json::parse(R"({"metadata": {"name": "p"},
      "status": {"regions": [{"name": "r1", "replicas": 3}, {"replicas": 1}]}})"));
  ASSERT_EQ(p.regions.size(), 1u);  // An entry without a name is skipped.
  EXPECT_EQ(p.regions[0].replicas, 3);
  EXPECT_FALSE(p.regions[0].ready.has_value());
}

TEST(ExperimentStatusTest, JoinPicksTheTrainersDataflowAndItsPools) {
  std::vector<ProgressRow> rows = JoinProgress(FullView(), 1700000000.5);
  ASSERT_EQ(rows.size(), 1u);
  const ProgressRow& r = rows[0];
  EXPECT_EQ(r.t, 1700000000.5);
  EXPECT_EQ(r.trainer, "tiny-grpo");
  EXPECT_EQ(r.data_wait_share, 0.123);
  EXPECT_EQ(r.buffered, 64);
  EXPECT_EQ(r.eval_accuracy, 0.38);
  EXPECT_EQ(r.eval_version, 10);
  EXPECT_EQ(r.trajectories_per_second, 30.5);
  EXPECT_EQ(r.rollout_tokens_per_second, 5230);  // us + eu, not the unrelated pool.
  EXPECT_EQ(r.replicas_total, 3);
  EXPECT_EQ(r.ready_total, 2);
  EXPECT_EQ(r.region_replicas,
            (std::map<std::string, int64_t>{{"local-eu-west", 1}, {"local-us-east", 2}}));
  EXPECT_EQ(r.region_ready,
            (std::map<std::string, int64_t>{{"local-eu-west", 0}, {"local-us-east", 2}}));

  // No matching dataflow reference: the only Dataflow, and every pool.
  ExperimentView loose;
  loose.trainers.push_back(TrainerViewOf(json::parse(R"({"metadata": {"name": "t"}})")));
  loose.dataflows.push_back(
      DataflowViewOf(json::parse(R"({"metadata": {"name": "d"}, "status": {"buffered": 5}})")));
  loose.pools.push_back(
      PoolViewOf(json::parse(R"({"metadata": {"name": "p"}, "status": {"replicas": 4}})")));
  rows = JoinProgress(loose, 1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].buffered, 5);
  EXPECT_EQ(rows[0].replicas_total, 4);
  EXPECT_FALSE(rows[0].rollout_tokens_per_second.has_value());
  EXPECT_TRUE(rows[0].region_replicas.empty());
}

TEST(ProgressRenderTest, Numbers) {
  EXPECT_EQ(FormatNumber(std::nullopt), "-");
  EXPECT_EQ(FormatNumber(0.41), "0.41");
  EXPECT_EQ(FormatNumber(0.41349), "0.413");
  EXPECT_EQ(FormatNumber(12.5), "12.5");
  EXPECT_EQ(FormatNumber(5230.4), "5230");
  EXPECT_EQ(FormatNumber(0), "0");
  EXPECT_EQ(FormatInt(std::nullopt), "-");
  EXPECT_EQ(FormatInt(7), "7");
  EXPECT_EQ(FormatStepProgress(12, std::nullopt), "12/-");
  EXPECT_EQ(FormatShare(std::nullopt), "-");
  EXPECT_EQ(FormatShare(0.123), "12%");
  EXPECT_EQ(FormatShare(0.996), "100%");
  EXPECT_EQ(FormatShare(0), "0%");
  EXPECT_EQ(ClockText(0).size(), 8u);
}

TEST(ProgressRenderTest, PlainLine) {
  std::vector<ProgressRow> rows = JoinProgress(FullView(), 0);
  EXPECT_EQ(PlainLine(rows[0], "12:00:05"),
            "12:00:05 tiny-grpo Running step 12/200 v12 reward 0.41 loss 0.125 eval 0.38 "
            "rollout 5230 tok/s train 1200 tok/s wait 12% buffer 64 staleness 0.8 replicas "
            "local-eu-west=1 local-us-east=2");
  ProgressRow bare;
  bare.trainer = "t";
  EXPECT_EQ(PlainLine(bare, "00:00:00"),
            "00:00:00 t - step -/- v- reward - loss - eval - rollout - tok/s train - tok/s "
            "wait - buffer - staleness - replicas -");
}

TEST(ProgressRenderTest, LiveViewAndRedraw) {
  ExperimentView view = FullView();
  view.dataflows.erase(view.dataflows.begin());
  view.pools.pop_back();
  const std::string frame = LiveView("tiny", "12:00:05", 0.5, view);
  EXPECT_EQ(frame,
            "sluice run tiny  12:00:05  every 0.5 s; Ctrl-C stops following (the resources "
            "stay)\n"
            "\n"
            "TRAINERJOB  PHASE    STEP    VERSION  REWARD  LOSS   STALENESS  TOK/S  WAIT\n"
            "tiny-grpo   Running  12/200  12       0.41    0.125  0.8        1200   12%\n"
            "\n"
            "DATAFLOW  BUFFERED  TRAJ/S  EVAL\n"
            "arith     64        30.5    0.38 (v10)\n"
            "\n"
            "ROLLOUTPOOL  REPLICAS  READY  TOK/S  REGIONS\n"
            "us           2         2      4000   local-us-east=2/2\n"
            "eu           1         0      1230   local-eu-west=1/0\n");
  EXPECT_EQ(LineCount(frame), 11u);
  EXPECT_EQ(LineCount("a\nb"), 2u);
  EXPECT_EQ(LineCount(""), 0u);
  // The first frame is printed as is (each line cleared); later ones move up over the last.
  EXPECT_EQ(LiveRedraw(0, "a\nb\n"), "\x1b[2Ka\n\x1b[2Kb\n\x1b[J");
  EXPECT_EQ(LiveRedraw(3, "c\n"), "\x1b[3A\r\x1b[2Kc\n\x1b[J");
}

TEST(ProgressRowTest, JsonRoundTripAndKeys) {
  ProgressRow row = JoinProgress(FullView(), 1700000000.25)[0];
  json j = ProgressRowToJson(row);
  EXPECT_EQ(j["t"], 1700000000.25);
  EXPECT_EQ(j["trainer"], "tiny-grpo");
  EXPECT_EQ(j["phase"], "Running");
  EXPECT_EQ(j["step"], 12);
  EXPECT_EQ(j["steps"], 200);
  EXPECT_EQ(j["version"], 12);
  EXPECT_EQ(j["rewardMean"], 0.41);
  EXPECT_EQ(j["loss"], 0.125);
  EXPECT_EQ(j["evalAccuracy"], 0.38);
  EXPECT_EQ(j["rolloutTokensPerSecond"], 5230.0);
  EXPECT_EQ(j["trainTokensPerSecond"], 1200.4);
  EXPECT_EQ(j["buffered"], 64);
  EXPECT_EQ(j["stalenessMean"], 0.8);
  EXPECT_EQ(j["dataWaitShare"], 0.123);
  EXPECT_EQ(j["replicas"], json::parse(R"({"local-eu-west": 1, "local-us-east": 2})"));
  Result<ProgressRow> back = ProgressRowFromJson(json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, row);

  // Unknown values are left out, not written as null.
  ProgressRow bare;
  bare.t = 1;
  bare.trainer = "t";
  EXPECT_EQ(ProgressRowToJson(bare), json::parse(R"({"t": 1.0, "trainer": "t"})"));
  EXPECT_FALSE(ProgressRowFromJson(json::parse(R"({"trainer": "t"})")).ok());
  EXPECT_FALSE(ProgressRowFromJson(json::parse(R"({"t": 1, "step": "x"})")).ok());
  EXPECT_FALSE(ProgressRowFromJson(json::parse(R"({"t": 1, "dataWaitShare": "x"})")).ok());
}

TEST(ProgressRowTest, LogParsingSkipsTornLines) {
  ProgressLog log = ParseProgressLog(
      "{\"t\": 1, \"trainer\": \"a\", \"step\": 1}\n\n{\"t\": 2, \"trainer\": \"a\", \"st");
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].step, 1);
  EXPECT_EQ(log.skipped, 1u);
  const std::string path =
      ::testing::TempDir() + "/sluice_progress_" + std::to_string(::getpid()) + "/x/progress.jsonl";
  Result<ProgressLog> missing = ReadProgressLog(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
  ProgressRow row;
  row.t = 5;
  row.trainer = "a";
  ASSERT_TRUE(AppendProgress(path, {row}).ok());
  ASSERT_TRUE(AppendProgress(path, {row, row}).ok());  // Appended, not replaced.
  Result<ProgressLog> read = ReadProgressLog(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->rows.size(), 3u);
}

json WithStatus(const std::string& name, const std::string& status_json) {
  json j = {{"metadata", {{"name", name}}}};
  j["status"] = json::parse(status_json);
  return j;
}

TEST(RunOutcomeTest, Decision) {
  EXPECT_EQ(DecideOutcome({}).state, ExperimentState::kRunning);
  EXPECT_EQ(DecideOutcome({WithStatus("a", R"({"phase": "Succeeded"})"),
                           WithStatus("b", R"({"phase": "Running"})")})
                .state,
            ExperimentState::kRunning);
  EXPECT_EQ(DecideOutcome({WithStatus("a", R"({"phase": "Succeeded"})"),
                           WithStatus("b", R"({"phase": "Succeeded"})")})
                .state,
            ExperimentState::kSucceeded);
  EXPECT_EQ(DecideOutcome({json::parse(R"({"metadata": {"name": "x"}})")}).state,
            ExperimentState::kRunning);
  ExperimentOutcome failed = DecideOutcome({WithStatus("a", R"({"phase": "Succeeded"})"),
                                            WithStatus("b", R"({"phase": "Failed", "conditions": [
           {"type": "Running", "status": "False", "reason": "GangFailed", "message": "m1"},
           {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "message": "rank 0 exited with 137"}]})")});
  EXPECT_EQ(failed.state, ExperimentState::kFailed);
  EXPECT_EQ(failed.failed, "b");
  EXPECT_EQ(failed.reason, "BackoffLimitExceeded: rank 0 exited with 137");
}

// A TrainerJob whose Dataflow ran out of data ends the run with the operator's reason.
TEST(RunOutcomeTest, StarvedJobEndsTheRun) {
  const json job = WithStatus("tiny", R"({"phase": "Failed", "conditions": [
      {"type": "Starved", "status": "True", "reason": "DataflowDrained", "message": "m"},
      {"type": "Running", "status": "False", "reason": "DataExhausted", "message": "m"},
      {"type": "Failed", "status": "True", "reason": "DataExhausted",
       "message": "Dataflow arith: the dataflow can no longer feed policy actor after step 7 of 10"}
      ]})");
  ExperimentOutcome starved = DecideOutcome({job});
  EXPECT_EQ(starved.state, ExperimentState::kFailed);
  EXPECT_EQ(starved.failed, "tiny");
  EXPECT_EQ(starved.reason,
            "DataExhausted: Dataflow arith: the dataflow can no longer feed policy actor after "
            "step 7 of 10");
}

TEST(RunOutcomeTest, FailureReasonFallbacks) {
  EXPECT_EQ(FailureReason(WithStatus("a", R"({"phase": "Failed", "conditions": [
      {"type": "Ready", "status": "True", "reason": "Ok", "message": "fine"},
      {"type": "Progressing", "status": "False", "reason": "Stuck", "message": "no data"}]})")),
            "Progressing Stuck: no data");
  EXPECT_EQ(FailureReason(WithStatus("a", R"({"phase": "Failed"})")), "no condition says why");
  EXPECT_EQ(FailureReason(WithStatus("a", R"({"conditions": [
      {"type": "Failed", "status": "True", "reason": "Oom"}]})")),
            "Oom");
}

TEST(RunOutcomeTest, SuccessSummary) {
  ProgressRow row;
  row.trainer = "tiny-grpo";
  row.step = 200;
  row.steps = 200;
  row.version = 200;
  row.reward_mean = 0.93;
  EXPECT_EQ(SuccessSummary({row}),
            "tiny-grpo succeeded: 200/200 steps, version 200, reward 0.93\n");
}

TEST(RunFlagsTest, DefaultsAndFlags) {
  Result<Parsed<RunOptions>> p = ParseRun({"examples/single-policy-grpo.yaml"}, kEnv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const RunOptions& o = *p->options;
  EXPECT_EQ(o.manifests, (std::vector<std::string>{"examples/single-policy-grpo.yaml"}));
  EXPECT_EQ(o.state_dir, "/home/ada/.sluice");
  EXPECT_EQ(o.namespace_, "default");
  EXPECT_EQ(o.experiment, "single-policy-grpo");
  EXPECT_EQ(o.interval, std::chrono::milliseconds(2000));
  EXPECT_EQ(o.timeout, std::chrono::seconds(0));
  EXPECT_TRUE(o.follow);

  p = ParseRun({"a.yaml", "b.yaml", "--name", "exp", "-n", "team", "--interval", "0.2", "--timeout",
                "30", "--no-follow", "--state-dir", "/s"},
               kEnv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->options->manifests.size(), 2u);
  EXPECT_EQ(p->options->experiment, "exp");
  EXPECT_EQ(p->options->namespace_, "team");
  EXPECT_EQ(p->options->interval, std::chrono::milliseconds(200));
  EXPECT_EQ(p->options->timeout, std::chrono::seconds(30));
  EXPECT_FALSE(p->options->follow);
  EXPECT_EQ(p->options->state_dir, "/s");
}

TEST(RunFlagsTest, Errors) {
  EXPECT_EQ(ParseRun({}, kEnv).status().message(),
            "missing MANIFEST: sluice run MANIFEST... [flags]");
  EXPECT_EQ(ParseRun({"a.yaml", "--interval", "fast"}, kEnv).status().message(),
            "flag --interval: \"fast\" is not a number");
  EXPECT_EQ(ParseRun({"a.yaml", "--interval", "0.01"}, kEnv).status().message(),
            "flag --interval: 0.01 is outside 0.05 to 86400 seconds");
  EXPECT_FALSE(ParseRun({"a.yaml", "--interval", "nan"}, kEnv).ok());
  EXPECT_FALSE(ParseRun({"a.yaml", "--timeout", "-1"}, kEnv).ok());
  EXPECT_FALSE(ParseRun({"a.yaml", "--name", "../x"}, kEnv).ok());
  EXPECT_FALSE(ParseRun({"a.yaml", "--name", ".."}, kEnv).ok());
  EXPECT_EQ(ExperimentNameFromPath("dir/x.y.yaml"), "x.y");
  EXPECT_EQ(ExperimentNameFromPath("plain"), "plain");
  EXPECT_EQ(ExperimentNameFromPath(".hidden"), ".hidden");
  Result<Parsed<RunOptions>> help = ParseRun({"--help"}, kEnv);
  ASSERT_TRUE(help.ok());
  EXPECT_NE(help->help.find("--no-follow"), std::string::npos);
  EXPECT_NE(TopLevelHelp().find("  run"), std::string::npos);
  EXPECT_NE(TopLevelHelp().find("  plot"), std::string::npos);
}

}  // namespace
}  // namespace sluice::cli
