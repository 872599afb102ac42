#include "workers/trainer/version_continuity.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace sluice::trainer {
namespace {

TEST(ContinuedVersionTest, ContinuesAboveTheDataflowUnlessItHoldsTheseWeights) {
  struct Case {
    const char* name;
    int64_t held;
    std::optional<AnnouncedImage> announced;
    std::string held_digest;
    int64_t want;
  };
  const Case cases[] = {
      {"first start, nothing announced", 0, std::nullopt, "", 0},
      {"resumed, nothing announced (the dataflow lost its log)", 40, std::nullopt, "sha256:a", 40},
      {"the dataflow is behind the checkpoint", 40, AnnouncedImage{30, "sha256:x"}, "sha256:a", 40},
      {"restart right after the checkpoint: the same image", 40, AnnouncedImage{40, "sha256:a"},
       "sha256:a", 40},
      {"the same number, another image", 40, AnnouncedImage{40, "sha256:b"}, "sha256:a", 41},
      {"an announcement without a digest is not these weights", 40, AnnouncedImage{40, ""}, "", 41},
      {"resumed from step 40, the dead run announced 57", 40, AnnouncedImage{57, "sha256:c"},
       "sha256:a", 58},
      {"no checkpoint: initial weights after a dead run", 0, AnnouncedImage{12, "sha256:d"}, "",
       13},
      {"warm-started weights (version 5) after a dead run", 5, AnnouncedImage{9, "sha256:e"},
       "sha256:f", 10},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ContinuedVersion(c.held, c.announced, c.held_digest), c.want) << c.name;
  }
}

}  // namespace
}  // namespace sluice::trainer
