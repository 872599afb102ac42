// LeaderElector: one active operator replica at a time, through a coordination.k8s.io/v1 Lease,
// like client-go's leaderelection package.
//
// Algorithm (TryAcquireOrRenew): read the Lease (create it when absent). The lease is free when
// it has no holder, or when its record (holder, renewTime) has not changed for lease_duration
// as measured on *this* replica's monotonic clock since it first saw that record (clocks of
// different machines are never compared). A free lease or our own is written back with us as
// holder and renewTime now, using the read resourceVersion, so of two candidates only one
// write succeeds (the other gets Conflict). Taking over from another holder increments
// leaseTransitions.
//
// Run: tries every retry_period until it leads; then calls on_started_leading(token) on a new
// thread and renews every retry_period. If renewals keep failing for renew_deadline, leadership
// is lost: the token passed to on_started_leading is cancelled at once (controllers must stop),
// then on_stopped_leading runs. When Run's own token is cancelled, the lease is released
// (holder cleared, so a successor takes over without waiting for expiry) if release_on_cancel.
// Requirements, as in client-go: lease_duration > renew_deadline > retry_period.
//
// Metric: leader_election_master_status{name} is 1 while leading.
//
// Ownership: the RestClient behind `leases`, the Clock and the Registry must outlive the
// elector. Thread safety: Run on one thread; IsLeader/GetLeader from any.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/metrics/registry.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "kube/dynamic_client.h"

namespace sluice::kube {

struct LeaderElectionConfig {
  std::string lease_name;  // The Lease lives in the namespace of the ResourceClient.
  std::string identity;    // Unique per replica: LeaderIdentity(pod name).
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  bool release_on_cancel = true;
  // Runs on its own thread while leading; must return soon after `leading` is cancelled.
  std::function<void(CancellationToken leading)> on_started_leading;
  std::function<void()> on_stopped_leading;
  // A different holder was observed (or we became it).
  std::function<void(const std::string& identity)> on_new_leader;
  metrics::Registry* registry = nullptr;

  Status Validate() const;
};

// "<pod name>_<8 random hex digits>", so a restarted pod with the same name is a new candidate.
std::string LeaderIdentity(const std::string& pod_name);

class LeaderElector {
 public:
  // `leases`: a ResourceClient for leases in the lease's namespace.
  LeaderElector(ResourceClient leases, LeaderElectionConfig config, Clock& clock);

  // One round of the algorithm above; true when we hold the lease afterwards.
  bool TryAcquireOrRenew();
  // Clears the holder if we hold the lease. OK when not holding.
  Status Release();
  // See the header comment. Returns when `cancel` fires or leadership is lost.
  void Run(CancellationToken cancel);

  bool IsLeader() const { return leader_.load(); }
  // The holder last observed ("" when none).
  std::string GetLeader() const;

 private:
  // Sleeps `d` on the clock; true when cancelled.
  bool Sleep(Clock::Duration d, const CancellationToken& cancel);
  void SetLeader(bool leading);
  void Observe(const nlohmann::json& lease);

  ResourceClient leases_;
  LeaderElectionConfig config_;
  Clock& clock_;
  metrics::Gauge* master_status_ = nullptr;
  std::atomic<bool> leader_{false};
  mutable std::mutex mu_;
  std::string observed_holder_;
  std::string observed_renew_time_;
  Clock::MonoTime observed_time_{};
  std::optional<nlohmann::json> last_lease_;
};

}  // namespace sluice::kube
