#include "workers/trainer/torch/run_resume.h"

#include <vector>

#include "workers/trainer/checkpoint_directory.h"
#include "workers/trainer/torch/published_weights.h"
#include "workers/trainer/version_continuity.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::trainer {
namespace {

// Rank 0: the version to publish the trainer's current weights as (version_continuity.h), from
// the dataflow's newest announcement of the policy (GET /v1/versions, retried while the dataflow
// is unreachable).
Result<int64_t> VersionToContinueAt(const TrainingLoopParts& p) {
  const PolicyTrainer& t = *p.trainer;
  Result<std::vector<dataflow::AnnouncedVersion>> versions =
      RetryWhileUnavailable([&] { return p.dataflow->AnnouncedVersions(p.stop); },
                            p.dataflow_timeout, p.stop, LoopClock(p));
  if (!versions.ok()) return versions.status();
  std::optional<AnnouncedImage> announced;
  for (const dataflow::AnnouncedVersion& v : *versions) {
    if (v.policy == p.settings->policy) announced = AnnouncedImage{v.number, v.digest};
  }
  std::string held_digest;
  if (announced && announced->number == t.version()) {
    // Only then can the announcement be these weights: compare images.
    Result<PublishedWeights> w = PublishWeights(t.model(), p.settings->policy_spec.model.dtype);
    if (!w.ok()) return w.status();
    Result<weights::WeightSnapshot> image = weights::WeightSnapshot::Build(w->views, t.version());
    if (!image.ok()) return image.status();
    held_digest = image->digest();
  }
  return ContinuedVersion(t.version(), announced, held_digest);
}

}  // namespace

ResumeOutcome ResumeRun(const TrainingLoopParts& p, const std::string& checkpoint_dir) {
  PolicyTrainer& t = *p.trainer;
  ResumeOutcome out;
  auto failed = [&out](std::string what, Status s) {
    out.failure = LoopFailure{std::move(what), std::move(s)};
    return out;
  };
  if (!checkpoint_dir.empty()) {
    Result<std::vector<int64_t>> held = ListCheckpoints(checkpoint_dir);
    if (!held.ok()) return failed("cannot list checkpoints", held.status());
    // LoadState overwrites every tensor, so a failed load leaves nothing behind.
    Status last = Status::Ok();
    for (auto it = held->rbegin(); it != held->rend(); ++it) {
      const std::string path = checkpoint_dir + "/" + CheckpointName(*it);
      Status s = VerifyCheckpoint(checkpoint_dir, *it);
      Result<int64_t> through = s.ok() ? ReadHeldThrough(path) : Result<int64_t>(s);
      s = through.status();
      if (s.ok()) s = t.LoadState(path);
      if (s.ok()) {
        out.held_through = *through;
        out.checkpointed_step = *it;
        p.board->RecordCheckpoint(*it);
        p.logger->Info("resumed", {{"checkpoint", path}, {"step", t.step()}});
        break;
      }
      p.logger->Warn("checkpoint unusable; trying the previous one",
                     {{"checkpoint", path}, {"error", s.ToString()}});
      p.board->RecordCheckpointFallback(*it, s.ToString());
      last = s;
    }
    if (!held->empty() && out.checkpointed_step < 0) return failed("no usable checkpoint", last);
  }
  std::string decided;
  if (p.rank == 0) {
    Result<int64_t> back = RetryWhileUnavailable(
        [&] { return p.dataflow->ResumeHeld(p.settings->policy, out.held_through); },
        p.dataflow_timeout, p.stop, LoopClock(p));
    if (!back.ok()) return failed("cannot resume the dataflow's held batches", back.status());
    if (*back > 0) {
      p.logger->Info("batches trained after the checkpoint come back",
                     {{"batches", *back}, {"held_through", out.held_through}});
    }
    Result<int64_t> v = VersionToContinueAt(p);
    if (!v.ok()) return failed("cannot read the dataflow's versions", v.status());
    decided = std::to_string(*v);
  }
  if (Status s = p.comm->Broadcast(decided, 0); !s.ok()) return failed("broadcast failed", s);
  const int64_t version = std::stoll(decided);
  if (version != t.version()) {
    p.logger->Info("continuing above the dataflow's versions",
                   {{"held", t.version()}, {"version", version}, {"step", t.step()}});
    t.ContinueAt(version);
  }
  return out;
}

}  // namespace sluice::trainer
