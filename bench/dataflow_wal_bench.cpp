// Benchmark of the dataflow write-ahead log (workers/dataflow/write_ahead_log.h): durable appends
// (AppendDurable) per second and payload MB/s, for
//   payloads  a trajectory group of 8 samples x 1000 tokens (8 * 1000 * (4 + 4 + 8 + 1) bytes,
//             136,000) and a small 200-byte record (a lease change, an ack);
//   threads   1, 4 and 16 appending concurrently (group commit shares fsyncs between them);
//   fsync     on (durable), and off (written to the kernel only) as the baseline, with the ratio.
// Also prints records per fsync and the mean fsync latency. Figures depend on the disk under the
// directory (default /tmp; pass another as argv[1], e.g. the PVC's mount). argv[2]: seconds per
// configuration (default 1).
//
// Build (from the repository root; links sluice_dataflow_core and sluice_common in CMake):
//   g++ -std=c++20 -O2 -I. bench/dataflow_wal_bench.cpp workers/dataflow/write_ahead_log.cpp
//       workers/dataflow/wal_file_io.cpp workers/dataflow/wal_replay.cpp
//       workers/dataflow/wal_snapshot_file.cpp build/common/libsluice_common.a -pthread
//       -o dataflow_wal_bench
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics/registry.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow {
namespace {

using BenchClock = std::chrono::steady_clock;

struct Figures {
  double appends_per_second = 0;
  double megabytes_per_second = 0;  // Payload bytes, 1 MB = 1e6 bytes.
  double records_per_fsync = 0;
  double mean_fsync_ms = 0;
};

double HistogramMean(const metrics::Registry& registry, const char* name) {
  for (const metrics::FamilySnapshot& family : registry.Collect()) {
    if (family.name == name && !family.children.empty()) {
      const metrics::HistogramSnapshot& h = family.children[0].histogram;
      return h.count == 0 ? 0 : h.sum / static_cast<double>(h.count);
    }
  }
  return 0;
}

// Fresh log in a new directory under `root`; `threads` threads AppendDurable `payload` for
// `seconds`.
Figures Run(const std::string& root, const std::string& payload, int threads, bool fsync,
            double seconds) {
  std::string dir = root + "/sluice_wal_bench_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  metrics::Registry registry;
  WalOptions options;
  options.dir = dir;
  options.fsync = fsync;
  Result<std::unique_ptr<WriteAheadLog>> opened = WriteAheadLog::Open(options, &registry);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    std::exit(1);
  }
  WriteAheadLog& wal = **opened;
  Result<ReplayStats> replayed = wal.Replay([](uint64_t, std::string_view) { return Status::Ok(); },
                                            [](const WalRecord&) { return Status::Ok(); });
  if (!replayed.ok()) std::exit(1);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> appends{0};
  std::vector<std::thread> workers;
  const BenchClock::time_point start = BenchClock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      uint64_t mine = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        Result<uint64_t> lsn = wal.AppendDurable(1, payload);
        if (!lsn.ok()) {
          std::fprintf(stderr, "append: %s\n", lsn.status().ToString().c_str());
          std::exit(1);
        }
        ++mine;
      }
      appends.fetch_add(mine);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (std::thread& worker : workers) worker.join();
  const double elapsed = std::chrono::duration<double>(BenchClock::now() - start).count();
  const WalStats stats = wal.Stats();
  Figures f;
  f.appends_per_second = static_cast<double>(appends.load()) / elapsed;
  f.megabytes_per_second = f.appends_per_second * static_cast<double>(payload.size()) / 1e6;
  f.records_per_fsync =
      stats.fsyncs == 0 ? 0
                        : static_cast<double>(stats.records) / static_cast<double>(stats.fsyncs);
  f.mean_fsync_ms = HistogramMean(registry, "sluice_dataflow_wal_fsync_seconds") * 1e3;
  (void)wal.Close();
  opened->reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return f;
}

int Main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/tmp";
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  std::string group(8 * 1000 * (4 + 4 + 8 + 1), '\0');
  std::mt19937_64 rng(1);
  for (char& c : group) c = static_cast<char>(rng());
  const std::string small(200, 's');
  struct Payload {
    const char* name;
    const std::string* bytes;
  };
  const Payload payloads[] = {{"group 8x1000 tokens (136000 B)", &group},
                              {"small (200 B)", &small}};

  std::printf("dataflow WAL, AppendDurable, directory %s, %.1f s per run\n", root.c_str(), seconds);
  std::printf("%-32s %7s | %12s %9s %9s %8s | %12s %9s | %9s\n", "payload", "threads", "appends/s",
              "MB/s", "rec/fsync", "fsync ms", "nosync ap/s", "MB/s", "on/off");
  for (const Payload& payload : payloads) {
    for (int threads : {1, 4, 16}) {
      const Figures on = Run(root, *payload.bytes, threads, /*fsync=*/true, seconds);
      const Figures off = Run(root, *payload.bytes, threads, /*fsync=*/false, seconds);
      std::printf("%-32s %7d | %12.0f %9.1f %9.1f %8.3f | %12.0f %9.1f | %9.3f\n", payload.name,
                  threads, on.appends_per_second, on.megabytes_per_second, on.records_per_fsync,
                  on.mean_fsync_ms, off.appends_per_second, off.megabytes_per_second,
                  on.appends_per_second / off.appends_per_second);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sluice::dataflow

int main(int argc, char** argv) { return sluice::dataflow::Main(argc, argv); }
