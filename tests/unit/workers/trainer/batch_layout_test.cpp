#include "workers/trainer/batch_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace sluice::trainer {
namespace {

std::vector<size_t> Iota(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), size_t{0});
  return v;
}

TEST(BatchLayoutTest, SplitBalancedIsLongestFirstToTheLightestPart) {
  const std::vector<int64_t> lengths = {10, 3, 7, 7, 1, 4};
  const auto parts = SplitBalanced(Iota(6), lengths, 2);
  ASSERT_EQ(parts.size(), 2u);
  // 10 -> p0; 7 (idx 2) -> p1; 7 (idx 3) -> p1 (7 < 10); 4 -> p0 (10 < 14); 3 -> p0 (14 = 14:
  // the first); 1 -> p1.
  EXPECT_EQ(parts[0], (std::vector<size_t>{0, 1, 5}));
  EXPECT_EQ(parts[1], (std::vector<size_t>{2, 3, 4}));
}

TEST(BatchLayoutTest, SplitBalancedCoversEverySequenceOnce) {
  std::vector<int64_t> lengths;
  for (int i = 0; i < 37; ++i) lengths.push_back(1 + (i * 7919) % 50);
  for (int parts : {1, 2, 3, 8, 64}) {
    const auto split = SplitBalanced(Iota(lengths.size()), lengths, parts);
    ASSERT_EQ(split.size(), static_cast<size_t>(parts));
    std::vector<size_t> all;
    int64_t lo = INT64_MAX, hi = 0;
    for (const auto& p : split) {
      EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
      all.insert(all.end(), p.begin(), p.end());
      int64_t load = 0;
      for (size_t i : p) load += lengths[i];
      lo = std::min(lo, load);
      hi = std::max(hi, load);
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, Iota(lengths.size()));
    if (parts <= 8) {
      EXPECT_LE(hi - lo, 50) << parts;  // Within one sequence's length.
    }
  }
}

TEST(BatchLayoutTest, PackMicroBatchesKeepsRunsWithinTheBudget) {
  const std::vector<int64_t> lengths = {5, 5, 5, 20, 1, 9};
  const auto mbs = PackMicroBatches(Iota(6), lengths, 10);
  ASSERT_EQ(mbs.size(), 4u);
  EXPECT_EQ(mbs[0], (std::vector<size_t>{0, 1}));
  EXPECT_EQ(mbs[1], (std::vector<size_t>{2}));
  EXPECT_EQ(mbs[2], (std::vector<size_t>{3}));  // Longer than the budget: alone.
  EXPECT_EQ(mbs[3], (std::vector<size_t>{4, 5}));
  EXPECT_TRUE(PackMicroBatches({}, lengths, 10).empty());
}

TEST(BatchLayoutTest, ProximalLogProbsComeFromTheUpdatePassOnlyForOneUpdateNeededByNothingElse) {
  struct Case {
    size_t parts;
    bool needed_before_update;
    bool from_update_pass;
  };
  const Case cases[] = {
      {1, false, true},   // One update, nothing reads them first: the update pass's values.
      {1, true, false},   // KL-in-reward advantages read them before the update.
      {2, false, false},  // The second update's weights are no longer the proximal policy's.
      {4, true, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ProximalLogProbsFromUpdatePass(c.parts, c.needed_before_update), c.from_update_pass)
        << c.parts << " " << c.needed_before_update;
  }
}

}  // namespace
}  // namespace sluice::trainer
