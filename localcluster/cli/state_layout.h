// StateLayout: where `sluice up` keeps everything of one local cluster, under one directory
// (default $HOME/.sluice; `--state-dir`).
//
//   DIR/apiserver/             the API server's --state-dir (objects.db, pki/ca.crt, token)
//   DIR/kubeconfig             written by the API server (--kubeconfig); kubectl, the operator
//   DIR/node/                  the node agent's --state-dir
//   DIR/logs/<component>.log   stdout and stderr of each component, appended across starts
//   DIR/run/<component>.pid    the pid of each running component (removed by `sluice down`)
//   DIR/prometheus/            prometheus.yml (generated), data/ and targets/pods.json (the
//                              node agent's list of pods to scrape) (with --prometheus)
//   DIR/experiments/<name>/    progress.jsonl of `sluice run`, and the plots of `sluice plot`
//
// Thread safety: pure functions and values; nothing here touches the file system.
#pragma once

#include <string>
#include <string_view>

#include "common/config/environment.h"
#include "common/status.h"

namespace sluice::cli {

class StateLayout {
 public:
  // `root` should be absolute: the paths are handed to processes that may run elsewhere.
  explicit StateLayout(std::string root);

  const std::string& root() const { return root_; }
  std::string ApiServerDir() const { return root_ + "/apiserver"; }
  std::string ApiServerToken() const { return root_ + "/apiserver/token"; }
  std::string ApiServerCa() const { return root_ + "/apiserver/pki/ca.crt"; }
  std::string Kubeconfig() const { return root_ + "/kubeconfig"; }
  // The operator's: its ServiceAccount's token (operator_identity.h).
  std::string OperatorKubeconfig() const { return root_ + "/operator/kubeconfig"; }
  std::string NodeDir() const { return root_ + "/node"; }
  std::string LogsDir() const { return root_ + "/logs"; }
  std::string RunDir() const { return root_ + "/run"; }
  std::string PrometheusDir() const { return root_ + "/prometheus"; }
  std::string PrometheusConfig() const { return root_ + "/prometheus/prometheus.yml"; }
  std::string PrometheusData() const { return root_ + "/prometheus/data"; }
  std::string PrometheusPodTargets() const { return root_ + "/prometheus/targets/pods.json"; }
  // DIR/logs/<component>.log.
  std::string LogFile(std::string_view component) const;
  // DIR/run/<component>.pid.
  std::string PidFile(std::string_view component) const;
  // DIR/experiments/<name>: what `sluice run` records of one experiment, for `sluice plot`.
  std::string ExperimentDir(std::string_view name) const;
  // DIR/experiments/<name>/progress.jsonl (progress_log.h).
  std::string ProgressLog(std::string_view name) const;

 private:
  std::string root_;
};

// $HOME/.sluice; InvalidArgument naming --state-dir when HOME is unset or empty.
Result<std::string> DefaultStateDir(const config::Environment& env);

// `dir` made absolute against `cwd` (unless it already is), without a trailing slash.
std::string AbsolutePath(const std::string& dir, const std::string& cwd);

}  // namespace sluice::cli
