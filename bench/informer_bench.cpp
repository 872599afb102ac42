// Benchmark of the informer's hot path: watch events decoded from the byte stream and applied
// to the indexed store, and the memory the store holds per 10,000 cached Pods.
//
//   decode+apply  events/s: a stream of ADDED/MODIFIED events for realistic Pods (labels, owner
//                 reference, two containers, status), fed in 16 KiB chunks to WatchDecoder and
//                 each event upserted into an Indexer with the namespace and owner-uid indices
//   memory        resident-set growth per 10,000 Pods held in the store, MiB
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kube/indexer.h"
#include "kube/watch_decoder.h"

namespace sluice::kube {
namespace {

using BenchClock = std::chrono::steady_clock;

nlohmann::json MakePod(int i, int rv) {
  const std::string name = "pool-" + std::to_string(i / 100) + "-replica-" + std::to_string(i);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "team-" + std::to_string(i % 10)},
            {"uid", "5f0c7a1e-0000-4000-8000-" + std::to_string(100000000000 + i)},
            {"resourceVersion", std::to_string(rv)},
            {"labels",
             {{"app.kubernetes.io/name", "sluice-rollout"},
              {"sluice.dev/pool", "pool-" + std::to_string(i / 100)},
              {"sluice.dev/template-hash", "7d9f8c6b5"}}},
            {"ownerReferences",
             {{{"apiVersion", "sluice.dev/v1alpha1"},
               {"kind", "RolloutPool"},
               {"name", "pool-" + std::to_string(i / 100)},
               {"uid", "owner-" + std::to_string(i / 100)},
               {"controller", true}}}}}},
          {"spec",
           {{"containers",
             {{{"name", "rollout"},
               {"image", "ghcr.io/sluice/rollout:0.1.0"},
               {"args", {"--config", "/etc/sluice/worker.yaml"}},
               {"resources", {{"limits", {{"nvidia.com/gpu", "1"}, {"memory", "64Gi"}}}}}},
              {{"name", "relay"}, {"image", "ghcr.io/sluice/relay:0.1.0"}}}},
            {"nodeName", "gpu-node-" + std::to_string(i % 64)}}},
          {"status",
           {{"phase", "Running"},
            {"podIP", "10.0." + std::to_string(i / 250 % 250) + "." + std::to_string(i % 250)},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

double ResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

void BenchDecodeApply() {
  constexpr int kPods = 10000;
  constexpr int kRounds = 5;
  std::string stream;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPods; ++i) {
      const nlohmann::json event = {{"type", round == 0 ? "ADDED" : "MODIFIED"},
                                    {"object", MakePod(i, 1000 + round * kPods + i)}};
      stream += event.dump();
      stream += '\n';
    }
  }
  Indexer store;
  WatchDecoder decoder;
  size_t events = 0;
  const auto start = BenchClock::now();
  constexpr size_t kChunk = 16 << 10;
  for (size_t off = 0; off < stream.size(); off += kChunk) {
    Status s = decoder.Feed(std::string_view(stream).substr(off, kChunk), [&](WatchEvent e) {
      store.Upsert(e.object);
      ++events;
      return true;
    });
    if (!s.ok()) {
      std::printf("decode failed: %s\n", s.ToString().c_str());
      return;
    }
  }
  const double secs = std::chrono::duration<double>(BenchClock::now() - start).count();
  std::printf("informer decode+apply: %zu events (%.1f MB) in %.3f s: %.0f events/s, %.1f MB/s\n",
              events, stream.size() / 1e6, secs, events / secs, stream.size() / 1e6 / secs);
  std::printf("  store: %zu objects, %zu in the owner index of owner-7\n", store.size(),
              store.ByIndex(kOwnerUidIndex, "owner-7")->size());
}

void BenchMemory() {
  constexpr int kPods = 10000;
  std::vector<std::string> lines;
  lines.reserve(kPods);
  size_t bytes = 0;
  for (int i = 0; i < kPods; ++i) {
    lines.push_back(MakePod(i, i + 1).dump());
    bytes += lines.back().size();
  }
  const double before = ResidentMiB();
  auto store = std::make_unique<Indexer>();
  for (const std::string& line : lines) {
    store->Upsert(std::make_shared<const nlohmann::json>(nlohmann::json::parse(line)));
  }
  const double after = ResidentMiB();
  std::printf(
      "informer memory: %.1f MiB resident per 10,000 cached Pods (%.1f KiB per Pod; "
      "%.1f MiB of JSON text)\n",
      after - before, (after - before) * 1024.0 / kPods, bytes / (1024.0 * 1024.0));
}

}  // namespace
}  // namespace sluice::kube

int main() {
  sluice::kube::BenchMemory();  // First, so the heap is not already grown by the other run.
  sluice::kube::BenchDecodeApply();
  return 0;
}
