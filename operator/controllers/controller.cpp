#include "operator/controllers/controller.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

#include "common/check.h"
#include "common/logging/logger.h"
#include "kube/errors.h"
#include "kube/rate_limiting_queue.h"
#include "kube/store.h"

namespace sluice::controllers {

namespace {

// controller-runtime's reconcile_time_seconds buckets.
const std::vector<double> kReconcileTimeBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
    0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
    6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};

// With an injected clock (a FakeClock in tests), how often the delaying queue looks at it.
constexpr std::chrono::milliseconds kInjectedClockPoll{10};

double Seconds(Clock::Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::optional<std::string> ControllerOwnerKey(const nlohmann::json& owned,
                                              const std::string& owner_kind) {
  if (!owned.is_object()) return std::nullopt;
  auto meta = owned.find("metadata");
  if (meta == owned.end() || !meta->is_object()) return std::nullopt;
  auto refs = meta->find("ownerReferences");
  if (refs == meta->end() || !refs->is_array()) return std::nullopt;
  for (const nlohmann::json& ref : *refs) {
    if (!ref.is_object()) continue;
    auto controller = ref.find("controller");
    if (controller == ref.end() || !controller->is_boolean() || !controller->get<bool>()) continue;
    auto kind = ref.find("kind");
    if (kind == ref.end() || !kind->is_string() ||
        kind->get_ref<const std::string&>() != owner_kind)
      continue;
    auto name = ref.find("name");
    if (name == ref.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      return std::nullopt;
    // At most one reference may be the controller: the first one decides.
    return kube::ObjectKey(kube::NamespaceOf(owned), name->get_ref<const std::string&>());
  }
  return std::nullopt;
}

// What the informers' event handlers need; they outlive the Controller when the informers do.
struct Controller::Shared {
  explicit Shared(const ControllerOptions& options)
      : logger(log::Logger("controller").With({{"controller", options.name}})) {
    kube::DelayingQueueOptions queue_options;
    queue_options.queue.name = options.name;
    queue_options.queue.clock = options.clock;
    queue_options.queue.registry = options.registry;
    if (options.clock != nullptr) queue_options.poll_interval = kInjectedClockPoll;
    queue = std::make_unique<kube::RateLimitingQueue>(std::move(queue_options));
  }

  log::Logger logger;
  std::unique_ptr<kube::RateLimitingQueue> queue;
};

struct Controller::Metrics {
  metrics::Counter* success;
  metrics::Counter* error;
  metrics::Counter* requeue_after;
  metrics::Counter* errors;
  metrics::Histogram* reconcile_time;
  metrics::Gauge* max_concurrent;
  metrics::Gauge* active_workers;
};

Controller::Controller(ControllerOptions options, kube::Informer& primary, ReconcileFunc reconcile)
    : options_(std::move(options)),
      clock_(&ClockOrSystem(options_.clock)),
      reconcile_(std::move(reconcile)) {
  SLUICE_CHECK(reconcile_ != nullptr);
  options_.max_concurrent_reconciles = std::max(1, options_.max_concurrent_reconciles);
  if (metrics::Registry* r = options_.registry) {
    // Registering an identical family again returns the existing one (registry.h), so every
    // controller on a registry shares these families and adds its own children.
    const std::vector<std::string> name = {options_.name};
    auto& total =
        r->AddCounter("controller_runtime_reconcile_total",
                      "Total number of reconciliations per controller", {"controller", "result"});
    metrics_ = std::make_unique<Metrics>(Metrics{
        &total.WithLabels({options_.name, "success"}), &total.WithLabels({options_.name, "error"}),
        &total.WithLabels({options_.name, "requeue_after"}),
        &r->AddCounter("controller_runtime_reconcile_errors_total",
                       "Total number of reconciliation errors per controller", {"controller"})
             .WithLabels(name),
        &r->AddHistogram("controller_runtime_reconcile_time_seconds",
                         "Length of time per reconciliation per controller", {"controller"},
                         kReconcileTimeBuckets)
             .WithLabels(name),
        &r->AddGauge("controller_runtime_max_concurrent_reconciles",
                     "Maximum number of concurrent reconciles per controller", {"controller"})
             .WithLabels(name),
        &r->AddGauge("controller_runtime_active_workers",
                     "Number of currently used workers per controller", {"controller"})
             .WithLabels(name)});
    metrics_->max_concurrent->Set(options_.max_concurrent_reconciles);
  }
  shared_ = std::make_shared<Shared>(options_);

  informers_.push_back(&primary);
  std::shared_ptr<Shared> shared = shared_;
  primary.AddEventHandler(kube::EventHandlers{
      [shared](const kube::ObjectPtr& o) { shared->queue->Add(kube::ObjectKey(*o)); },
      [shared](const kube::ObjectPtr&, const kube::ObjectPtr& o) {
        shared->queue->Add(kube::ObjectKey(*o));
      },
      [shared](const kube::ObjectPtr& o) { shared->queue->Add(kube::ObjectKey(*o)); }});
}

Controller::~Controller() {
  // Stops the delaying queue's thread; handlers still holding the queue find it shut down.
  shared_->queue->ShutDown();
  // The queue may outlive the registry (the handlers share it): its scrape-time gauges, which
  // read the queue, must leave the registry now.
  shared_->queue->RemoveScrapeMetrics();
}

const std::string& Controller::name() const { return options_.name; }

void Controller::WatchOwned(kube::Informer& owned, std::string owner_kind) {
  SLUICE_CHECK(!ran_);
  informers_.push_back(&owned);
  auto enqueue_owner = [shared = shared_, kind = std::move(owner_kind)](const kube::ObjectPtr& o) {
    if (std::optional<std::string> key = ControllerOwnerKey(*o, kind)) shared->queue->Add(*key);
  };
  owned.AddEventHandler(kube::EventHandlers{
      enqueue_owner,
      [enqueue_owner](const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) {
        // The owner may have changed: both the old and the new one must look.
        enqueue_owner(old_object);
        enqueue_owner(new_object);
      },
      enqueue_owner});
}

void Controller::Watch(kube::Informer& other,
                       std::function<std::vector<std::string>(const nlohmann::json&)> map) {
  SLUICE_CHECK(!ran_);
  SLUICE_CHECK(map != nullptr);
  informers_.push_back(&other);
  auto enqueue_mapped = [shared = shared_, map = std::move(map)](const kube::ObjectPtr& o) {
    try {
      for (const std::string& key : map(*o)) {
        if (!key.empty()) shared->queue->Add(key);
      }
    } catch (const std::exception& e) {
      shared->logger.Error("watch map function threw",
                           {{"object", kube::ObjectKey(*o)}, {"error", e.what()}});
    } catch (...) {
      shared->logger.Error("watch map function threw", {{"object", kube::ObjectKey(*o)}});
    }
  };
  other.AddEventHandler(kube::EventHandlers{
      enqueue_mapped,
      [enqueue_mapped](const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) {
        enqueue_mapped(old_object);
        enqueue_mapped(new_object);
      },
      enqueue_mapped});
}

void Controller::Enqueue(const std::string& key) { shared_->queue->Add(key); }

void Controller::Run(CancellationToken cancel) {
  SLUICE_CHECK(!ran_);
  ran_ = true;
  const log::Logger& logger = shared_->logger;
  bool synced = true;
  for (const kube::Informer* informer : informers_) {
    if (!informer->WaitForSync(cancel)) {
      synced = false;
      break;
    }
  }
  std::vector<std::thread> workers;
  if (synced && !cancel.IsCancelled()) {
    logger.Info("starting workers", {{"worker_count", options_.max_concurrent_reconciles}});
    for (int i = 0; i < options_.max_concurrent_reconciles; ++i) {
      workers.emplace_back([this, cancel] { Worker(cancel); });
    }
  }
  cancel.Wait();
  // Wakes the idle workers; the busy ones finish their reconcile and see the cancellation.
  shared_->queue->ShutDown();
  for (std::thread& t : workers) t.join();
  if (!workers.empty()) logger.Info("all workers finished");
}

void Controller::Worker(const CancellationToken& cancel) {
  kube::RateLimitingQueue& queue = *shared_->queue;
  while (std::optional<std::string> key = queue.Get()) {
    if (cancel.IsCancelled()) {
      // Stopping: keys still queued are left alone (the next leader reconciles them).
      queue.Done(*key);
      return;
    }
    ReconcileOne(*key);
    queue.Done(*key);
  }
}

void Controller::ReconcileOne(const std::string& key) {
  kube::RateLimitingQueue& queue = *shared_->queue;
  if (metrics_) metrics_->active_workers->Inc();
  const Clock::MonoTime start = clock_->Now();
  Result<ReconcileResult> result = [&]() -> Result<ReconcileResult> {
    try {
      return reconcile_(key);
    } catch (const std::exception& e) {
      return Status::Internal(std::string("reconcile threw: ") + e.what());
    } catch (...) {
      return Status::Internal("reconcile threw a non-exception");
    }
  }();
  if (metrics_) {
    metrics_->reconcile_time->Observe(Seconds(clock_->Now() - start));
    metrics_->active_workers->Dec();
  }

  if (!result.ok() && kube::IsNamespaceTerminating(result.status())) {
    // The namespace is going and takes the object with it: creating its children is pointless,
    // and retrying would only repeat the refusal. The object's deletion brings the key back.
    shared_->logger.Info("namespace is being deleted; not creating children",
                         {{"key", key}, {"error", result.status().message()}});
    queue.Forget(key);
    if (metrics_) metrics_->success->Inc();
    return;
  }
  if (!result.ok()) {
    if (metrics_) {
      metrics_->error->Inc();
      metrics_->errors->Inc();
    }
    shared_->logger.Error("reconciler error",
                          {{"key", key}, {"error", result.status().ToString()}});
    queue.AddRateLimited(key);
    return;
  }
  queue.Forget(key);
  if (result->requeue_after.has_value()) {
    if (metrics_) metrics_->requeue_after->Inc();
    queue.AddAfter(key, *result->requeue_after);
    return;
  }
  if (metrics_) metrics_->success->Inc();
}

}  // namespace sluice::controllers
