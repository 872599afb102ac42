#include "kube/leader_election.h"

#include <cstdio>
#include <random>
#include <thread>

#include "common/time_format.h"
#include "kube/errors.h"

namespace sluice::kube {

Status LeaderElectionConfig::Validate() const {
  if (lease_name.empty()) return Status::InvalidArgument("a lease name is required");
  if (identity.empty()) return Status::InvalidArgument("an identity is required");
  if (!(lease_duration > renew_deadline)) {
    return Status::InvalidArgument("lease duration must be greater than the renew deadline");
  }
  if (!(renew_deadline > retry_period) || retry_period.count() <= 0) {
    return Status::InvalidArgument("renew deadline must be greater than the retry period (> 0)");
  }
  return Status::Ok();
}

std::string LeaderIdentity(const std::string& pod_name) {
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%08x", static_cast<unsigned>(rd()));
  return pod_name + "_" + suffix;
}

LeaderElector::LeaderElector(ResourceClient leases, LeaderElectionConfig config, Clock& clock)
    : leases_(std::move(leases)), config_(std::move(config)), clock_(clock) {
  if (config_.registry) {
    master_status_ = &config_.registry
                          ->AddGauge("leader_election_master_status",
                                     "Gauge of if the reporting system is master of the relevant "
                                     "lease, 0 indicates backup, 1 indicates master.",
                                     {"name"})
                          .WithLabels({config_.lease_name});
    master_status_->Set(0);
  }
}

std::string LeaderElector::GetLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_holder_;
}

void LeaderElector::SetLeader(bool leading) {
  leader_ = leading;
  if (master_status_) master_status_->Set(leading ? 1 : 0);
}

void LeaderElector::Observe(const nlohmann::json& lease) {
  const nlohmann::json spec = lease.value("spec", nlohmann::json::object());
  const std::string holder = spec.value("holderIdentity", "");
  const std::string renew = spec.value("renewTime", "");
  bool new_leader = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (holder != observed_holder_ || renew != observed_renew_time_ || !last_lease_) {
      new_leader = holder != observed_holder_;
      observed_holder_ = holder;
      observed_renew_time_ = renew;
      observed_time_ = clock_.Now();
    }
    last_lease_ = lease;
  }
  if (new_leader && !holder.empty() && config_.on_new_leader) config_.on_new_leader(holder);
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now = FormatMicroTime(clock_.WallNow());
  const int duration_s = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  Result<nlohmann::json> current = leases_.Get(config_.lease_name);
  if (!current.ok()) {
    if (!IsNotFound(current.status())) {
      SetLeader(false);
      return false;
    }
    nlohmann::json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", leases_.namespace_()}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", duration_s},
          {"acquireTime", now},
          {"renewTime", now},
          {"leaseTransitions", 0}}}};
    Result<nlohmann::json> created = leases_.Create(lease);
    if (!created.ok()) {
      SetLeader(false);
      return false;
    }
    Observe(*created);
    SetLeader(true);
    return true;
  }
  Observe(*current);
  const nlohmann::json spec = current->value("spec", nlohmann::json::object());
  const std::string holder = spec.value("holderIdentity", "");
  const bool ours = holder == config_.identity;
  if (!holder.empty() && !ours) {
    std::lock_guard<std::mutex> lock(mu_);
    if (observed_time_ + config_.lease_duration > clock_.Now()) {
      leader_ = false;
      if (master_status_) master_status_->Set(0);
      return false;  // Held by someone else and not expired.
    }
  }
  nlohmann::json updated = *current;
  nlohmann::json& s = updated["spec"];
  s["holderIdentity"] = config_.identity;
  s["leaseDurationSeconds"] = duration_s;
  s["renewTime"] = now;
  if (!ours) {
    s["acquireTime"] = now;
    s["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  Result<nlohmann::json> written = leases_.Update(updated);
  if (!written.ok()) {
    SetLeader(false);
    return false;
  }
  Observe(*written);
  SetLeader(true);
  return true;
}

Status LeaderElector::Release() {
  if (!IsLeader()) return Status::Ok();
  std::optional<nlohmann::json> lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease = last_lease_;
  }
  SetLeader(false);
  if (!lease) return Status::Ok();
  nlohmann::json released = *lease;
  released["spec"]["holderIdentity"] = "";
  released["spec"]["leaseDurationSeconds"] = 1;
  const std::string now = FormatMicroTime(clock_.WallNow());
  released["spec"]["renewTime"] = now;
  released["spec"]["acquireTime"] = now;
  Result<nlohmann::json> written = leases_.Update(released);
  if (!written.ok()) return written.status().WithContext("releasing lease");
  Observe(*written);
  return Status::Ok();
}

bool LeaderElector::Sleep(Clock::Duration d, const CancellationToken& cancel) {
  if (&clock_ == &SystemClock::Instance()) return cancel.WaitFor(d);
  clock_.SleepFor(d);
  return cancel.IsCancelled();
}

void LeaderElector::Run(CancellationToken cancel) {
  while (!TryAcquireOrRenew()) {
    if (Sleep(config_.retry_period, cancel)) return;
  }
  CancellationSource leading(cancel);
  std::thread worker;
  if (config_.on_started_leading) {
    worker = std::thread([this, token = leading.Token()] { config_.on_started_leading(token); });
  }
  for (;;) {
    if (Sleep(config_.retry_period, cancel)) break;
    const Clock::MonoTime deadline = clock_.Now() + config_.renew_deadline;
    bool renewed = false;
    while (!cancel.IsCancelled()) {
      if (TryAcquireOrRenew()) {
        renewed = true;
        break;
      }
      if (clock_.Now() + config_.retry_period > deadline) break;
      if (Sleep(config_.retry_period, cancel)) break;
    }
    if (cancel.IsCancelled() || !renewed) break;
  }
  leading.Cancel();  // Stop the controllers at once, before anything else.
  if (cancel.IsCancelled() && config_.release_on_cancel) {
    (void)Release();
  }
  SetLeader(false);
  if (config_.on_stopped_leading) config_.on_stopped_leading();
  if (worker.joinable()) worker.join();
}

}  // namespace sluice::kube
