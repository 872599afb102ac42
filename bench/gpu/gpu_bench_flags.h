// The GPU benchmarks' command line: --cpu-dry-run, --steps K, --help. Without --cpu-dry-run
// they need a CUDA device; with it they run the same code on the CPU on tiny shapes, which
// proves it where no GPU is (scripts/device-check.sh's dry run).
#pragma once

#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace sluice::bench {

struct GpuBenchFlags {
  bool dry_run = false;
  int steps = 0;  // Timed steps; the benchmark's default unless --steps.
  torch::Device device = torch::kCPU;
};

// The flags, or the exit status main should return: 0 after --help or when no CUDA device is
// visible without --cpu-dry-run (the benchmark is skipped, as on CI), 2 for a bad flag.
inline std::optional<int> ParseGpuBenchFlags(int argc, char** argv, const char* name,
                                             int default_steps, GpuBenchFlags& flags) {
  flags.steps = default_steps;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cpu-dry-run") {
      flags.dry_run = true;
    } else if (a == "--steps" && i + 1 < argc) {
      flags.steps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--cpu-dry-run] [--steps K]\n", name);
      return 0;
    } else {
      std::fprintf(stderr, "unknown flag %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (!flags.dry_run && !torch::cuda::is_available()) {
    std::printf("%s: no CUDA device, nothing measured\n", name);
    return 0;
  }
  flags.device = flags.dry_run ? torch::Device(torch::kCPU) : torch::Device(torch::kCUDA, 0);
  return std::nullopt;
}

}  // namespace sluice::bench
