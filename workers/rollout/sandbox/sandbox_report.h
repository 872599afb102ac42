// The report a sandbox's init process (PID 1 of its PID namespace) sends the worker once the
// program has ended: the program's wait status and CPU time, then the files the caller asked to
// collect, read from the sandbox's private /tmp before the namespace goes away.
//
// Wire form (native byte order: both ends are the same binary on the same machine):
//   SandboxReportHeader, then per collected file a SandboxReportFile and `size` bytes, then a
//   SandboxReportFile whose index is kSandboxReportEnd. A report without its end record is
//   incomplete (the init was killed: wall limit, cancellation).
//
// The writer (sandbox_child.cpp) writes these structs with write(2) between fork and exec; the
// reader is the pure DecodeSandboxReport. Thread safety: values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::rollout {

inline constexpr uint32_t kSandboxReportMagic = 0x53524550;  // "SREP"
inline constexpr uint32_t kSandboxReportEnd = 0xffffffff;

struct SandboxReportHeader {
  uint32_t magic = kSandboxReportMagic;
  int32_t wait_status = 0;  // As waitpid(2) reports it.
  int64_t user_microseconds = 0;
  int64_t system_microseconds = 0;
};

struct SandboxReportFile {
  uint32_t index = 0;  // Into SandboxSpec::collect_files; kSandboxReportEnd ends the report.
  uint32_t reserved = 0;
  uint64_t size = 0;  // Bytes that follow.
};

struct SandboxReport {
  int wait_status = 0;
  double cpu_seconds = 0;  // User + system.
  // (index into collect_files, contents), in the order sent.
  std::vector<std::pair<uint32_t, std::string>> files;
};

// The most bytes a complete report can take for `collect_count` files of at most
// `max_file_bytes` each (the reader's buffer bound).
size_t MaxSandboxReportBytes(size_t collect_count, int64_t max_file_bytes);

// Decodes a complete report. Corruption when it ends early (no end record), InvalidArgument for a
// wrong magic, an index outside [0, collect_count), an index sent twice, a file over
// max_file_bytes, or bytes after the end record.
Result<SandboxReport> DecodeSandboxReport(std::string_view bytes, size_t collect_count,
                                          int64_t max_file_bytes);

}  // namespace sluice::rollout
