// What the write-ahead log tests (write_ahead_log*_test.cpp) share: a temporary directory,
// self-checking record payloads, opening and replaying a log into memory, appending numbered
// records, and reading, writing and damaging the log's files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "tests/support/temp_dir.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow::wal_test_support {

// A directory of this test's own, removed with everything in it.
class TempDir : public ::sluice::test_support::TempDir {
 public:
  TempDir() : ::sluice::test_support::TempDir("sluice_wal_test") {}
};

// Deterministic contents for a record identified by `id`, `size` bytes (at least the id).
inline std::string PayloadFor(uint64_t id, size_t size) {
  std::string p = "id=" + std::to_string(id) + ";";
  p.reserve(std::max(size, p.size()));
  while (p.size() < size) p.push_back(static_cast<char>('a' + (id + p.size()) % 26));
  return p;
}

// The id PayloadFor was given, or ~0 when the payload is not one of its outputs.
inline uint64_t IdOf(const std::string& payload) {
  const size_t semi = payload.find(';');
  if (!payload.starts_with("id=") || semi == std::string::npos) return ~uint64_t{0};
  uint64_t id = 0;
  const auto [end, ec] = std::from_chars(payload.data() + 3, payload.data() + semi, id);
  if (ec != std::errc() || end != payload.data() + semi) return ~uint64_t{0};
  return PayloadFor(id, payload.size()) == payload ? id : ~uint64_t{0};
}

struct Replayed {
  Status status;
  ReplayStats stats;
  bool has_snapshot = false;
  uint64_t snapshot_lsn = 0;
  std::string snapshot;
  std::vector<WalRecord> records;
};

inline Replayed ReplayAll(WriteAheadLog& wal) {
  Replayed out;
  Result<ReplayStats> stats = wal.Replay(
      [&](uint64_t lsn, std::string_view snapshot) {
        EXPECT_FALSE(out.has_snapshot) << "two snapshots";
        EXPECT_TRUE(out.records.empty()) << "snapshot after records";
        out.has_snapshot = true;
        out.snapshot_lsn = lsn;
        out.snapshot = std::string(snapshot);
        return Status::Ok();
      },
      [&](const WalRecord& record) {
        out.records.push_back(record);
        return Status::Ok();
      });
  out.status = stats.status();
  if (stats.ok()) out.stats = *stats;
  return out;
}

inline std::unique_ptr<WriteAheadLog> MustOpen(const WalOptions& options,
                                               metrics::Registry* registry = nullptr) {
  Result<std::unique_ptr<WriteAheadLog>> wal = WriteAheadLog::Open(options, registry);
  SLUICE_CHECK(wal.ok());
  return std::move(wal).value();
}

// Opens and replays, expecting success.
inline std::unique_ptr<WriteAheadLog> OpenReplayed(const WalOptions& options,
                                                   Replayed* out = nullptr,
                                                   metrics::Registry* registry = nullptr) {
  std::unique_ptr<WriteAheadLog> wal = MustOpen(options, registry);
  Replayed replayed = ReplayAll(*wal);
  EXPECT_TRUE(replayed.status.ok()) << replayed.status.ToString();
  if (out != nullptr) *out = std::move(replayed);
  return wal;
}

// Checks records are lsns first..first+n-1 with PayloadFor(lsn, ...) payloads and type lsn % 7.
inline void ExpectSequential(const std::vector<WalRecord>& records, uint64_t first, size_t n) {
  ASSERT_EQ(records.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(records[i].lsn, first + i);
    EXPECT_EQ(records[i].type, (first + i) % 7);
    EXPECT_EQ(IdOf(records[i].payload), first + i);
  }
}

// Appends records with PayloadFor(lsn, size) (type lsn % 7) durably, one by one.
inline void AppendSequential(WriteAheadLog& wal, size_t n, size_t size) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t lsn = wal.LastLsn() + 1;
    Result<uint64_t> got = wal.AppendDurable(lsn % 7, PayloadFor(lsn, size));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(*got, lsn);
  }
}

inline std::vector<std::string> FilesWithPrefix(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  SLUICE_CHECK(out.good());
}

inline void FlipByte(const std::string& path, size_t offset) {
  std::string data = ReadFile(path);
  SLUICE_CHECK(offset < data.size());
  data[offset] = static_cast<char>(data[offset] ^ 0x5A);
  WriteFile(path, data);
}

inline std::string SegmentName(uint64_t first_lsn) {
  char name[64];
  std::snprintf(name, sizeof(name), "wal-%020llu.log", static_cast<unsigned long long>(first_lsn));
  return name;
}

}  // namespace sluice::dataflow::wal_test_support
