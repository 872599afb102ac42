// Benchmarks of the shared core. Each prints a figure and, where there is one, a ratio against
// a baseline measured in the same run on the same machine.
//
//   crc32c        hardware (SSE4.2) vs the portable table code, GB/s
//   wire          encode + frame and read + decode of trajectory frames, MB/s
//   http          keep-alive pooled requests vs a new connection per request, requests/s
//   metrics       counter and histogram updates, ns/op; exposition of 1,000 series, ms
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/http/client.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/level.h"
#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"
#include "common/wire/decoder.h"
#include "common/wire/encoder.h"
#include "common/wire/frame.h"

namespace sluice {
namespace {

using BenchClock = std::chrono::steady_clock;

double Seconds(BenchClock::time_point since) {
  return std::chrono::duration<double>(BenchClock::now() - since).count();
}

// Keeps the optimiser from discarding a computed value.
uint64_t g_sink = 0;

void BenchCrc() {
  std::vector<char> buf(64 << 20);
  std::mt19937_64 rng(1);
  for (char& c : buf) c = static_cast<char>(rng());
  constexpr int kRounds = 4;
  auto t = BenchClock::now();
  for (int i = 0; i < kRounds; ++i)
    g_sink += crc32c_internal::ExtendSoftware(0, buf.data(), buf.size());
  const double sw = kRounds * buf.size() / Seconds(t) / 1e9;
  std::printf("crc32c    software           %8.2f GB/s\n", sw);
  if (crc32c_internal::HardwareAvailable()) {
    t = BenchClock::now();
    for (int i = 0; i < kRounds; ++i)
      g_sink += crc32c_internal::ExtendHardware(0, buf.data(), buf.size());
    const double hw = kRounds * buf.size() / Seconds(t) / 1e9;
    std::printf("crc32c    hardware (sse4.2)  %8.2f GB/s   %.1fx software\n", hw, hw / sw);
  } else {
    std::printf("crc32c    hardware           not available on this CPU\n");
  }
}

void BenchWire() {
  constexpr int kTrajectories = 2000;
  constexpr int kTokens = 1000;
  std::vector<int32_t> tokens(kTokens);
  std::vector<float> logprobs(kTokens);
  for (int i = 0; i < kTokens; ++i) {
    tokens[i] = i * 7;
    logprobs[i] = -0.01f * static_cast<float>(i);
  }
  std::string stream;
  auto t = BenchClock::now();
  for (int i = 0; i < kTrajectories; ++i) {
    const size_t start = wire::BeginFrame(&stream);
    wire::Encoder enc(&stream);
    enc.PutString("task-" + std::to_string(i));
    enc.PutI32Array(tokens);
    enc.PutF32Array(logprobs);
    enc.PutF64(1.0);
    if (!wire::FinishFrame(1, start, &stream).ok()) std::abort();
  }
  const double enc_s = Seconds(t);
  t = BenchClock::now();
  wire::FrameReader reader{std::string_view(stream)};
  std::vector<int32_t> out_tokens;
  std::vector<float> out_logprobs;
  std::string id;
  int frames = 0;
  while (!reader.AtEnd()) {
    Result<wire::Frame> f = reader.Next();
    if (!f.ok()) std::abort();
    wire::Decoder dec(f->payload);
    if (!dec.GetString("id", &id).ok() || !dec.GetI32Array("tokens", &out_tokens).ok() ||
        !dec.GetF32Array("logprobs", &out_logprobs).ok()) {
      std::abort();
    }
    ++frames;
  }
  const double dec_s = Seconds(t);
  const double mb = stream.size() / 1e6;
  std::printf("wire      encode+frame       %8.0f MB/s   (%d trajectories x %d tokens, %.1f MB)\n",
              mb / enc_s, kTrajectories, kTokens, mb);
  std::printf("wire      read+decode        %8.0f MB/s   %.0f trajectories/s\n", mb / dec_s,
              frames / dec_s);
}

void BenchHttp() {
  log::SetMinLevel(log::Level::kError);
  metrics::Registry registry;
  log::Logger logger("bench");
  http::ServerOptions options;
  options.access_log = false;
  http::Server server(options, &registry, logger);
  server.Get("/v1/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pong", "text/plain");
  });
  if (!server.Start().ok()) std::abort();
  auto run = [&](size_t idle, int n) {
    http::ClientOptions c;
    c.base_url = server.BaseUrl();
    c.max_idle_connections = idle;
    std::unique_ptr<http::Client> client = std::move(http::Client::Create(c)).value();
    auto t = BenchClock::now();
    for (int i = 0; i < n; ++i) {
      Result<http::Response> r = client->Get("/v1/ping");
      if (!r.ok() || r->status != 200) std::abort();
    }
    return n / Seconds(t);
  };
  const double fresh = run(0, 2000);
  const double pooled = run(4, 5000);
  std::printf("http      new connection     %8.0f req/s\n", fresh);
  std::printf("http      keep-alive pool    %8.0f req/s   %.1fx new connection\n", pooled,
              pooled / fresh);
  server.Shutdown();
}

void BenchMetrics() {
  metrics::Registry registry;
  metrics::Counter& counter =
      registry.AddCounter("sluice_bench_ops_total", "Ops.", {"kind"}).WithLabels({"a"});
  metrics::Histogram& hist = registry
                                 .AddHistogram("sluice_bench_latency_seconds", "Latency.", {},
                                               metrics::ExponentialBuckets(0.001, 2, 16))
                                 .WithLabels({});
  constexpr int kOps = 20'000'000;
  auto t = BenchClock::now();
  for (int i = 0; i < kOps; ++i) counter.Inc();
  std::printf("metrics   counter Inc        %8.2f ns/op\n", Seconds(t) * 1e9 / kOps);
  t = BenchClock::now();
  for (int i = 0; i < kOps / 4; ++i) hist.Observe(0.001 * (i & 1023));
  std::printf("metrics   histogram Observe  %8.2f ns/op\n", Seconds(t) * 1e9 / (kOps / 4));
  auto& family = registry.AddGauge("sluice_bench_depth", "Depth.", {"shard"});
  for (int i = 0; i < 1000; ++i) family.WithLabels({std::to_string(i)}).Set(i);
  t = BenchClock::now();
  size_t bytes = 0;
  for (int i = 0; i < 20; ++i) bytes += metrics::ExposeText(registry).size();
  std::printf("metrics   expose 1,000 series%8.2f ms     (%zu bytes)\n", Seconds(t) * 1e3 / 20,
              bytes / 20);
}

}  // namespace
}  // namespace sluice

int main() {
  std::printf("== common benchmarks ==\n");
  sluice::BenchCrc();
  sluice::BenchWire();
  sluice::BenchHttp();
  sluice::BenchMetrics();
  // Printing the checksums keeps the CRC loops from being optimised away.
  std::printf("(crc checksum %llu)\n", static_cast<unsigned long long>(sluice::g_sink));
  return 0;
}
