// The RolloutPool reconciler against a real API server, with a fake clock and fake workers
// (reconcile_harness.h).
#include "kube/kubeconfig.h"
#include "operator/controllers/rolloutpool/desired_pods.h"
#include "tests/unit/operator/reconcile/reconcile_harness.h"

namespace sluice::op::reconcile_testing {
namespace rolloutpool_reconcile_test {

json Pool(int replicas) {
  json pool = json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool", "metadata": {"name": "rollout"},
    "spec": {"policies": ["tiny"], "dataflowRef": {"name": "arith"},
             "drain": {"gracePeriodSeconds": 120}}})");
  pool["spec"]["replicas"] = replicas;
  return pool;
}

class RolloutPoolReconcileTest : public ReconcileTest {
 protected:
  // The name the operator verifies the pool's replicas under.
  static std::string PoolServerName() {
    json pool = Pool(1);
    pool["metadata"]["namespace"] = kNs;
    return controllers::RolloutServerName(pool);
  }

  // Reconciles the pool once its current object and Pods are in the caches.
  void Reconcile() {
    ASSERT_TRUE(WaitCached(manager_->rollout_pool_cache(), kPoolsGvr, "rollout"));
    ASSERT_TRUE(WaitPodsCached());
    Result<controllers::ReconcileResult> r =
        manager_->rollout_pools().Reconcile(std::string(kNs) + "/rollout");
    ASSERT_TRUE(r.ok()) << r.status().message();
  }

  std::vector<std::string> PodNames() {
    std::vector<std::string> names;
    for (const json& p : List(kPodsGvr)) names.push_back(p["metadata"]["name"]);
    std::sort(names.begin(), names.end());
    return names;
  }

  // Marks a replica Running and Ready with its worker at `worker`.
  void MakeReady(const std::string& pod, const FakeWorker& worker) {
    json status = json::parse(R"({"phase": "Running", "conditions": [
        {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]})");
    status["podIP"] = worker.ip();
    PatchPodStatus(pod, status);
  }
};

TEST_F(RolloutPoolReconcileTest, CreatesTheReplicasWithTheFinalizerAndReportsThem) {
  Create(kPoolsGvr, Pool(2));
  Reconcile();
  const std::string p0 = controllers::ReplicaPodName("rollout", "", 0);
  const std::string p1 = controllers::ReplicaPodName("rollout", "", 1);
  EXPECT_EQ(PodNames(), (std::vector<std::string>{p0, p1}));
  EXPECT_EQ(Get(kPoolsGvr, "rollout")["metadata"]["finalizers"], json::array({"sluice.dev/drain"}));

  // The next reconcile sees the Pods it created and reports them.
  Reconcile();
  const json pool = Get(kPoolsGvr, "rollout");
  EXPECT_EQ(pool.value("/status/replicas"_json_pointer, -1), 2) << pool.dump();
  EXPECT_EQ(pool.value("/status/readyReplicas"_json_pointer, -1), 0) << pool.dump();

  // With nothing changed, a reconcile writes nothing.
  Reconcile();
  EXPECT_EQ(Get(kPoolsGvr, "rollout")["metadata"]["resourceVersion"],
            pool["metadata"]["resourceVersion"]);
  EXPECT_EQ(PodNames().size(), 2u);
}

TEST_F(RolloutPoolReconcileTest, ScaleDownDrainsTheIdleReplicaAndDeletesItWhenItsGracePasses) {
  Create(kPoolsGvr, Pool(2));
  Reconcile();
  const std::string busy_pod = controllers::ReplicaPodName("rollout", "", 0);
  const std::string idle_pod = controllers::ReplicaPodName("rollout", "", 1);
  const tls::CertifiedKey serving = WorkerCertificate(PoolServerName());
  FakeWorker busy(FreshLoopbackIp(), serving), idle(FreshLoopbackIp(), serving);
  ASSERT_TRUE(busy.started().ok()) << busy.started().message();
  ASSERT_TRUE(idle.started().ok()) << idle.started().message();
  busy.SetInFlight(5);
  MakeReady(busy_pod, busy);
  MakeReady(idle_pod, idle);
  ASSERT_TRUE(Client(kPoolsGvr)
                  .Patch("rollout", kube::PatchType::kMerge, R"({"spec": {"replicas": 1}})")
                  .ok());

  // The least loaded replica is asked to drain and marked; the busy one is left alone.
  Reconcile();
  EXPECT_EQ(idle.drain_requests(), 1);
  EXPECT_EQ(busy.drain_requests(), 0);
  const json marked = Get(kPodsGvr, idle_pod);
  EXPECT_TRUE(marked.contains("/metadata/annotations/sluice.dev~1draining-since"_json_pointer))
      << marked.dump();

  // Draining, not drained: it stays for the grace period of the reconciler's clock.
  clock_.Advance(std::chrono::seconds(119));
  Reconcile();
  EXPECT_EQ(PodNames().size(), 2u);
  EXPECT_EQ(idle.drain_requests(), 1);  // It is draining: not asked again.
  clock_.Advance(std::chrono::seconds(1));
  Reconcile();
  EXPECT_EQ(PodNames(), std::vector<std::string>{busy_pod});
  const std::vector<std::string> reasons = EventReasons("rollout");
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "DrainingReplica"), reasons.end());
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "DeletedReplica"), reasons.end());
}

// The operator calls the replicas with the pool's own control token (Secret
// <pool>-control-token, mounted in every replica), which a replica's peers do not hold: their
// rollout token reads relayed weights only (sluice-rollout --control-token-file).
TEST_F(RolloutPoolReconcileTest, ReplicasAreCalledWithThePoolsControlToken) {
  const kube::GroupVersionResource secrets{"", "v1", "secrets", true};
  const std::string secret_name = controllers::RolloutControlTokenSecretName("rollout");
  Create(kPoolsGvr, Pool(2));
  Reconcile();
  const json secret = Get(secrets, secret_name);
  ASSERT_TRUE(secret.contains("/data/token"_json_pointer)) << secret.dump();
  Result<std::string> token = kube::DecodeBase64(secret["data"]["token"].get<std::string>());
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->size(), 64u);
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["kind"], "RolloutPool");
  for (const json& pod : List(kPodsGvr)) {
    const json& volumes = pod["spec"]["volumes"];
    EXPECT_NE(
        std::find(volumes.begin(), volumes.end(),
                  json({{"name", "control-token"}, {"secret", {{"secretName", secret_name}}}})),
        volumes.end())
        << volumes.dump();
  }

  const std::string busy_pod = controllers::ReplicaPodName("rollout", "", 0);
  const std::string idle_pod = controllers::ReplicaPodName("rollout", "", 1);
  const tls::CertifiedKey serving = WorkerCertificate(PoolServerName());
  FakeWorker busy(FreshLoopbackIp(), serving), idle(FreshLoopbackIp(), serving);
  ASSERT_TRUE(busy.started().ok()) << busy.started().message();
  ASSERT_TRUE(idle.started().ok()) << idle.started().message();
  busy.RequireToken(*token);
  idle.RequireToken(*token);
  busy.SetInFlight(5);
  MakeReady(busy_pod, busy);
  MakeReady(idle_pod, idle);
  ASSERT_TRUE(WaitCached(manager_->secret_cache(), secrets, secret_name));
  ASSERT_TRUE(Client(kPoolsGvr)
                  .Patch("rollout", kube::PatchType::kMerge, R"({"spec": {"replicas": 1}})")
                  .ok());
  // Drained by the least load its worker reports: both answered, with the token.
  Reconcile();
  EXPECT_EQ(idle.drain_requests(), 1);
  EXPECT_EQ(busy.drain_requests(), 0);
  EXPECT_EQ(idle.refused() + busy.refused(), 0);
  // Made once: later reconciles keep the token the replicas mount.
  Reconcile();
  EXPECT_EQ(Get(secrets, secret_name)["data"], secret["data"]);
}

TEST_F(RolloutPoolReconcileTest, ADrainedReplicaGoesAtOnceAndADeletedPoolDropsItsFinalizer) {
  Create(kPoolsGvr, Pool(1));
  Reconcile();
  const std::string pod = controllers::ReplicaPodName("rollout", "", 0);
  FakeWorker worker(FreshLoopbackIp(), WorkerCertificate(PoolServerName()));
  ASSERT_TRUE(worker.started().ok()) << worker.started().message();
  MakeReady(pod, worker);
  ASSERT_TRUE(Client(kPoolsGvr).Delete("rollout").ok());
  Reconcile();  // Asked to drain.
  EXPECT_EQ(worker.drain_requests(), 1);
  EXPECT_EQ(PodNames().size(), 1u);
  worker.SetDrained();
  Reconcile();  // Drained: deleted, without waiting for the grace period.
  EXPECT_TRUE(PodNames().empty());
  Reconcile();  // No replica left: the finalizer goes, and with it the pool.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Get(kPoolsGvr, "rollout").is_object() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(Get(kPoolsGvr, "rollout").is_object());
}

}  // namespace rolloutpool_reconcile_test
}  // namespace sluice::op::reconcile_testing
