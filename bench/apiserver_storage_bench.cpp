// Benchmarks of the API server's storage (localcluster/apiserver). SQLite figures come with the
// in-memory store measured in the same run as the baseline.
//
//   create    creates/s of ~1 KB pod-like objects (one transaction each)
//   update    updates/s with a resourceVersion precondition
//   list      latency of listing 10,000 objects (whole list, and a first page of 500), ms
//   fan-out   events/s delivered to 100 watchers, each on its own thread
//
// Links: sluice_apiserver_core (or the four storage .cpp files), sluice_common, SQLite::SQLite3,
// Threads.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "localcluster/apiserver/memory_storage.h"
#include "localcluster/apiserver/sqlite_storage.h"

namespace sluice::apiserver {
namespace {

using BenchClock = std::chrono::steady_clock;
using nlohmann::json;

double Seconds(BenchClock::time_point since) {
  return std::chrono::duration<double>(BenchClock::now() - since).count();
}

json PodLike(const std::string& name, int i) {
  json containers = json::array();
  for (int c = 0; c < 2; ++c) {
    containers.push_back({{"name", "c" + std::to_string(c)},
                          {"image", "registry.example/sluice/worker:1.2.3"},
                          {"args", {"--shard", std::to_string(i), "--verbose"}},
                          {"resources", {{"limits", {{"cpu", "2"}, {"memory", "4Gi"}}}}}});
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "bench"},
            {"labels", {{"app", "worker"}, {"shard", std::to_string(i % 16)}}}}},
          {"spec", {{"nodeName", "node-" + std::to_string(i % 8)}, {"containers", containers}}},
          {"status", {{"phase", "Running"}, {"podIP", "10.0.0." + std::to_string(i % 250)}}}};
}

ObjectKey Key(int i) { return {"core/pods", "bench", "pod-" + std::to_string(i)}; }

void Check(const Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/sluice_storage_bench_" + std::to_string(getpid()) + "_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::exit(1);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Backend {
  const char* name;
  std::function<std::unique_ptr<Storage>(const WatchHubOptions&)> open;
};

// creates/s and updates/s over `n` objects.
void BenchWrites(const Backend& backend, int n) {
  std::unique_ptr<Storage> store = backend.open({});
  std::vector<json> objects;
  for (int i = 0; i < n; ++i) objects.push_back(PodLike(Key(i).name, i));
  auto t = BenchClock::now();
  for (int i = 0; i < n; ++i) Check(store->Create(Key(i), objects[i]).status(), "create");
  const double creates = n / Seconds(t);
  t = BenchClock::now();
  for (int i = 0; i < n; ++i) {
    objects[i]["status"]["phase"] = "Succeeded";
    Check(store->Update(Key(i), objects[i], static_cast<uint64_t>(i + 1)).status(), "update");
  }
  const double updates = n / Seconds(t);
  std::printf("create    %-22s %10.0f /s\n", backend.name, creates);
  std::printf("update    %-22s %10.0f /s\n", backend.name, updates);
}

void BenchList(const Backend& backend) {
  constexpr int kObjects = 10000;
  std::unique_ptr<Storage> store = backend.open({});
  for (int i = 0; i < kObjects; ++i) {
    Check(store->Create(Key(i), PodLike(Key(i).name, i)).status(), "create");
  }
  auto median_ms = [&](size_t limit) {
    std::vector<double> runs;
    for (int r = 0; r < 7; ++r) {
      const auto t = BenchClock::now();
      Result<ListResult> list = store->List("core/pods", "bench", limit, "");
      Check(list.status(), "list");
      runs.push_back(Seconds(t) * 1e3);
    }
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
  };
  const double all = median_ms(0);
  const double page = median_ms(500);
  std::printf("list      %-22s %10.2f ms (10,000 objects)   %.2f ms (first 500)\n", backend.name,
              all, page);
}

// One writer updates objects; `kWatchers` threads each drain their own watch.
void BenchFanOut(const Backend& backend) {
  constexpr int kWatchers = 100;
  constexpr int kEvents = 5000;
  std::unique_ptr<Storage> store =
      backend.open({.history_capacity = 10000, .watcher_queue_capacity = kEvents});
  for (int i = 0; i < 100; ++i) {
    Check(store->Create(Key(i), PodLike(Key(i).name, i)).status(), "create");
  }
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int w = 0; w < kWatchers; ++w) {
    Result<std::unique_ptr<Watcher>> watch = store->Watch("core/pods", std::nullopt, 0);
    Check(watch.status(), "watch");
    watchers.push_back(std::move(watch).value());
  }
  std::atomic<int64_t> delivered{0};
  std::atomic<int> closed{0};
  const auto t = BenchClock::now();
  std::vector<std::thread> readers;
  for (int w = 0; w < kWatchers; ++w) {
    readers.emplace_back([&, w] {
      int64_t got = 0;
      while (got < kEvents) {
        WatchNext next = watchers[w]->Next(std::chrono::seconds(30));
        if (next.kind != WatchNext::Kind::kEvent) {
          closed.fetch_add(1);
          break;
        }
        ++got;
      }
      delivered.fetch_add(got);
    });
  }
  json object = PodLike("pod-0", 0);
  for (int i = 0; i < kEvents; ++i) {
    object["status"]["podIP"] = std::to_string(i);
    Check(store->Update(Key(i % 100), object, std::nullopt).status(), "update");
  }
  const double write_s = Seconds(t);
  for (std::thread& r : readers) r.join();
  const double total_s = Seconds(t);
  std::printf(
      "fan-out   %-22s %10.0f events/s delivered to %d watchers (%d writes in %.2f s, "
      "all delivered in %.2f s, %d watchers cut off)\n",
      backend.name, static_cast<double>(delivered.load()) / total_s, kWatchers, kEvents, write_s,
      total_s, closed.load());
}

void RunAll() {
  TempDir dir;
  int opened = 0;
  auto sqlite = [&](bool full) {
    return [&, full](const WatchHubOptions& watch) -> std::unique_ptr<Storage> {
      SqliteStorageOptions options;
      options.path = dir.path() + "/store" + std::to_string(opened++) + ".db";
      options.synchronous_full = full;
      options.watch = watch;
      auto store = SqliteStorage::Open(options);
      Check(store.status(), "open");
      return std::move(store).value();
    };
  };
  const Backend memory{"memory (baseline)", [](const WatchHubOptions& watch) {
                         return std::unique_ptr<Storage>(new MemoryStorage(watch));
                       }};
  const Backend sqlite_normal{"sqlite sync=NORMAL", sqlite(false)};
  const Backend sqlite_full{"sqlite sync=FULL", sqlite(true)};

  BenchWrites(memory, 20000);
  BenchWrites(sqlite_normal, 20000);
  BenchWrites(sqlite_full, 1000);
  BenchList(memory);
  BenchList(sqlite_normal);
  BenchFanOut(memory);
  BenchFanOut(sqlite_normal);
}

}  // namespace
}  // namespace sluice::apiserver

int main() {
  sluice::apiserver::RunAll();
  return 0;
}
