// End-to-end: every render of the Helm chart (the default values and each value set of
// tests/helm/chart_value_sets.h, by the real helm) is accepted by the local cluster's API server
// with `kubectl apply --dry-run=server`: every object kind the chart renders is served, passes
// the server's validation and admission, and the operator pod passes the restricted Pod Security
// profile (the release's namespace warns on it). The ServiceMonitor kind belongs to the
// Prometheus Operator, so the test installs a minimal ServiceMonitor CRD first, as a cluster
// running the Prometheus Operator has it.
#include "tests/helm/helm_chart.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/sluice_session.h"
#include "tests/helm/chart_value_sets.h"

namespace sluice::e2e {
namespace {

// The Prometheus Operator's ServiceMonitor kind, without its schema: enough for the API server
// to serve the kind (the chart's test checks the ServiceMonitor's fields).
constexpr char kServiceMonitorCrd[] = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
)";

// Not "sluice": `sluice up` already runs its own operator as sluice-system/sluice-operator, and
// a render named like it would configure those objects instead of creating new ones.
constexpr char kRelease[] = "rl";
constexpr char kNamespace[] = "sluice-helm";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HelmChartE2eTest, LocalApiServerAcceptsEveryRenderOfTheChart) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  ASSERT_TRUE(helm_test::HaveHelm()) << helm_test::kHelmMissing;
  SluiceSession session;
  ASSERT_TRUE(session.Up()) << session.up().output;
  for (const char* ns : {kNamespace, "team-a", "team-b"}) {
    CommandResult created = session.Kubectl(std::string("create namespace ") + ns);
    ASSERT_EQ(created.exit_code, 0) << created.output;
  }
  CommandResult labelled = session.Kubectl(
      std::string("label namespace ") + kNamespace +
      " pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted");
  ASSERT_EQ(labelled.exit_code, 0) << labelled.output;
  ASSERT_EQ(session.Apply(kServiceMonitorCrd), 0);
  CommandResult established = session.Kubectl(
      "wait --for condition=established --timeout=30s crd/servicemonitors.monitoring.coreos.com");
  ASSERT_EQ(established.exit_code, 0) << established.output;

  for (const helm_test::ChartValueSet& set : helm_test::ChartValueSets()) {
    SCOPED_TRACE(set.name);
    helm_test::HelmResult rendered = helm_test::RenderChart(set.values, kRelease, kNamespace);
    ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
    const size_t objects = helm_test::ParseObjects(rendered.out).size();
    ASSERT_GT(objects, 0u);
    const std::string file = session.dir() + "/chart-" + set.name + ".yaml";
    std::ofstream(file) << rendered.out;
    CommandResult applied = session.Kubectl("apply --dry-run=server -f " + file);
    EXPECT_EQ(applied.exit_code, 0) << applied.output;
    // Every object is new (nothing of the release exists) and none was refused.
    EXPECT_EQ(Count(applied.output, " created (server dry run)"), objects) << applied.output;
    EXPECT_EQ(applied.output.find("would violate PodSecurity"), std::string::npos)
        << applied.output;
  }
  // A dry run stores nothing.
  CommandResult stored =
      session.Kubectl(std::string("-n ") + kNamespace + " get deployments -o name");
  EXPECT_EQ(stored.output.find("deployment.apps/"), std::string::npos) << stored.output;
}

}  // namespace
}  // namespace sluice::e2e
