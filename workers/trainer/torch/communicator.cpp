// c10d's Gloo process group is only declared with USE_C10D_GLOO (Debian's libtorch is built with
// it; libgloo-dev provides the headers it includes).
#define USE_C10D_GLOO 1
#include "workers/trainer/torch/communicator.h"

#include <cstring>
#include <exception>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>

namespace sluice::trainer {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Status AllReduceSum(std::vector<torch::Tensor>&) override { return Status::Ok(); }
  Status Broadcast(std::string&, int) override { return Status::Ok(); }
  Status Barrier() override { return Status::Ok(); }
};

// Gloo reports a lost peer or a timeout by throwing; the message names the transport error.
template <typename F>
Status Collective(const char* what, F&& f) {
  try {
    f();
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Unavailable(std::string(what) +
                               " failed (a rank died or timed out): " + e.what());
  }
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::Store> store,
                   c10::intrusive_ptr<c10d::ProcessGroupGloo> group, int rank, int world)
      : store_(std::move(store)), group_(std::move(group)), rank_(rank), world_(world) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  Status AllReduceSum(std::vector<torch::Tensor>& tensors) override {
    return Collective("all-reduce", [&] {
      for (torch::Tensor& t : tensors) {
        std::vector<at::Tensor> one{t};
        group_->allreduce(one)->wait();
      }
    });
  }

  Status Broadcast(std::string& bytes, int root) override {
    return Collective("broadcast", [&] {
      std::vector<at::Tensor> size{torch::tensor({static_cast<int64_t>(bytes.size())})};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      group_->broadcast(size, opts)->wait();
      const int64_t n = size[0].item<int64_t>();
      std::vector<at::Tensor> data{torch::empty({n}, torch::kUInt8)};
      if (rank_ == root && n > 0) std::memcpy(data[0].data_ptr(), bytes.data(), n);
      group_->broadcast(data, opts)->wait();
      if (rank_ != root) {
        bytes.assign(reinterpret_cast<const char*>(data[0].data_ptr()), static_cast<size_t>(n));
      }
    });
  }

  Status Barrier() override {
    // An all-reduce of one element: Gloo's barrier does not honour the timeout everywhere.
    std::vector<torch::Tensor> one{torch::zeros({1})};
    return AllReduceSum(one);
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  int rank_;
  int world_;
};

}  // namespace

std::unique_ptr<Communicator> MakeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

Result<std::unique_ptr<Communicator>> ConnectGloo(const GlooOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return Status::InvalidArgument("rank " + std::to_string(options.rank) +
                                       " is not in [0, world size " +
                                       std::to_string(options.world_size) + ")",
                                   "rank");
  }
  if (options.world_size == 1) return MakeLocalCommunicator();
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(options.master_port);
    so.isServer = options.rank == 0;
    so.numWorkers = options.world_size;
    so.waitWorkers = false;
    so.timeout = options.timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, so);
    auto gloo = c10d::ProcessGroupGloo::Options::create();
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.bind_address));
    gloo->timeout = options.timeout;
    auto group =
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank, options.world_size, gloo);
    std::unique_ptr<Communicator> comm = std::make_unique<GlooCommunicator>(
        store, std::move(group), options.rank, options.world_size);
    return comm;
  } catch (const std::exception& e) {
    return Status::Unavailable("rendezvous at " + options.master_addr + ":" +
                               std::to_string(options.master_port) + " failed: " + e.what());
  }
}

Status AllReduceInBuckets(Communicator& comm, const std::vector<torch::Tensor>& tensors,
                          int64_t bucket_bytes) {
  if (comm.world_size() == 1) return Status::Ok();
  std::vector<torch::Tensor> bucket;
  int64_t bytes = 0;
  auto flush = [&]() -> Status {
    if (bucket.empty()) return Status::Ok();
    std::vector<torch::Tensor> flat_views;
    flat_views.reserve(bucket.size());
    for (const torch::Tensor& t : bucket) flat_views.push_back(t.reshape({-1}));
    std::vector<torch::Tensor> flat{torch::cat(flat_views)};
    SLUICE_RETURN_IF_ERROR(comm.AllReduceSum(flat));
    int64_t offset = 0;
    for (torch::Tensor& t : bucket) {
      const int64_t n = t.numel();
      t.copy_(flat[0].narrow(0, offset, n).view_as(t));
      offset += n;
    }
    bucket.clear();
    bytes = 0;
    return Status::Ok();
  };
  for (const torch::Tensor& t : tensors) {
    if (!t.defined()) continue;
    bucket.push_back(t);
    bytes += t.numel() * static_cast<int64_t>(t.element_size());
    if (bytes >= bucket_bytes) SLUICE_RETURN_IF_ERROR(flush());
  }
  return flush();
}

}  // namespace sluice::trainer
