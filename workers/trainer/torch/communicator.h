// Communicator: the collectives the data-parallel trainer needs, over libtorch's c10d.
//
// World size 1 is a local communicator (every collective is a no-op). Larger worlds use c10d's
// Gloo process group on CPU: rank 0 hosts a TCPStore at master_addr:master_port where the ranks
// rendezvous (as torch.distributed does with MASTER_ADDR / MASTER_PORT), then Gloo connects every
// pair over TCP from the rank's own address. A collective that cannot complete within `timeout`
// (a rank died or hangs) fails with Unavailable naming the operation and the peer error, so the
// surviving ranks exit with an error instead of hanging; the operator then restarts the gang.
//
// Thread safety: collectives are called from one thread (the training loop), in the same order on
// every rank.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::trainer {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Sums each tensor across ranks, in place (contiguous CPU tensors, float or integer).
  virtual Status AllReduceSum(std::vector<torch::Tensor>& tensors) = 0;
  // Copies `bytes` of rank `root` to every rank (others' strings are replaced).
  virtual Status Broadcast(std::string& bytes, int root) = 0;
  virtual Status Barrier() = 0;
};

// World size 1.
std::unique_ptr<Communicator> MakeLocalCommunicator();

struct GlooOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";  // An IP address (resolve names first).
  int master_port = 29500;
  std::string bind_address = "127.0.0.1";  // This rank's own address, for Gloo's connections.
  // Rendezvous (waiting for every rank) and each collective.
  std::chrono::milliseconds timeout{60000};
};

// Rendezvous and connect. Unavailable when the store or a peer cannot be reached in time.
Result<std::unique_ptr<Communicator>> ConnectGloo(const GlooOptions& options);

// Sums `tensors` (gradients, all float32) across ranks in buckets of about `bucket_bytes`: each
// bucket is flattened into one buffer, all-reduced, and copied back, so a large model makes a few
// large messages instead of one per tensor. Undefined tensors are skipped.
Status AllReduceInBuckets(Communicator& comm, const std::vector<torch::Tensor>& tensors,
                          int64_t bucket_bytes);

}  // namespace sluice::trainer
