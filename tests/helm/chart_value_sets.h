// The value sets the chart's tests render: the defaults and one set per way of installing that
// changes which objects exist or what they say. tests/helm/ checks each render's fields;
// tests/e2e/helm_chart_test.cpp has the local cluster's API server accept each render
// (`kubectl apply --dry-run=server`).
#pragma once

#include <string>
#include <vector>

namespace sluice::helm_test {

struct ChartValueSet {
  std::string name;
  std::string values;  // A values.yaml.
};

// A digest for the sets that pin images (any 64 hex digits do for rendering).
inline constexpr char kTestDigest[] =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

inline const std::vector<ChartValueSet>& ChartValueSets() {
  static const std::vector<ChartValueSet> kSets = {
      {"default", ""},
      // Watch two namespaces: Roles there instead of a ClusterRole.
      {"namespaced", R"(operator:
  watchNamespaces: [team-a, team-b]
)"},
      // Prometheus Operator: the ServiceMonitor, with the dashboard and the autoscaler's
      // Prometheus.
      {"service-monitor", R"(operator:
  prometheusUrl: http://prometheus-operated.monitoring.svc:9090
  rolloutSeccompProfile: sluice/rollout.json
metrics:
  serviceMonitor:
    enabled: true
    interval: 15s
    labels: {release: kube-prometheus-stack}
dashboard:
  enabled: true
)"},
      {"network-policies", R"(networkPolicy:
  enabled: true
  metricsFrom:
    - namespaceSelector:
        matchLabels: {kubernetes.io/metadata.name: monitoring}
)"},
      // A private registry, one image from a mirror with a port, pinned digests, pull secrets.
      {"custom-images", std::string(R"(imageRegistry: registry.example.com/rl
imagePullPolicy: Always
imagePullSecrets: [{name: regcred}]
images:
  operator: {tag: 1.2.3}
  dataflow: {registry: "mirror.example.com:5000", tag: 1.2.3}
  rollout: {repository: team/rollout-cuda, tag: 1.2.3-cu124, digest: ")") +
                            kTestDigest + R"("}
  trainer: {digest: ")" + kTestDigest +
                            R"("}
)"},
      {"no-leader-election", R"(operator:
  leaderElection: {enabled: false}
)"},
      // The local cluster's pods share the host's network: listen on the pod's IP only.
      {"pod-ip", R"(operator:
  bindAddress: $(POD_IP)
)"},
      // Scheduling and identity: replicas, placement, priority, resources, a cloud IAM role.
      {"scheduling", R"(operator:
  replicas: 2
  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [{key: dedicated, operator: Equal, value: control, effect: NoSchedule}]
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels: {app.kubernetes.io/component: operator}
  priorityClassName: sluice-control
  resources:
    requests: {cpu: 200m, memory: 256Mi}
    limits: {cpu: "1", memory: 1Gi}
  podAnnotations: {example.com/team: rl}
serviceAccount:
  annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/sluice"}
)"},
  };
  return kSets;
}

}  // namespace sluice::helm_test
