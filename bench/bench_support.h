// Helpers shared by the benchmarks that drive a real HTTP service: elapsed time, nearest-rank
// percentiles, a scratch directory, and failing the run loudly (a benchmark that hits an error
// must not print figures).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "common/http/client.h"
#include "common/status.h"

namespace sluice::bench {

using BenchClock = std::chrono::steady_clock;

inline double Seconds(BenchClock::time_point since) {
  return std::chrono::duration<double>(BenchClock::now() - since).count();
}

// Nearest-rank percentile, p in (0, 1]; 0 for no values.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

// The run's temporary directory, removed by Fail too.
inline std::string& TempPath() {
  static std::string path;
  return path;
}

// Run by Fail before it exits (e.g. to kill a child process the benchmark started).
inline void (*&OnFail())() {
  static void (*hook)() = nullptr;
  return hook;
}

// Exits at once (threads may still be running, so no destructors run).
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  std::fflush(stdout);
  if (OnFail() != nullptr) OnFail()();
  std::error_code ignored;
  if (!TempPath().empty()) std::filesystem::remove_all(TempPath(), ignored);
  std::_Exit(1);
}

inline void Check(const Status& status, const std::string& what) {
  if (!status.ok()) Fail(what + ": " + status.ToString());
}

// The response, failing the run unless it arrived with `code`.
inline http::Response Expect(Result<http::Response> reply, int code, const std::string& what) {
  Check(reply.status(), what);
  if (reply->status != code) {
    Fail(what + ": HTTP " + std::to_string(reply->status) + ": " + reply->body.substr(0, 300));
  }
  return std::move(reply).value();
}

}  // namespace sluice::bench
