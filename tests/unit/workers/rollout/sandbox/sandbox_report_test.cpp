#include "workers/rollout/sandbox/sandbox_report.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::rollout {
namespace {

std::string Bytes(const void* data, size_t size) {
  return std::string(static_cast<const char*>(data), size);
}

std::string Header(int status, int64_t user_us, int64_t system_us) {
  SandboxReportHeader header;
  header.wait_status = status;
  header.user_microseconds = user_us;
  header.system_microseconds = system_us;
  return Bytes(&header, sizeof(header));
}

std::string File(uint32_t index, const std::string& contents) {
  SandboxReportFile record;
  record.index = index;
  record.size = contents.size();
  return Bytes(&record, sizeof(record)) + contents;
}

std::string End() {
  SandboxReportFile end;
  end.index = kSandboxReportEnd;
  return Bytes(&end, sizeof(end));
}

TEST(SandboxReportTest, DecodesStatusCpuTimeAndFiles) {
  const std::string bytes =
      Header(3 << 8, 1'500'000, 250'000) + File(1, "binary") + File(0, "") + End();
  Result<SandboxReport> report = DecodeSandboxReport(bytes, 2, 100);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->wait_status, 3 << 8);
  EXPECT_DOUBLE_EQ(report->cpu_seconds, 1.75);
  ASSERT_EQ(report->files.size(), 2u);
  EXPECT_EQ(report->files[0].first, 1u);
  EXPECT_EQ(report->files[0].second, "binary");
  EXPECT_EQ(report->files[1].first, 0u);
  EXPECT_EQ(report->files[1].second, "");
}

TEST(SandboxReportTest, RefusesIncompleteAndMalformedReports) {
  const std::string good = Header(0, 0, 0) + File(0, "abc") + End();
  struct Case {
    const char* name;
    std::string bytes;
    StatusCode code;
  };
  SandboxReportHeader wrong_magic;
  wrong_magic.magic = 1;
  const Case cases[] = {
      {"empty", "", StatusCode::kCorruption},
      {"half a header", good.substr(0, 5), StatusCode::kCorruption},
      {"no end record", Header(0, 0, 0) + File(0, "abc"), StatusCode::kCorruption},
      {"file cut short", good.substr(0, sizeof(SandboxReportHeader) + 20), StatusCode::kCorruption},
      {"wrong magic", Bytes(&wrong_magic, sizeof(wrong_magic)) + End(),
       StatusCode::kInvalidArgument},
      {"index out of range", Header(0, 0, 0) + File(2, "x") + End(), StatusCode::kInvalidArgument},
      {"index twice", Header(0, 0, 0) + File(0, "x") + File(0, "y") + End(),
       StatusCode::kInvalidArgument},
      {"over the size limit", Header(0, 0, 0) + File(1, std::string(11, 'x')) + End(),
       StatusCode::kInvalidArgument},
      {"bytes after the end", good + "z", StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecodeSandboxReport(c.bytes, 2, 10).status().code(), c.code) << c.name;
  }
  EXPECT_TRUE(DecodeSandboxReport(good, 2, 10).ok());
}

TEST(SandboxReportTest, TheBoundHoldsTheLargestReport) {
  const std::string largest =
      Header(0, 0, 0) + File(0, std::string(10, 'a')) + File(1, std::string(10, 'b')) + End();
  EXPECT_EQ(MaxSandboxReportBytes(2, 10), largest.size());
  EXPECT_EQ(MaxSandboxReportBytes(0, 10), (Header(0, 0, 0) + End()).size());
}

}  // namespace
}  // namespace sluice::rollout
