// Kubernetes container probes (readinessProbe, livenessProbe, startupProbe) for sluice-node.
//
// RunProbe performs one probe action and says whether it passed; ProbeTimingOf reads the
// probe's schedule; ProbeState turns the stream of results into "passing or not" per the
// success and failure thresholds. The caller (the pod worker) owns the schedule: it waits
// initial_delay after the container starts, then runs RunProbe every period.
//
// Supported actions: httpGet (HTTP, or HTTPS without verifying the certificate, as the kubelet
// does), tcpSocket, exec. grpc probes fail with a message saying they are not supported.
//
// Thread safety: RunProbe and ProbeTimingOf are reentrant (RunProbe blocks for up to the
// probe's timeout, plus a little for exec); a ProbeState is a plain value, not synchronised.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sluice::node {

struct ProbeResult {
  bool success = false;
  // Why it failed, in kube's words: `Get "http://127.1.0.2:8080/healthz": dial tcp
  // 127.1.0.2:8080: connect: connection refused`, `HTTP probe failed with statuscode: 503`.
  // For exec probes the command's output (capped at 10 KiB). Empty or informative on success.
  std::string message;
};

// Runs `probe` (a Probe object: httpGet | tcpSocket | exec | grpc, timeoutSeconds) once against
// a container with address `pod_ip` (empty: 127.0.0.1). `container` (a Container object)
// resolves named ports through container.ports[].name. `env` is the environment of an exec
// probe's command: the WHOLE environment (the container's); the command's first word is
// looked up in env's PATH (or a default PATH) unless it contains a '/'. The command runs in
// the caller's working directory, is killed (its whole process group) on timeout.
//
//   httpGet:   GET scheme://host:port/path with httpHeaders; success iff 200 <= status < 400
//              (redirects are not followed: a 3xx is success).
//   tcpSocket: success iff a TCP connection opens.
//   exec:      success iff the command exits 0.
// All within timeoutSeconds (default 1).
ProbeResult RunProbe(const nlohmann::json& probe, const std::string& pod_ip,
                     const nlohmann::json& container,
                     const std::vector<std::pair<std::string, std::string>>& env);

struct ProbeTiming {
  std::chrono::milliseconds initial_delay{0};
  std::chrono::milliseconds period{10000};
  std::chrono::milliseconds timeout{1000};
  int success_threshold = 1;
  int failure_threshold = 3;
};

// initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold, failureThreshold with
// kube's defaults (0, 10, 1, 1, 3); missing, non-numeric or out-of-range (< 1; < 0 for the
// delay) values get the default.
ProbeTiming ProbeTimingOf(const nlohmann::json& probe);

// Whether a probe currently passes, from its results so far. Pure.
//
// The state flips to passing after success_threshold consecutive successes and to failing
// after failure_threshold consecutive failures; in between it stays as it was. A readiness or
// startup probe starts failing (the container is not ready / not started until it passes); a
// liveness probe starts passing (the container is not killed before it has failed enough).
class ProbeState {
 public:
  ProbeState(bool initially_passing, int success_threshold, int failure_threshold);
  static ProbeState Readiness(const ProbeTiming& timing);
  static ProbeState Liveness(const ProbeTiming& timing);
  static ProbeState Startup(const ProbeTiming& timing);

  // Records one result; returns passing().
  bool Observe(bool success);
  bool Observe(const ProbeResult& result);

  bool passing() const { return passing_; }
  int consecutive_successes() const { return successes_; }
  int consecutive_failures() const { return failures_; }
  // The message of the last result observed through Observe(const ProbeResult&).
  const std::string& last_message() const { return last_message_; }

 private:
  bool passing_;
  int success_threshold_;
  int failure_threshold_;
  int successes_ = 0;
  int failures_ = 0;
  std::string last_message_;
};

}  // namespace sluice::node
