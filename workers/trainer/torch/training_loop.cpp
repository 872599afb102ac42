#include "workers/trainer/torch/training_loop.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "common/clock.h"
#include "workers/trainer/checkpoint_directory.h"
#include "workers/trainer/torch/published_weights.h"
#include "workers/weights/weight_snapshot.h"
#include "workers/weights/weight_sync.h"

namespace sluice::trainer {
namespace {

// A Status call as a Result, for RetryWhileUnavailable.
template <typename Call>
auto AsResult(const Call& call) {
  return [call]() -> Result<bool> {
    Status s = call();
    if (!s.ok()) return s;
    return true;
  };
}

double SecondsSince(const Clock& clock, Clock::MonoTime start) {
  return std::chrono::duration<double>(clock.Now() - start).count();
}

}  // namespace

TrainingLoop::TrainingLoop(TrainingLoopParts parts, RunSchedule schedule)
    : p_(std::move(parts)), clock_(LoopClock(p_)), schedule_(schedule) {}

Status TrainingLoop::PublishAndAnnounce(double* publish_seconds) {
  const PolicyTrainer& t = *p_.trainer;
  const Clock::MonoTime p0 = clock_.Now();
  // The published form: HF names in the Policy's dtype, with the delta from the previous
  // version only when spec.weightSync asks for one for this version (weight_sync.h).
  Result<PublishedWeights> w = PublishWeights(t.model(), p_.settings->policy_spec.model.dtype);
  if (!w.ok()) return w.status();
  SLUICE_RETURN_IF_ERROR(p_.store->Publish(
      w->views, t.version(),
      weights::EncodeDeltaFor(p_.settings->policy_spec.weight_sync, t.version())));
  if (publish_seconds) *publish_seconds = SecondsSince(clock_, p0);
  if (!RunSchedule::Announced(t.version())) return Status::Ok();
  dataflow::VersionAnnouncement a;
  a.number = t.version();
  a.evaluate = RunSchedule::EvaluateOnAnnounce(p_.settings->spec.warm_start.has_value(), t.step());
  a.url = p_.weights_base + std::to_string(t.version());
  if (Result<std::string> digest = p_.store->Digest(t.version()); digest.ok()) a.digest = *digest;
  for (const weights::VersionInfo& v : p_.store->Versions()) {
    if (v.version == t.version() && v.delta_from) a.delta_base = *v.delta_from;
  }
  // The dataflow may be restarting (its log brings it back): wait for it rather than fail the
  // gang. Announcing again is idempotent.
  return RetryWhileUnavailable(
             AsResult([&] { return p_.dataflow->Announce(p_.settings->policy, a); }),
             p_.dataflow_timeout, p_.stop, clock_)
      .status();
}

Result<std::string> TrainingLoop::TakeFrame() {
  Clock::MonoTime last_ok = clock_.Now();
  while (!p_.stop.IsCancelled()) {
    Result<std::optional<std::string>> got = p_.dataflow->TakeBatchFrame(
        p_.settings->policy, p_.groups_per_batch, p_.batch_wait, p_.stop);
    if (got.ok() && got->has_value()) return std::move(**got);
    if (got.ok()) {
      last_ok = clock_.Now();
      continue;
    }
    if (dataflow::IsDrained(got.status())) {
      starved_ = got.status().message();
      if (starved_.empty()) starved_ = "the dataflow is drained";
      return std::string();
    }
    if (clock_.Now() - last_ok > p_.dataflow_timeout) return got.status();
    p_.logger->Warn("batch request failed; retrying", {{"error", got.status().ToString()}});
    (void)p_.stop.WaitFor(std::chrono::seconds(1));
  }
  return std::string();
}

void TrainingLoop::Acknowledge(const std::string& batch_id) {
  // Retried while the dataflow is unreachable (a restart): a lost ack would have the batch
  // served again after its ack timeout and trained twice. Acking again is idempotent.
  Status acked;
  if (schedule_.checkpoints()) {
    // Held until the next checkpoint makes this step durable. Hold numbers grow in ack order.
    Result<int64_t> held = RetryWhileUnavailable([&] { return p_.dataflow->AckHeld(batch_id); },
                                                 p_.dataflow_timeout, p_.stop, clock_);
    if (held.ok()) schedule_.Held(*held);
    acked = held.status();
  } else {
    acked = RetryWhileUnavailable(AsResult([&] { return p_.dataflow->Ack(batch_id); }),
                                  p_.dataflow_timeout, p_.stop, clock_)
                .status();
  }
  if (!acked.ok()) {
    // Not fatal: the dataflow re-serves the batch after its ack timeout.
    p_.logger->Warn("ack failed", {{"batch", batch_id}, {"error", acked.ToString()}});
  }
}

Status TrainingLoop::WriteCheckpoint(bool last) {
  const PolicyTrainer& t = *p_.trainer;
  const api::TrainerJobSpecCheckpoint& c = *p_.settings->spec.checkpoint;
  Result<std::string> tmp = BeginCheckpoint(p_.checkpoint_dir, t.step());
  Status s = tmp.ok() ? t.SaveState(*tmp) : tmp.status();
  if (s.ok()) s = WriteHeldThrough(*tmp, schedule_.held_through());
  if (s.ok()) s = CommitCheckpoint(p_.checkpoint_dir, t.step(), static_cast<int>(c.keep));
  if (!s.ok()) return s;
  const int64_t release = schedule_.Committed(t.step(), last);
  // A failed release only keeps the batches longer (the next one releases through more).
  if (Result<int64_t> r = p_.dataflow->ReleaseHeld(p_.settings->policy, release); !r.ok()) {
    p_.logger->Warn("releasing held batches failed",
                    {{"through", release}, {"error", r.status().ToString()}});
  }
  p_.board->RecordCheckpoint(t.step());
  p_.logger->Info("checkpoint", {{"step", t.step()}, {"dir", p_.checkpoint_dir}});
  return Status::Ok();
}

LoopOutcome TrainingLoop::Run() {
  PolicyTrainer& t = *p_.trainer;
  auto failed = [](std::string what, Status s) {
    return LoopOutcome{RunEnd::kStopped, LoopFailure{std::move(what), std::move(s)}};
  };
  while (t.step() < p_.steps) {
    // Rank 0 takes a batch (or decides to stop) and hands the frame to everyone.
    std::string frame;
    const Clock::MonoTime wait_start = clock_.Now();
    if (p_.rank == 0) {
      Result<std::string> taken = TakeFrame();
      if (!taken.ok()) return failed("the dataflow is unreachable", taken.status());
      frame = std::move(*taken);
    }
    const double waited = SecondsSince(clock_, wait_start);
    p_.board->RecordDataWait(waited);
    if (Status s = p_.comm->Broadcast(frame, 0); !s.ok()) return failed("broadcast failed", s);
    if (frame.empty()) {
      // Stopping. Rank 0 tells every rank why: empty for SIGTERM, else the dataflow is drained.
      if (Status s = p_.comm->Broadcast(starved_, 0); !s.ok()) {
        return failed("broadcast failed", s);
      }
      return {starved_.empty() ? RunEnd::kStopped : RunEnd::kStarved, std::nullopt};
    }
    Result<dataflow::Batch> batch = dataflow::DecodeBatch(frame);
    if (!batch.ok()) return failed("undecodable batch", batch.status());
    Result<StepReport> report = t.Step(*batch);
    if (!report.ok()) return failed("training step failed", report.status());

    StepFigures f;
    f.step = report->step;
    f.version = report->version;
    f.loss = report->loss;
    f.value_loss = report->value_loss;
    f.reward_mean = report->reward_mean;
    f.kl = report->kl;
    f.entropy = report->entropy;
    f.clip_fraction = report->clip_fraction;
    f.grad_norm = report->grad_norm;
    f.learning_rate = report->learning_rate;
    f.tokens_per_second = report->tokens_per_second;
    f.staleness_mean = report->staleness_mean;
    f.staleness_max = report->staleness_max;
    f.step_seconds = report->seconds;
    f.tokens = report->tokens;
    f.data_wait_fraction = waited / std::max(waited + report->seconds, 1e-9);
    if (p_.rank == 0) {
      Acknowledge(batch->batch_id);
      if (Status s = PublishAndAnnounce(&f.publish_seconds); !s.ok()) {
        return failed("publishing failed", s);
      }
      for (const weights::VersionInfo& v : p_.store->Versions()) {
        if (v.version == t.version() && v.delta_from) {
          f.delta_bytes = static_cast<double>(v.delta_stats.bytes);
          f.delta_density = v.delta_stats.density();
        }
      }
    }
    p_.board->RecordStep(f);
    p_.logger->Info("step", {{"step", f.step},
                             {"batch", batch->batch_id},
                             {"loss", f.loss},
                             {"reward_mean", f.reward_mean},
                             {"entropy", f.entropy},
                             {"clip_fraction", f.clip_fraction},
                             {"grad_norm", f.grad_norm},
                             {"tokens_per_second", f.tokens_per_second},
                             {"data_wait_fraction", f.data_wait_fraction}});
    if (p_.rank == 0 && schedule_.CheckpointAfterStep(t.step())) {
      if (Status s = WriteCheckpoint(t.step() == p_.steps); !s.ok()) {
        return failed("checkpoint failed", s);
      }
    }
  }
  return {RunEnd::kFinished, std::nullopt};
}

std::optional<LoopFailure> TrainingLoop::Finish(RunEnd end) {
  const PolicyTrainer& t = *p_.trainer;
  if (p_.rank != 0) return std::nullopt;
  // Stopped or starved between checkpoints: make the steps since durable, so the batches the
  // dataflow holds for them are not trained again after a restart.
  if (schedule_.CheckpointAtEnd(end, t.step())) {
    if (Status s = WriteCheckpoint(false); !s.ok()) return LoopFailure{"checkpoint failed", s};
  }
  if (end != RunEnd::kFinished || t.version() <= 0) return std::nullopt;
  // The dataflow keeps the final version for rollout replicas created after this pod is gone
  // (workers/weights/final_weights.h). Not fatal: the run did train, and until this pod goes it
  // serves the version itself.
  std::shared_ptr<const weights::WeightSnapshot> last = p_.store->Full(t.version());
  if (!last) return std::nullopt;
  Result<bool> kept = RetryWhileUnavailable(
      [&] {
        return p_.dataflow->PutFinalWeights(p_.settings->policy, last->version(), last->digest(),
                                            std::string(last->image()));
      },
      p_.dataflow_timeout, p_.stop, clock_);
  if (kept.ok()) {
    p_.logger->Info("final weights kept by the dataflow",
                    {{"version", t.version()}, {"bytes", last->size_bytes()}, {"created", *kept}});
  } else {
    p_.logger->Warn("the dataflow did not keep the final weights",
                    {{"version", t.version()}, {"error", kept.status().ToString()}});
  }
  return std::nullopt;
}

}  // namespace sluice::trainer
