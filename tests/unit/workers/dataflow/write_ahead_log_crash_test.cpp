// WriteAheadLog under crashes and I/O errors, in child processes: kill -9 at random moments
// never loses an acknowledged record, and a failed write is sticky (fail-stop).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "tests/unit/workers/dataflow/write_ahead_log_test_support.h"
#include "workers/dataflow/write_ahead_log.h"

namespace sluice::dataflow {
namespace {

using wal_test_support::IdOf;
using wal_test_support::OpenReplayed;
using wal_test_support::PayloadFor;
using wal_test_support::Replayed;
using wal_test_support::TempDir;

// Child side of the crash test: replays the log into `tokens` (index = LSN), then appends from
// three threads, reporting each durable (lsn, token) on `report_fd`, and snapshots every 48
// records or so. Never returns.
[[noreturn]] void CrashChild(const std::string& dir, int report_fd, uint64_t generation) {
  WalOptions options;
  options.dir = dir;
  options.segment_bytes = 64 << 10;
  Result<std::unique_ptr<WriteAheadLog>> opened = WriteAheadLog::Open(options, nullptr);
  if (!opened.ok()) _exit(2);
  WriteAheadLog& wal = **opened;
  std::mutex mu;                       // Orders appends with the state, as the service must.
  std::vector<uint64_t> tokens(1, 0);  // tokens[lsn].
  Result<ReplayStats> stats = wal.Replay(
      [&](uint64_t lsn, std::string_view snapshot) {
        tokens.resize(lsn + 1);
        std::memcpy(tokens.data() + 1, snapshot.data(), snapshot.size());
        return Status::Ok();
      },
      [&](const WalRecord& r) {
        tokens.push_back(IdOf(r.payload));
        return Status::Ok();
      });
  if (!stats.ok()) _exit(3);
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(generation * 3 + t);
      for (uint64_t i = 0;; ++i) {
        const uint64_t token = (generation << 40) | (t << 32) | i;
        const std::string payload = PayloadFor(token, 20 + rng() % 100000);
        uint64_t lsn;
        {
          std::lock_guard<std::mutex> lock(mu);
          Result<uint64_t> appended = wal.Append(1, payload);
          if (!appended.ok()) _exit(4);
          lsn = *appended;
          tokens.push_back(token);
          if (tokens.size() != lsn + 1) _exit(5);
        }
        if (!wal.WaitDurable(lsn).ok()) _exit(6);
        const uint64_t report[2] = {lsn, token};
        if (write(report_fd, report, sizeof(report)) != sizeof(report)) _exit(7);
        if (t == 0 && i % 16 == 15) {
          std::string snapshot;
          uint64_t snapshot_lsn;
          {
            std::lock_guard<std::mutex> lock(mu);
            snapshot_lsn = wal.LastLsn();
            snapshot.assign(reinterpret_cast<const char*>(tokens.data() + 1),
                            snapshot_lsn * sizeof(uint64_t));
          }
          if (!wal.WriteSnapshot(snapshot_lsn, snapshot).ok()) _exit(8);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  _exit(9);
}

TEST(DataflowWalTest, SurvivesKillNineAtRandomMoments) {
  TempDir dir;
  std::mt19937 rng(12345);
  std::map<uint64_t, uint64_t> acked;  // lsn -> token, over all generations.
  size_t kills_with_acks = 0;
  for (uint64_t generation = 1; generation <= 20; ++generation) {
    SCOPED_TRACE("generation " + std::to_string(generation));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      CrashChild(dir.path(), fds[1], generation);
    }
    close(fds[1]);
    // Kill after a random number of acknowledgements (every fourth generation: none, so it
    // often dies in Open or Replay) plus a random delay. Counting acks rather than time keeps
    // the test meaningful on a loaded machine.
    const size_t kill_after = generation % 4 == 1 ? 0 : rng() % 150;
    size_t acks = 0;
    auto take = [&](const uint64_t(&report)[2]) {
      EXPECT_TRUE(acked.emplace(report[0], report[1]).second) << "LSN acked twice";
      ++acks;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (acks < kill_after && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      uint64_t report[2];
      if (read(fds[0], report, sizeof(report)) != sizeof(report)) break;
      take(report);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
    uint64_t report[2];
    ssize_t n;
    while ((n = read(fds[0], report, sizeof(report))) == sizeof(report)) take(report);
    EXPECT_EQ(n, 0);
    close(fds[0]);
    kills_with_acks += acks > 0;

    // Recover in this process and check every acknowledged record.
    WalOptions options;
    options.dir = dir.path();
    options.segment_bytes = 64 << 10;
    Replayed replayed;
    auto wal = OpenReplayed(options, &replayed);
    std::vector<uint64_t> tokens(1, 0);
    if (replayed.has_snapshot) {
      ASSERT_EQ(replayed.snapshot.size(), replayed.snapshot_lsn * sizeof(uint64_t));
      tokens.resize(replayed.snapshot_lsn + 1);
      std::memcpy(tokens.data() + 1, replayed.snapshot.data(), replayed.snapshot.size());
    }
    for (const WalRecord& r : replayed.records) {
      ASSERT_EQ(r.lsn, tokens.size());  // In order, no gaps, no repeats.
      const uint64_t token = IdOf(r.payload);
      ASSERT_NE(token, ~uint64_t{0}) << "damaged payload at LSN " << r.lsn;
      tokens.push_back(token);
    }
    for (const auto& [lsn, token] : acked) {
      ASSERT_LT(lsn, tokens.size()) << "acknowledged LSN " << lsn << " lost";
      ASSERT_EQ(tokens[lsn], token) << "LSN " << lsn;
    }
    std::set<uint64_t> unique(tokens.begin() + 1, tokens.end());
    EXPECT_EQ(unique.size(), tokens.size() - 1) << "a record was replayed twice";
    // Unacknowledged records past the end are forgotten by the next child; drop their acks.
    ASSERT_TRUE(wal->Close().ok());
  }
  EXPECT_GE(kills_with_acks, 5u);  // Most even generations acknowledge something.
  EXPECT_GE(acked.size(), 100u);
}

TEST(DataflowWalTest, WriteErrorIsFailStop) {
  TempDir dir;
  WalOptions options;
  options.dir = dir.path();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Writes past 20000 bytes fail with EFBIG.
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{20000, 20000};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(2);
    Result<std::unique_ptr<WriteAheadLog>> wal = WriteAheadLog::Open(options, nullptr);
    if (!wal.ok() || !(*wal)
                          ->Replay([](uint64_t, std::string_view) { return Status::Ok(); },
                                   [](const WalRecord&) { return Status::Ok(); })
                          .ok()) {
      _exit(3);
    }
    Status error;
    for (int i = 0; i < 100 && error.ok(); ++i) {
      error = (*wal)->AppendDurable(1, PayloadFor(i, 1000)).status();
    }
    const uint64_t durable = (*wal)->DurableLsn();
    if (write(fds[1], &durable, sizeof(durable)) != sizeof(durable)) _exit(4);
    if (error.ok() || error.code() != StatusCode::kInternal) _exit(5);
    if (durable >= (*wal)->LastLsn()) _exit(6);
    // Sticky: nothing more is accepted, nothing more is claimed durable.
    if ((*wal)->Append(1, "x").status() != error) _exit(7);
    if ((*wal)->WaitDurable((*wal)->LastLsn()) != error) _exit(8);
    if (!(*wal)->WaitDurable(durable).ok()) _exit(9);
    if ((*wal)->Close() != error) _exit(10);
    _exit(0);
  }
  close(fds[1]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  uint64_t durable = 0;
  ASSERT_EQ(read(fds[0], &durable, sizeof(durable)), ssize_t{sizeof(durable)});
  close(fds[0]);
  EXPECT_GT(durable, 10u);
  Replayed replayed;
  auto wal = OpenReplayed(options, &replayed);
  ASSERT_EQ(replayed.records.size(), durable);
  EXPECT_GT(replayed.stats.truncated_bytes, 0u);  // The partly written record.
}

}  // namespace
}  // namespace sluice::dataflow
