// Table tests of DecideWatchStart (watch_start.h): kube's legacy watch starts, the streaming
// list (sendInitialEvents) and the ListOptions validation errors.
#include "localcluster/apiserver/watch_start.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace sluice::apiserver {
namespace {

struct StartCase {
  const char* name;
  WatchQuery query;
  WatchStart want;
};

TEST(DecideWatchStartTest, StartsWhereKubeStarts) {
  const std::vector<StartCase> cases = {
      {"no resourceVersion: state then changes", {"", "", "", false}, {true, false, 0, 0}},
      {"resourceVersion 0: state then changes", {"0", "", "", true}, {true, false, 0, 0}},
      {"resourceVersion N: changes after N", {"42", "", "", true}, {false, false, 42, 0}},
      {"streaming list, consistent", {"", "NotOlderThan", "true", true}, {true, true, 0, 0}},
      {"streaming list, any", {"0", "NotOlderThan", "true", true}, {true, true, 0, 0}},
      {"streaming list, not older than N",
       {"17", "NotOlderThan", "true", true},
       {true, true, 0, 17}},
      {"no initial events, from now", {"", "NotOlderThan", "false", true}, {false, false, 0, 0}},
      {"no initial events, after N", {"9", "NotOlderThan", "false", true}, {false, false, 9, 0}},
  };
  for (const StartCase& c : cases) {
    const auto got = DecideWatchStart(c.query);
    ASSERT_TRUE(std::holds_alternative<WatchStart>(got)) << c.name;
    const WatchStart& start = std::get<WatchStart>(got);
    EXPECT_EQ(start.initial_state, c.want.initial_state) << c.name;
    EXPECT_EQ(start.initial_events_end, c.want.initial_events_end) << c.name;
    EXPECT_EQ(start.from, c.want.from) << c.name;
    EXPECT_EQ(start.not_older_than, c.want.not_older_than) << c.name;
  }
}

struct ErrorCase {
  const char* name;
  WatchQuery query;
  std::vector<std::string> fields;  // The fields named, in order.
};

TEST(DecideWatchStartTest, RejectsWhatKubeRejectsNamingTheField) {
  const std::vector<ErrorCase> cases = {
      {"streaming without NotOlderThan", {"", "", "true", true}, {"resourceVersionMatch"}},
      {"streaming with Exact", {"5", "Exact", "true", true}, {"resourceVersionMatch"}},
      {"streaming without bookmarks", {"", "NotOlderThan", "true", false}, {"allowWatchBookmarks"}},
      {"both missing", {"", "", "false", false}, {"resourceVersionMatch", "allowWatchBookmarks"}},
      {"match without sendInitialEvents",
       {"5", "NotOlderThan", "", true},
       {"resourceVersionMatch"}},
      {"not a boolean", {"", "NotOlderThan", "yes", true}, {"sendInitialEvents"}},
      {"not a revision", {"abc", "", "", false}, {"resourceVersion"}},
  };
  for (const ErrorCase& c : cases) {
    const auto got = DecideWatchStart(c.query);
    ASSERT_TRUE(std::holds_alternative<openapi::FieldErrors>(got)) << c.name;
    const auto& errors = std::get<openapi::FieldErrors>(got);
    std::vector<std::string> fields;
    for (const openapi::FieldError& e : errors) {
      fields.push_back(e.field);
      EXPECT_FALSE(e.message.empty()) << c.name;
    }
    EXPECT_EQ(fields, c.fields) << c.name;
  }
}

}  // namespace
}  // namespace sluice::apiserver
