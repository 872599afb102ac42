// Benchmark of the CUDA decode kernels (workers/kernels): time per launch and achieved memory
// bandwidth, each kernel against a device-to-device copy measured in the same run.
//
// Baseline: cudaMemcpyAsync of a 2 GiB buffer to another, device to device, timed with CUDA
// events; best and median of several repetitions. Copy GB/s counts bytes read plus bytes
// written (2 x 2 GiB per copy), as CUDA's bandwidthTest does, and so does every kernel figure
// below; GB is 1e9 bytes. The "nominal" peak printed beside it comes from the memory clock and
// bus width the driver reports.
//
// Kernels, one table line per case:
//   paged_attn  PagedAttention decode, block_size 16, head_dim 128, every sequence of the batch
//               at the same context length; Qwen3-0.6B/1.7B heads (16 query / 8 kv) in bfloat16
//               and float16, Qwen3-8B heads (32 / 8) in bfloat16; batch {1, 64, 256} x context
//               {1024, 4096}. Block tables are a random permutation of the physical blocks of a
//               4 GiB K+V pool, so reads are scattered. Bytes = the K and V cache bytes the batch
//               attends to (counted once, although each kv head serves several query heads) + q
//               + out; the split-K workspace (under 1% of that) and the block tables are not
//               counted. Consecutive launches cycle through up to 64 disjoint sets of blocks
//               ("sets"), so even batch 1 reads from HBM rather than from the 50 MB L2.
//   write_kv    WriteKvCache of T new tokens (8 kv heads x 128, bfloat16) to random slots of the
//               pool. Bytes = k and v read + written + the slot mapping.
//   rms_norm    RmsNorm over [T, 4096] bfloat16 (Qwen3-8B hidden); "+res" is the fused residual
//               form. Bytes = x read + out written (+ residual read and written) + weight.
//   rotary      ApplyRotary in place on q [T, 32 heads, 128] bfloat16. Bytes = q read + written
//               + positions + inv_freq.
//   sample      Sample over a 151936-token vocabulary (Qwen3), float32 logits, temperature 1,
//               top-p 0.9, top-k off. Its traffic (a full segmented radix sort per row) has no
//               simple byte count, so no GB/s; the note gives microseconds per row.
//
// Reading the table: us_med / us_min are the median and fastest single launch (an event pair
// around each launch; PagedAttention's two kernels together). us_b2b is the time of all timed
// launches back to back divided by their number, which adds launch gaps: when it is well above
// us_med the kernel is shorter than the host's launch cost. GB/s uses us_med; %copy is that
// against the best copy GB/s. The small cases (batch 1, write_kv, rms_norm, rotary) move a few
// MB, are latency bound and largely L2 resident, so their GB/s is indicative only; the batch 64
// and 256 attention lines are the bandwidth figures that matter.
//
// Repetitions: 3 warm-up launches, then as many timed launches as fit in about 150 ms (at
// least 5, at most 200). Device memory stays under 6 GiB. Every CUDA call and kernel Status is
// checked: any error is printed and the program exits 1 before printing further figures.
// Without a visible GPU it prints "no CUDA device; nothing measured" and exits 0 (but a GPU
// whose driver cannot run this CUDA runtime is an error, exit 1, not "no device").
// No flags; CUDA_VISIBLE_DEVICES picks the GPU (the first visible one is used).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"
#include "workers/kernels/device.h"
#include "workers/kernels/dtype.h"
#include "workers/kernels/kv_cache_write.h"
#include "workers/kernels/paged_attention.h"
#include "workers/kernels/rms_norm.h"
#include "workers/kernels/rotary.h"
#include "workers/kernels/sampling.h"

namespace sluice::kernels {
namespace {

constexpr int kWarmup = 3;
constexpr int kMinReps = 5;
constexpr int kMaxReps = 200;
constexpr double kBudgetMs = 150.0;
constexpr size_t kCopyBytes = size_t{2} << 30;
constexpr int kCopyReps = 10;
constexpr int kBlockSize = 16;
constexpr int kMaxRotationSets = 64;
constexpr int kVocab = 151936;

[[noreturn]] void Fail(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  std::exit(1);
}

void CheckCuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    Fail(std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
  }
}

void CheckStatus(const Status& status, const std::string& what) {
  if (!status.ok()) Fail(what + ": " + status.ToString());
}

// cudaMalloc'd memory, freed at scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes, const char* what) : bytes_(bytes) {
    CheckCuda(cudaMalloc(&ptr_, bytes), what);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr_); }

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Fills bytes [filled, total) of dst by copying its first `filled` bytes over and over,
// doubling each time (a few device-to-device copies instead of gigabytes from the host).
void Replicate(void* dst, size_t filled, size_t total) {
  char* base = static_cast<char*>(dst);
  while (filled < total) {
    const size_t n = std::min(filled, total - filled);
    CheckCuda(cudaMemcpy(base + filled, base, n, cudaMemcpyDeviceToDevice), "replicate fill");
    filled += n;
  }
  // Device-to-device cudaMemcpy returns before the copy is done.
  CheckCuda(cudaDeviceSynchronize(), "replicate fill");
}

template <typename T>
void Upload(void* dst, const std::vector<T>& host) {
  CheckCuda(cudaMemcpy(dst, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
            "cudaMemcpy to device");
  // From pageable memory the DMA may still be in flight when cudaMemcpy returns.
  CheckCuda(cudaDeviceSynchronize(), "cudaMemcpy to device");
}

// Random 16-bit values of the form (sign, 0b011, 12 random bits): finite and of modest size
// both as float16 ([0.125, 2) in magnitude) and as bfloat16 (below 1), so one fill serves both.
void FillHalfPattern(const DeviceBuffer& buffer, uint32_t seed) {
  const size_t words = std::min<size_t>(buffer.bytes() / 2, size_t{1} << 19);
  std::mt19937 rng(seed);
  std::vector<uint16_t> host(words);
  for (uint16_t& w : host) w = static_cast<uint16_t>((rng() & 0x8FFFu) | 0x3000u);
  Upload(buffer.get(), host);
  Replicate(buffer.get(), words * 2, buffer.bytes() / 2 * 2);
}

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double b2b_us = 0;
  int reps = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Event pairs shared by every measurement (created once).
std::vector<cudaEvent_t>& Events() {
  static std::vector<cudaEvent_t> events;
  return events;
}

void CreateEvents() {
  Events().resize(2 * kMaxReps + 2);
  for (cudaEvent_t& e : Events()) CheckCuda(cudaEventCreate(&e), "cudaEventCreate");
}

float ElapsedMs(cudaEvent_t start, cudaEvent_t stop) {
  float ms = 0;
  CheckCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  return ms;
}

// Times launch(i) (a callable returning the kernel's Status; i counts every launch, warm-ups
// included, for callers that rotate inputs): warm-up, then an event pair around each launch.
template <typename Launch>
Timing TimeLaunches(cudaStream_t stream, const Launch& launch, const std::string& what) {
  std::vector<cudaEvent_t>& ev = Events();
  // The first launch pays for lazy module loading; the others estimate the launch time.
  CheckStatus(launch(0), what);
  CheckCuda(cudaEventRecord(ev[0], stream), "cudaEventRecord");
  for (int i = 1; i < kWarmup; ++i) CheckStatus(launch(i), what);
  CheckCuda(cudaEventRecord(ev[1], stream), "cudaEventRecord");
  CheckCuda(cudaEventSynchronize(ev[1]), (what + ": warm-up").c_str());
  const double warm_ms =
      std::max(static_cast<double>(ElapsedMs(ev[0], ev[1])) / (kWarmup - 1), 1e-4);

  Timing t;
  t.reps = std::clamp(static_cast<int>(kBudgetMs / warm_ms), kMinReps, kMaxReps);
  for (int i = 0; i < t.reps; ++i) {
    CheckCuda(cudaEventRecord(ev[static_cast<size_t>(2 + 2 * i)], stream), "cudaEventRecord");
    CheckStatus(launch(kWarmup + i), what);
    CheckCuda(cudaEventRecord(ev[static_cast<size_t>(3 + 2 * i)], stream), "cudaEventRecord");
  }
  const cudaEvent_t last = ev[static_cast<size_t>(1 + 2 * t.reps)];
  CheckCuda(cudaEventSynchronize(last), what.c_str());
  CheckCuda(cudaGetLastError(), what.c_str());

  std::vector<double> us;
  for (int i = 0; i < t.reps; ++i) {
    us.push_back(1e3 *
                 ElapsedMs(ev[static_cast<size_t>(2 + 2 * i)], ev[static_cast<size_t>(3 + 2 * i)]));
  }
  t.median_us = Median(us);
  t.min_us = *std::min_element(us.begin(), us.end());
  t.b2b_us = 1e3 * ElapsedMs(ev[2], last) / t.reps;
  return t;
}

double GBps(double bytes, double us) { return us > 0 ? bytes / (us * 1e-6) / 1e9 : 0; }

double g_copy_best_gbps = 0;

void PrintHeader() {
  std::printf("%-10s %-34s %-8s %9s %9s %9s %5s %10s %8s %6s  %s\n", "kernel", "case", "dtype",
              "us_med", "us_min", "us_b2b", "reps", "MB", "GB/s", "%copy", "note");
}

// bytes <= 0: no GB/s.
void PrintRow(const char* kernel, const std::string& label, DType dtype, const Timing& t,
              double bytes, const std::string& note) {
  if (bytes > 0) {
    const double gbps = GBps(bytes, t.median_us);
    std::printf("%-10s %-34s %-8s %9.2f %9.2f %9.2f %5d %10.2f %8.1f %5.1f%%  %s\n", kernel,
                label.c_str(), std::string(DTypeName(dtype)).c_str(), t.median_us, t.min_us,
                t.b2b_us, t.reps, bytes / 1e6, gbps, 100.0 * gbps / g_copy_best_gbps, note.c_str());
  } else {
    std::printf("%-10s %-34s %-8s %9.2f %9.2f %9.2f %5d %10s %8s %6s  %s\n", kernel, label.c_str(),
                std::string(DTypeName(dtype)).c_str(), t.median_us, t.min_us, t.b2b_us, t.reps, "-",
                "-", "-", note.c_str());
  }
  std::fflush(stdout);
}

__attribute__((format(printf, 1, 2))) std::string Format(const char* fmt, ...) {
  char buf[160];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

int DeviceAttribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  CheckCuda(cudaDeviceGetAttribute(&value, attr, device), "cudaDeviceGetAttribute");
  return value;
}

void PrintDevice() {
  Result<std::vector<DeviceInfo>> devices = ListDevices();
  CheckStatus(devices.status(), "ListDevices");
  if (devices->empty()) Fail("ListDevices found no device");
  const DeviceInfo& d = devices->front();
  int runtime = 0, driver = 0;
  CheckCuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  CheckCuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  const int mem_khz = DeviceAttribute(cudaDevAttrMemoryClockRate, 0);
  const int bus_bits = DeviceAttribute(cudaDevAttrGlobalMemoryBusWidth, 0);
  const int sm_khz = DeviceAttribute(cudaDevAttrClockRate, 0);
  const int l2_bytes = DeviceAttribute(cudaDevAttrL2CacheSize, 0);
  size_t free_bytes = 0, total_bytes = 0;
  CheckCuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  std::printf(
      "device 0: %s, sm_%d%d, %d SMs at up to %.0f MHz, %.1f GiB (%.1f GiB free), L2 %.0f MB\n",
      d.name.c_str(), d.compute_major, d.compute_minor, d.multiprocessors, sm_khz / 1e3,
      static_cast<double>(total_bytes) / (1u << 30), static_cast<double>(free_bytes) / (1u << 30),
      l2_bytes / 1e6);
  std::printf("memory: %d-bit bus at %.0f MHz: nominal %.0f GB/s; CUDA runtime %d, driver %d\n",
              bus_bits, mem_khz / 1e3, 2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9, runtime, driver);
}

// The roofline: device-to-device cudaMemcpyAsync of 2 GiB.
void MeasureCopy(cudaStream_t stream) {
  DeviceBuffer src(kCopyBytes, "cudaMalloc copy source");
  DeviceBuffer dst(kCopyBytes, "cudaMalloc copy destination");
  CheckCuda(cudaMemset(src.get(), 0x3C, kCopyBytes), "cudaMemset");
  CheckCuda(cudaMemset(dst.get(), 0, kCopyBytes), "cudaMemset");
  CheckCuda(cudaDeviceSynchronize(), "cudaMemset");
  std::vector<cudaEvent_t>& ev = Events();
  for (int i = 0; i < kWarmup; ++i) {
    CheckCuda(cudaMemcpyAsync(dst.get(), src.get(), kCopyBytes, cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync device to device");
  }
  for (int i = 0; i < kCopyReps; ++i) {
    CheckCuda(cudaEventRecord(ev[static_cast<size_t>(2 * i)], stream), "cudaEventRecord");
    CheckCuda(cudaMemcpyAsync(dst.get(), src.get(), kCopyBytes, cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync device to device");
    CheckCuda(cudaEventRecord(ev[static_cast<size_t>(2 * i + 1)], stream), "cudaEventRecord");
  }
  CheckCuda(cudaStreamSynchronize(stream), "copy baseline");
  std::vector<double> gbps;
  for (int i = 0; i < kCopyReps; ++i) {
    const double us =
        1e3 * ElapsedMs(ev[static_cast<size_t>(2 * i)], ev[static_cast<size_t>(2 * i + 1)]);
    gbps.push_back(GBps(2.0 * static_cast<double>(kCopyBytes), us));
  }
  g_copy_best_gbps = *std::max_element(gbps.begin(), gbps.end());
  std::printf(
      "baseline: device-to-device copy of 2 GiB (read + write counted), %d reps: "
      "best %.1f GB/s, median %.1f GB/s\n\n",
      kCopyReps, g_copy_best_gbps, Median(gbps));
}

struct AttentionShape {
  const char* model;
  int num_heads;
  int num_kv_heads;
  int head_dim;
};

constexpr AttentionShape kQwen3Small = {"qwen3-0.6b/1.7b", 16, 8, 128};
constexpr AttentionShape kQwen3_8B = {"qwen3-8b", 32, 8, 128};
constexpr int kBatches[] = {1, 64, 256};
constexpr int kContexts[] = {1024, 4096};
constexpr int kMaxBatch = 256;
constexpr int kMaxContext = 4096;

// The K and V pools every attention case reads (and write_kv writes), sized for the largest
// case: 256 x 4096 tokens x 8 kv heads x 128 x 2 bytes = 2 GiB each.
struct KvPool {
  explicit KvPool(size_t bytes) : k(bytes, "cudaMalloc k cache"), v(bytes, "cudaMalloc v cache") {}
  DeviceBuffer k;
  DeviceBuffer v;
};

void BenchAttention(cudaStream_t stream, const KvPool& pool, const AttentionShape& shape,
                    DType dtype, std::mt19937& rng) {
  const size_t dsize = DTypeSize(dtype);
  const size_t token_bytes =
      static_cast<size_t>(shape.num_kv_heads) * static_cast<size_t>(shape.head_dim) * dsize;
  const int pool_blocks = static_cast<int>(pool.k.bytes() / (token_bytes * kBlockSize));
  const size_t qo_elems = static_cast<size_t>(kMaxBatch) * static_cast<size_t>(shape.num_heads) *
                          static_cast<size_t>(shape.head_dim);
  DeviceBuffer q(qo_elems * dsize, "cudaMalloc q");
  DeviceBuffer out(qo_elems * dsize, "cudaMalloc out");
  FillHalfPattern(q, 7);
  DeviceBuffer tables(static_cast<size_t>(pool_blocks) * sizeof(int32_t), "cudaMalloc tables");
  DeviceBuffer lens(kMaxBatch * sizeof(int32_t), "cudaMalloc context_lens");
  const size_t workspace_bytes = PagedAttentionWorkspaceBytes(
      kMaxBatch, shape.num_heads, shape.head_dim, kBlockSize, kMaxContext / kBlockSize);
  DeviceBuffer workspace(workspace_bytes, "cudaMalloc workspace");

  std::vector<int32_t> physical(static_cast<size_t>(pool_blocks));
  std::iota(physical.begin(), physical.end(), 0);
  for (int batch : kBatches) {
    for (int context : kContexts) {
      const int blocks_per_seq = context / kBlockSize;
      const int set_blocks = batch * blocks_per_seq;
      if (set_blocks > pool_blocks) Fail("attention case larger than the KV pool");
      const int sets = std::min(kMaxRotationSets, pool_blocks / set_blocks);
      // Each set takes the next set_blocks entries of a fresh random permutation: sets are
      // disjoint and every sequence's blocks are scattered over the pool.
      std::shuffle(physical.begin(), physical.end(), rng);
      Upload(tables.get(), std::vector<int32_t>(
                               physical.begin(),
                               physical.begin() + static_cast<std::ptrdiff_t>(sets) * set_blocks));
      Upload(lens.get(), std::vector<int32_t>(static_cast<size_t>(batch), context));

      PagedAttentionArgs args;
      args.dtype = dtype;
      args.q = q.get();
      args.k_cache = pool.k.get();
      args.v_cache = pool.v.get();
      args.context_lens = lens.as<int32_t>();
      args.out = out.get();
      args.batch = batch;
      args.num_heads = shape.num_heads;
      args.num_kv_heads = shape.num_kv_heads;
      args.head_dim = shape.head_dim;
      args.block_size = kBlockSize;
      args.max_blocks_per_seq = blocks_per_seq;
      args.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
      args.workspace = workspace.get();
      args.workspace_bytes = workspace.bytes();
      const int32_t* table_base = tables.as<int32_t>();

      const std::string label =
          std::string(shape.model) + " " +
          Format("q%d/kv%d b%d ctx%d", shape.num_heads, shape.num_kv_heads, batch, context);
      const Timing t = TimeLaunches(
          stream,
          [&](int i) {
            PagedAttentionArgs a = args;
            a.block_tables = table_base + static_cast<std::ptrdiff_t>(i % sets) * set_blocks;
            return PagedAttention(a, stream);
          },
          "PagedAttention " + label);
      const double kv_bytes =
          static_cast<double>(batch) * context * static_cast<double>(token_bytes) * 2;
      const double qo_bytes =
          2.0 * batch * shape.num_heads * shape.head_dim * static_cast<double>(dsize);
      PrintRow("paged_attn", label, dtype, t, kv_bytes + qo_bytes, "sets " + std::to_string(sets));
    }
  }
}

void BenchWriteKv(cudaStream_t stream, const KvPool& pool, std::mt19937& rng) {
  constexpr DType dtype = DType::kBFloat16;
  constexpr int kv_heads = 8, head_dim = 128;
  const size_t row_bytes = size_t{kv_heads} * head_dim * DTypeSize(dtype);
  const size_t pool_slots = pool.k.bytes() / row_bytes;
  DeviceBuffer k(kMaxBatch * row_bytes, "cudaMalloc k");
  DeviceBuffer v(kMaxBatch * row_bytes, "cudaMalloc v");
  FillHalfPattern(k, 11);
  FillHalfPattern(v, 12);
  DeviceBuffer slots(kMaxBatch * sizeof(int64_t), "cudaMalloc slot_mapping");
  for (int tokens : {64, 256}) {
    // Distinct random slots: random blocks, offsets spread over the block.
    std::uniform_int_distribution<int64_t> pick(0,
                                                static_cast<int64_t>(pool_slots / kBlockSize) - 1);
    std::vector<int64_t> host;
    std::vector<bool> used(pool_slots / kBlockSize, false);
    while (static_cast<int>(host.size()) < tokens) {
      const int64_t block = pick(rng);
      if (used[static_cast<size_t>(block)]) continue;
      used[static_cast<size_t>(block)] = true;
      host.push_back(block * kBlockSize + static_cast<int64_t>(host.size() % kBlockSize));
    }
    Upload(slots.get(), host);
    WriteKvCacheArgs args;
    args.dtype = dtype;
    args.k = k.get();
    args.v = v.get();
    args.slot_mapping = slots.as<int64_t>();
    args.k_cache = pool.k.get();
    args.v_cache = pool.v.get();
    args.num_tokens = tokens;
    args.num_kv_heads = kv_heads;
    args.head_dim = head_dim;
    const std::string label = Format("kv%d d%d t%d", kv_heads, head_dim, tokens);
    const Timing t = TimeLaunches(
        stream, [&](int) { return WriteKvCache(args, stream); }, "WriteKvCache " + label);
    const double bytes = 4.0 * tokens * static_cast<double>(row_bytes) + 8.0 * tokens;
    PrintRow("write_kv", label, dtype, t, bytes, "");
  }
}

void BenchRmsNorm(cudaStream_t stream) {
  constexpr DType dtype = DType::kBFloat16;
  constexpr int hidden = 4096;
  const size_t dsize = DTypeSize(dtype);
  const size_t elems = size_t{kMaxBatch} * hidden;
  DeviceBuffer x(elems * dsize, "cudaMalloc x");
  DeviceBuffer residual(elems * dsize, "cudaMalloc residual");
  DeviceBuffer out(elems * dsize, "cudaMalloc out");
  DeviceBuffer weight(hidden * dsize, "cudaMalloc weight");
  FillHalfPattern(x, 21);
  FillHalfPattern(residual, 22);
  FillHalfPattern(weight, 23);
  struct Case {
    int tokens;
    bool fused;
  };
  for (const Case c : {Case{64, false}, Case{256, false}, Case{256, true}}) {
    RmsNormArgs args;
    args.dtype = dtype;
    args.x = x.get();
    args.residual = c.fused ? residual.get() : nullptr;
    args.weight = weight.get();
    args.out = out.get();
    args.num_tokens = c.tokens;
    args.hidden = hidden;
    const std::string label = Format("t%d h%d", c.tokens, hidden) + (c.fused ? " +res" : "");
    // The fused form adds x to the residual every launch; with this pattern's small values
    // the residual stays finite over the few hundred launches of a measurement.
    const Timing t = TimeLaunches(
        stream, [&](int) { return RmsNorm(args, stream); }, "RmsNorm " + label);
    const double row = static_cast<double>(hidden) * static_cast<double>(dsize);
    const double bytes = c.tokens * row * (c.fused ? 4.0 : 2.0) + row;
    PrintRow("rms_norm", label, dtype, t, bytes, "");
  }
}

void BenchRotary(cudaStream_t stream) {
  constexpr DType dtype = DType::kBFloat16;
  constexpr int heads = 32, head_dim = 128;
  const size_t dsize = DTypeSize(dtype);
  DeviceBuffer x(size_t{kMaxBatch} * heads * head_dim * dsize, "cudaMalloc x");
  FillHalfPattern(x, 31);
  std::vector<int64_t> positions(kMaxBatch);
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = 1000 + static_cast<int64_t>(i) * 7;
  std::vector<float> inv_freq(head_dim / 2);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    inv_freq[i] = std::pow(1e6f, -2.0f * static_cast<float>(i) / head_dim);  // Qwen3 base 1e6.
  }
  DeviceBuffer d_positions(positions.size() * sizeof(int64_t), "cudaMalloc positions");
  DeviceBuffer d_inv_freq(inv_freq.size() * sizeof(float), "cudaMalloc inv_freq");
  Upload(d_positions.get(), positions);
  Upload(d_inv_freq.get(), inv_freq);
  for (int tokens : {64, 256}) {
    RotaryArgs args;
    args.dtype = dtype;
    args.x = x.get();
    args.positions = d_positions.as<int64_t>();
    args.inv_freq = d_inv_freq.as<float>();
    args.num_tokens = tokens;
    args.num_heads = heads;
    args.head_dim = head_dim;
    const std::string label = Format("t%d q%d d%d", tokens, heads, head_dim);
    const Timing t = TimeLaunches(
        stream, [&](int) { return ApplyRotary(args, stream); }, "ApplyRotary " + label);
    const double bytes = 2.0 * tokens * heads * head_dim * static_cast<double>(dsize) +
                         8.0 * tokens + 4.0 * static_cast<double>(inv_freq.size());
    PrintRow("rotary", label, dtype, t, bytes, "");
  }
}

void BenchSample(cudaStream_t stream) {
  const size_t row_bytes = size_t{kVocab} * sizeof(float);
  DeviceBuffer logits(kMaxBatch * row_bytes, "cudaMalloc logits");
  {
    // Eight distinct rows of normal(0, 3) logits, replicated to every row.
    std::mt19937 rng(41);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> host(8 * size_t{kVocab});
    for (float& x : host) x = normal(rng);
    Upload(logits.get(), host);
    Replicate(logits.get(), host.size() * sizeof(float), logits.bytes());
  }
  DeviceBuffer temperatures(kMaxBatch * sizeof(float), "cudaMalloc temperatures");
  DeviceBuffer top_k(kMaxBatch * sizeof(int32_t), "cudaMalloc top_k");
  DeviceBuffer top_p(kMaxBatch * sizeof(float), "cudaMalloc top_p");
  DeviceBuffer seeds(kMaxBatch * sizeof(uint64_t), "cudaMalloc seeds");
  DeviceBuffer offsets(kMaxBatch * sizeof(uint64_t), "cudaMalloc offsets");
  DeviceBuffer tokens(kMaxBatch * sizeof(int32_t), "cudaMalloc tokens");
  DeviceBuffer logprobs(kMaxBatch * sizeof(float), "cudaMalloc logprobs");
  Upload(temperatures.get(), std::vector<float>(kMaxBatch, 1.0f));
  Upload(top_k.get(), std::vector<int32_t>(kMaxBatch, 0));
  Upload(top_p.get(), std::vector<float>(kMaxBatch, 0.9f));
  std::vector<uint64_t> host_seeds(kMaxBatch);
  std::iota(host_seeds.begin(), host_seeds.end(), uint64_t{1234});
  Upload(seeds.get(), host_seeds);
  Upload(offsets.get(), std::vector<uint64_t>(kMaxBatch, 0));

  for (int batch : {64, 256}) {
    const Result<size_t> workspace_bytes = SampleWorkspaceBytes(batch, kVocab);
    CheckStatus(workspace_bytes.status(), "SampleWorkspaceBytes");
    DeviceBuffer workspace(*workspace_bytes, "cudaMalloc sample workspace");
    SampleArgs args;
    args.logits = logits.as<float>();
    args.temperatures = temperatures.as<float>();
    args.top_k = top_k.as<int32_t>();
    args.top_p = top_p.as<float>();
    args.seeds = seeds.as<uint64_t>();
    args.offsets = offsets.as<uint64_t>();
    args.tokens = tokens.as<int32_t>();
    args.logprobs = logprobs.as<float>();
    args.batch = batch;
    args.vocab = kVocab;
    args.workspace = workspace.get();
    args.workspace_bytes = workspace.bytes();
    const std::string label = Format("b%d vocab%d top_p0.9 temp1", batch, kVocab);
    const Timing t = TimeLaunches(
        stream, [&](int) { return Sample(args, stream); }, "Sample " + label);
    // A sanity check that the sampler produced tokens in range (values are not otherwise
    // checked here; the unit tests do that).
    std::vector<int32_t> picked(static_cast<size_t>(batch));
    CheckCuda(cudaMemcpy(picked.data(), tokens.get(), picked.size() * sizeof(int32_t),
                         cudaMemcpyDeviceToHost),
              "cudaMemcpy tokens");
    for (int32_t token : picked) {
      if (token < 0 || token >= kVocab) Fail("Sample returned token " + std::to_string(token));
    }
    char note[96];
    std::snprintf(note, sizeof note, "%.2f us/row, logits %.0f MB, workspace %.0f MB",
                  t.median_us / batch, batch * static_cast<double>(row_bytes) / 1e6,
                  static_cast<double>(workspace.bytes()) / 1e6);
    PrintRow("sample", label, DType::kFloat32, t, 0, note);
  }
}

int Run() {
  // VisibleDeviceCount() hides why there is no device; ask the runtime directly, so that a GPU
  // whose driver is too old for this runtime fails loudly instead of reading as "no device".
  int count = 0;
  const cudaError_t count_err = cudaGetDeviceCount(&count);
  if (count_err != cudaSuccess || count == 0) {
    if (count_err != cudaSuccess && count_err != cudaErrorNoDevice &&
        std::filesystem::exists("/dev/nvidiactl")) {
      CheckCuda(count_err, "cudaGetDeviceCount (GPU device nodes are present)");
    }
    std::printf("no CUDA device; nothing measured\n");
    if (count_err != cudaSuccess) {
      std::printf("(cudaGetDeviceCount: %s)\n", cudaGetErrorName(count_err));
    }
    return 0;
  }
  std::printf(
      "sluice_bench_kernels: CUDA decode kernels (workers/kernels) against a "
      "device-to-device copy\n");
  CheckCuda(cudaSetDevice(0), "cudaSetDevice");
  PrintDevice();
  CreateEvents();
  // A blocking stream: it is ordered with the legacy default stream the fills use.
  cudaStream_t stream = nullptr;
  CheckCuda(cudaStreamCreate(&stream), "cudaStreamCreate");

  MeasureCopy(stream);
  if (!(g_copy_best_gbps > 0)) Fail("copy baseline measured no bandwidth");

  std::mt19937 rng(2024);
  {
    const size_t pool_bytes = size_t{kMaxBatch} * kMaxContext * size_t{kQwen3_8B.num_kv_heads} *
                              size_t{kQwen3_8B.head_dim} * 2;
    KvPool pool(pool_bytes);
    FillHalfPattern(pool.k, 1);
    FillHalfPattern(pool.v, 2);
    PrintHeader();
    BenchAttention(stream, pool, kQwen3Small, DType::kBFloat16, rng);
    BenchAttention(stream, pool, kQwen3Small, DType::kFloat16, rng);
    BenchAttention(stream, pool, kQwen3_8B, DType::kBFloat16, rng);
    BenchWriteKv(stream, pool, rng);
  }
  BenchRmsNorm(stream);
  BenchRotary(stream);
  BenchSample(stream);

  CheckCuda(cudaStreamSynchronize(stream), "final synchronize");
  CheckCuda(cudaGetLastError(), "final cudaGetLastError");
  CheckCuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
  for (cudaEvent_t e : Events()) CheckCuda(cudaEventDestroy(e), "cudaEventDestroy");
  std::printf("done\n");
  return 0;
}

}  // namespace
}  // namespace sluice::kernels

int main() { return sluice::kernels::Run(); }
