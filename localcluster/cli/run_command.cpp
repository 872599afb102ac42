#include "localcluster/cli/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "common/file/read_file.h"
#include "localcluster/cli/apply_manifest.h"
#include "localcluster/cli/cluster_client.h"
#include "localcluster/cli/eval_summary.h"
#include "localcluster/cli/eval_wait.h"
#include "localcluster/cli/experiment_status.h"
#include "localcluster/cli/install_paths.h"
#include "localcluster/cli/interrupt_guard.h"
#include "localcluster/cli/manifest.h"
#include "localcluster/cli/progress_log.h"
#include "localcluster/cli/progress_render.h"
#include "localcluster/cli/run_outcome.h"
#include "localcluster/cli/state_layout.h"

namespace sluice::cli {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

Result<std::vector<ManifestDocument>> ReadManifests(const std::vector<std::string>& files) {
  std::vector<ManifestDocument> all;
  for (const std::string& file : files) {
    Result<std::string> text = file::ReadWholeFile(file);
    if (!text.ok()) return Status::NotFound(file + ": cannot be read (does it exist?)");
    SLUICE_ASSIGN_OR_RETURN(std::vector<ManifestDocument> docs, ParseManifest(file, *text));
    for (ManifestDocument& doc : docs) all.push_back(std::move(doc));
  }
  return all;
}

// One followed object and the newest state read of it.
struct Followed {
  AppliedObject applied;
  json object;             // Starts as {"metadata": {"name": ...}}: no status known yet.
  std::string last_error;  // Reported once per distinct error.
};

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A read that never got an answer from the API server: the connection failed or timed out.
bool Unreachable(const Status& status) {
  return status.code() == StatusCode::kUnavailable ||
         status.code() == StatusCode::kDeadlineExceeded;
}

class Follower {
 public:
  Follower(const RunOptions& options, kube::RestClient& client, std::vector<Followed> objects,
           std::string progress_path, bool live, std::ostream& out, std::ostream& err)
      : options_(options),
        client_(client),
        objects_(std::move(objects)),
        progress_path_(std::move(progress_path)),
        live_(live),
        out_(out),
        err_(err) {}

  int Run(const std::function<bool()>& interrupted) {
    const auto start = SteadyClock::now();
    const auto deadline = start + options_.timeout;
    // Set once every TrainerJob succeeded: until when to wait for the final evaluation rounds.
    std::optional<SteadyClock::time_point> eval_deadline;
    while (true) {
      Sample();
      if (options_.unreachable_timeout.count() > 0 && unreachable_since_ &&
          SteadyClock::now() - *unreachable_since_ >= options_.unreachable_timeout) {
        out_ << std::flush;
        err_ << "sluice run: the API server has been unreachable for "
             << std::chrono::ceil<std::chrono::seconds>(options_.unreachable_timeout).count()
             << " s (" << unreachable_error_ << "); stopped following " << options_.experiment
             << " (was the cluster stopped? Follow it again with `sluice run`)\n";
        return kExitFailure;
      }
      const ExperimentOutcome outcome = DecideOutcome(Objects(ExperimentRole::kTrainerJob));
      if (outcome.state == ExperimentState::kSucceeded) {
        const std::vector<PendingEvaluation> pending = PendingEvaluations(
            Objects(ExperimentRole::kTrainerJob), Objects(ExperimentRole::kDataflow));
        const auto now = SteadyClock::now();
        if (!eval_deadline) {
          eval_deadline = now + options_.eval_wait;
          // --timeout still bounds the run, but no longer fails it.
          if (options_.timeout.count() > 0) eval_deadline = std::min(*eval_deadline, deadline);
          if (!pending.empty() && now < *eval_deadline) StartWaiting(pending, *eval_deadline - now);
        }
        if (pending.empty() || now >= *eval_deadline) return Succeeded(pending, "");
      } else if (outcome.state == ExperimentState::kFailed) {
        out_ << std::flush;
        err_ << "sluice run: trainerjob " << outcome.failed << " failed: " << outcome.reason
             << "\n";
        return kExitFailure;
      }
      if (interrupted()) return Interrupted(eval_deadline.has_value());
      // Wait for the next sample in slices, so Ctrl-C and the timeout are noticed promptly.
      const auto next = SteadyClock::now() + options_.interval;
      while (SteadyClock::now() < next) {
        if (interrupted()) return Interrupted(eval_deadline.has_value());
        if (eval_deadline) {
          if (SteadyClock::now() >= *eval_deadline) break;  // One last sample, then done.
        } else if (options_.timeout.count() > 0 && SteadyClock::now() >= deadline) {
          out_ << std::flush;
          err_ << "sluice run: timed out after " << options_.timeout.count()
               << " s (the resources stay)\n";
          return kExitFailure;
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - SteadyClock::now());
        std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
      }
    }
  }

 private:
  // Every TrainerJob succeeded, but evaluation rounds at their final versions are still to come.
  void StartWaiting(const std::vector<PendingEvaluation>& pending, SteadyClock::duration wait) {
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(wait).count();
    waiting_note_ = "Every TrainerJob succeeded; waiting up to " + std::to_string(seconds) +
                    " s for the evaluation at " + DescribePending(pending) +
                    " (Ctrl-C stops waiting).\n";
    if (!live_) out_ << waiting_note_ << std::flush;
  }

  // `pending`: the rounds that did not come (the wait ran out or was cut short by `why`).
  int Succeeded(const std::vector<PendingEvaluation>& pending, const std::string& why) {
    if (!pending.empty() && (options_.eval_wait.count() > 0 || !why.empty())) {
      out_ << "No evaluation at " << DescribePending(pending)
           << (why.empty() ? " within --eval-wait" : why)
           << "; the eval line shows the newest seen.\n";
    }
    out_ << "Experiment " << options_.experiment << " succeeded.\n"
         << SuccessSummary(last_rows_) << EvalSummary(eval_views_) << std::flush;
    return kExitOk;
  }

  int Interrupted(bool waiting_for_eval) {
    if (waiting_for_eval) {
      return Succeeded(PendingEvaluations(Objects(ExperimentRole::kTrainerJob),
                                          Objects(ExperimentRole::kDataflow)),
                       " (interrupted while waiting)");
    }
    out_ << std::flush;
    err_ << "\nsluice run: interrupted; stopped following " << options_.experiment
         << " (the resources stay)\n";
    return kExitInterrupted;
  }

  std::vector<json> Objects(ExperimentRole role) const {
    std::vector<json> out;
    for (const Followed& f : objects_) {
      if (f.applied.role == role) out.push_back(f.object);
    }
    return out;
  }

  void Sample() {
    bool reached = false;  // Some read got an answer from the API server (an error or not).
    for (Followed& f : objects_) {
      kube::ResourceClient resource(client_, f.applied.gvr, f.applied.namespace_);
      Result<json> object = resource.Get(f.applied.name);
      if (object.ok()) {
        f.object = std::move(*object);
        f.last_error.clear();
      } else if (object.status().message() != f.last_error) {
        f.last_error = object.status().message();
        err_ << "sluice run: reading " << f.applied.display << ": " << f.last_error << "\n";
      }
      if (object.ok() || !Unreachable(object.status())) {
        reached = true;
      } else {
        unreachable_error_ = object.status().message();
      }
    }
    if (reached) {
      unreachable_since_.reset();
    } else if (!unreachable_since_) {
      unreachable_since_ = SteadyClock::now();
    }
    ExperimentView view;
    for (const json& o : Objects(ExperimentRole::kTrainerJob)) {
      view.trainers.push_back(TrainerViewOf(o));
    }
    for (const json& o : Objects(ExperimentRole::kDataflow)) {
      view.dataflows.push_back(DataflowViewOf(o));
    }
    for (const json& o : Objects(ExperimentRole::kRolloutPool)) {
      view.pools.push_back(PoolViewOf(o));
    }
    for (const DataflowView& dataflow : view.dataflows) KeepForEvalLines(dataflow);
    const double t = WallSeconds();
    last_rows_ = JoinProgress(view, t);
    if (Status s = AppendProgress(progress_path_, last_rows_); !s.ok() && !append_failed_) {
      append_failed_ = true;  // Say it once; following is still worth it.
      err_ << "sluice run: " << s.message() << "\n";
    }
    const std::string clock = ClockText(t);
    if (live_) {
      std::string frame = LiveView(options_.experiment, clock,
                                   std::chrono::duration<double>(options_.interval).count(), view);
      if (!waiting_note_.empty()) frame += "\n" + waiting_note_;
      out_ << LiveRedraw(live_lines_, frame) << std::flush;
      live_lines_ = LineCount(frame);
    } else {
      for (const ProgressRow& row : last_rows_) out_ << PlainLine(row, clock) << "\n";
      out_ << std::flush;
    }
  }

  // Keeps what EvalSummary needs of the whole run: each view whose evaluation differs from the
  // previous one kept for its Dataflow (EvalSummary over these equals it over every view).
  void KeepForEvalLines(const DataflowView& dataflow) {
    std::optional<EvalPoint> evaluation = EvalPointOf(dataflow);
    if (!evaluation) return;
    auto [it, added] = last_evaluation_.try_emplace(dataflow.name, *evaluation);
    if (!added && it->second == *evaluation) return;
    it->second = std::move(*evaluation);
    eval_views_.push_back(dataflow);
  }

  const RunOptions& options_;
  kube::RestClient& client_;
  std::vector<Followed> objects_;
  std::string progress_path_;
  bool live_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<ProgressRow> last_rows_;
  std::vector<DataflowView> eval_views_;              // See KeepForEvalLines.
  std::map<std::string, EvalPoint> last_evaluation_;  // Dataflow -> the last kept.
  std::string waiting_note_;  // While waiting for evaluations: shown under the live view.
  size_t live_lines_ = 0;
  bool append_failed_ = false;
  // Since when no read has reached the API server (see --unreachable-timeout), and why.
  std::optional<SteadyClock::time_point> unreachable_since_;
  std::string unreachable_error_;
};

}  // namespace

int RunRun(const RunOptions& options, std::ostream& out, std::ostream& err) {
  InterruptGuard guard;
  return RunExperiment(
      options, [&guard] { return guard.interrupted(); }, out, err);
}

int RunExperiment(const RunOptions& options, const std::function<bool()>& interrupted,
                  std::ostream& out, std::ostream& err) {
  const StateLayout layout(AbsolutePath(options.state_dir, CurrentDirectory()));
  Result<std::vector<ManifestDocument>> docs = ReadManifests(options.manifests);
  if (!docs.ok()) {
    err << "sluice run: " << docs.status().message() << "\n";
    return kExitFailure;
  }
  if (docs->empty()) {
    err << "sluice run: the manifests hold no document\n";
    return kExitFailure;
  }
  Result<std::unique_ptr<kube::RestClient>> client = ClusterClient(layout.Kubeconfig());
  if (!client.ok()) {
    err << "sluice run: " << client.status().message() << "\n";
    return kExitFailure;
  }
  kube::DiscoveryClient discovery(**client);

  std::vector<Followed> followed;
  bool rejected = false;
  bool has_trainer = false;
  for (const ManifestDocument& doc : *docs) {
    Result<AppliedObject> applied = ApplyDocument(**client, discovery, doc, options.namespace_);
    if (!applied.ok()) {
      err << "sluice run: " << applied.status().message() << "\n";
      rejected = true;
      continue;
    }
    out << applied->display << " " << ApplyActionName(applied->action) << "\n";
    has_trainer = has_trainer || applied->role == ExperimentRole::kTrainerJob;
    if (applied->role == ExperimentRole::kTrainerJob ||
        applied->role == ExperimentRole::kDataflow ||
        applied->role == ExperimentRole::kRolloutPool) {
      json not_read_yet = {{"metadata", {{"name", applied->name}}}};
      followed.push_back({*applied, std::move(not_read_yet), ""});
    }
  }
  out << std::flush;
  if (rejected) {
    err << "sluice run: not following " << options.experiment
        << ": some documents were not applied\n";
    return kExitFailure;
  }
  if (!has_trainer) {
    out << "No TrainerJob in the manifests: nothing to follow.\n";
    return kExitOk;
  }
  const std::string progress = layout.ProgressLog(options.experiment);
  if (!options.follow) {
    out << "Not following (--no-follow). Follow later with `sluice run` again; progress is "
           "recorded only while following.\n";
    return kExitOk;
  }
  bool live = options.display == RunDisplay::kLive;
  if (options.display == RunDisplay::kAuto) {
    live = &out == &std::cout && isatty(STDOUT_FILENO) == 1;
  }
  out << "Following experiment " << options.experiment << " (recording " << progress << ")\n"
      << std::flush;
  Follower follower(options, **client, std::move(followed), progress, live, out, err);
  return follower.Run(interrupted);
}

}  // namespace sluice::cli
