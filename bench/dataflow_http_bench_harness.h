// The fixture of the dataflow HTTP benchmark (dataflow_http_bench.cpp): the workload (a built-in
// arithmetic dataset of 10,000 rows x 100 epochs, a service config that never throttles, one
// template group of 8 samples x 1,000 tokens), the leased-task handles a rollout worker keeps, the
// run's scratch directories, and Harness: an in-process DataflowService, and optionally its HTTP
// server, on a write-ahead log in a given directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "common/http/server.h"
#include "common/metrics/registry.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/client/sample.h"
#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_service.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow::http_bench {

inline constexpr char kPolicy[] = "actor";
inline constexpr int kSamplesPerGroup = 8;
inline constexpr int kTokensPerSample = 1000;
inline constexpr int kPromptTokens = 200;
inline constexpr int64_t kBatchGroups = 256;
inline constexpr size_t kServerWorkers = 32;

Dataset MakeDataset();

DataflowConfig MakeConfig();

// Eight completions of one prompt: 200 prompt tokens (mask 0, version -1, log-prob 0), then 800
// generated tokens (mask 1, version 0, log-prob < 0); rewards alternate 0 and 1.
std::vector<Sample> TemplateSamples();

struct Leased {
  std::string task_id;
  std::string lease_id;
  std::string prompt_id;
  uint32_t attempt = 0;
};

std::vector<Leased> FromReply(const LeaseReply& reply);

// Points `group` at the task and encodes it into *body (cleared first).
void EncodeFor(const Leased& task, TrajectoryGroup& group, std::string* body);

// A fresh subdirectory of the run's temporary directory.
std::string NewDir(const std::string& name);

void RemoveDir(const std::string& dir);

// The service (and, when `serve`, its HTTP server) on a log in `wal_dir`.
class Harness {
 public:
  Harness(const Dataset* dataset, const std::string& wal_dir, bool fsync, bool serve);
  ~Harness();

  // Recover() and how long it took (wall, on this thread).
  double Recover();

  std::unique_ptr<http::Client> NewClient() const;

  DataflowService& service() { return *service_; }
  DataflowCore& core() { return *service_->core(); }
  WriteAheadLog& wal() { return *service_->wal(); }

 private:
  std::unique_ptr<metrics::Registry> registry_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<DataflowService> service_;
};

}  // namespace sluice::dataflow::http_bench
