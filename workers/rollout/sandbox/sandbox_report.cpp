#include "workers/rollout/sandbox/sandbox_report.h"

#include <cstring>
#include <set>

namespace sluice::rollout {

namespace {

template <typename T>
bool Take(std::string_view& bytes, T* out) {
  if (bytes.size() < sizeof(T)) return false;
  std::memcpy(out, bytes.data(), sizeof(T));
  bytes.remove_prefix(sizeof(T));
  return true;
}

}  // namespace

size_t MaxSandboxReportBytes(size_t collect_count, int64_t max_file_bytes) {
  const size_t per_file = sizeof(SandboxReportFile) + static_cast<size_t>(max_file_bytes);
  return sizeof(SandboxReportHeader) + collect_count * per_file + sizeof(SandboxReportFile);
}

Result<SandboxReport> DecodeSandboxReport(std::string_view bytes, size_t collect_count,
                                          int64_t max_file_bytes) {
  SandboxReportHeader header;
  if (!Take(bytes, &header)) return Status::Corruption("sandbox report: the header is incomplete");
  if (header.magic != kSandboxReportMagic) {
    return Status::InvalidArgument("sandbox report: wrong magic number");
  }
  SandboxReport report;
  report.wait_status = header.wait_status;
  report.cpu_seconds =
      static_cast<double>(header.user_microseconds + header.system_microseconds) / 1e6;
  std::set<uint32_t> seen;
  while (true) {
    SandboxReportFile file;
    if (!Take(bytes, &file)) return Status::Corruption("sandbox report: no end record");
    if (file.index == kSandboxReportEnd) break;
    if (file.index >= collect_count) {
      return Status::InvalidArgument("sandbox report: file index " + std::to_string(file.index) +
                                     " is not one of the " + std::to_string(collect_count) +
                                     " collected files");
    }
    if (!seen.insert(file.index).second) {
      return Status::InvalidArgument("sandbox report: file index " + std::to_string(file.index) +
                                     " sent twice");
    }
    if (file.size > static_cast<uint64_t>(max_file_bytes)) {
      return Status::InvalidArgument("sandbox report: a file of " + std::to_string(file.size) +
                                     " bytes is over the limit of " +
                                     std::to_string(max_file_bytes));
    }
    if (bytes.size() < file.size) return Status::Corruption("sandbox report: a file is cut short");
    report.files.emplace_back(file.index, std::string(bytes.substr(0, file.size)));
    bytes.remove_prefix(file.size);
  }
  if (!bytes.empty()) {
    return Status::InvalidArgument("sandbox report: " + std::to_string(bytes.size()) +
                                   " bytes after the end record");
  }
  return report;
}

}  // namespace sluice::rollout
