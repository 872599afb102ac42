// Prometheus scrape targets of the local cluster's pods, for Prometheus's file-based service
// discovery (file_sd_configs): what `sluice up --prometheus` points its `sluice-pods` job at, in
// place of the kubernetes_sd_configs pod job a real cluster's Prometheus runs.
//
// A pod is a target when it is Running with a pod IP and annotated prometheus.io/scrape: "true"
// (the operator annotates the dataflow, rollout and trainer pods). The conventional annotations
// say where: prometheus.io/port (a number; without it, each TCP container port, as kubernetes_sd
// lists them), prometheus.io/path (default /metrics) and prometheus.io/scheme (http or https).
// Pod IPs are loopback addresses the pod's processes bind (docs/local-cluster.md, "Pod IPs"), so
// podIP:port is where the process listens; nothing is mapped.
//
// Target labels, the same a real cluster's relabelling gives (docs/operator.md, "Scraping the
// workers"): `namespace`, `pod`, and the pod labels of kScrapeLabels under shorter names
// (sluice.dev/dataflow -> `dataflow`, which the example autoscaling queries match on).
// sluice.dev/policy is left out on purpose: the workers label their own series `policy`, and a
// target label of the same name would rename theirs to `exported_policy`.
//
// Thread safety: pure functions and constants.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sluice::node {

inline constexpr char kScrapeAnnotation[] = "prometheus.io/scrape";
inline constexpr char kScrapePortAnnotation[] = "prometheus.io/port";
inline constexpr char kScrapePathAnnotation[] = "prometheus.io/path";
inline constexpr char kScrapeSchemeAnnotation[] = "prometheus.io/scheme";

// (pod label, target label) pairs copied onto a pod's targets when the pod has the label.
inline const std::vector<std::pair<std::string, std::string>> kScrapeLabels = {
    {"app.kubernetes.io/component", "component"},
    {"sluice.dev/dataflow", "dataflow"},
    {"sluice.dev/pool", "pool"},
    {"sluice.dev/region", "region"},
    {"sluice.dev/trainer-job", "trainer_job"},
    {"sluice.dev/rank", "rank"},
};

// The file_sd target groups of `pods` (the caller passes the pods it runs): a JSON array with one
// {"targets": ["<podIP>:<port>", ...], "labels": {...}} per target pod, sorted by namespace and
// name so equal input gives equal text. Labels hold __metrics_path__ (and __scheme__ when
// annotated) besides the target labels above. A pod whose port annotation is not a number from 1
// to 65535, or that has no port at all, is left out.
nlohmann::json PodScrapeTargets(const std::vector<nlohmann::json>& pods);

}  // namespace sluice::node
