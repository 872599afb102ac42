// GET /v1/dataset/train: the query parameters (a table), the page body, and the route over real
// HTTP (a DataflowService on an in-process server with a real log in a temporary directory) with
// DataflowClient::TrainRows and AllTrainRows.
#include "workers/dataflow/dataset_route.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/http/client.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "common/metrics/registry.h"
#include "tests/support/test_client.h"
#include "tests/unit/workers/dataflow/sample_fixtures.h"
#include "workers/dataflow/client/dataflow_client.h"
#include "workers/dataflow/client/dataset.h"
#include "workers/dataflow/dataflow_service.h"

namespace sluice::dataflow {
namespace dataset_route_test {

using fixtures::MakeDataset;
using nlohmann::json;

struct QueryCase {
  const char* name;
  httplib::Params params;
  std::optional<TrainPageQuery> want;  // nullopt: InvalidArgument naming `field`.
  std::string field;
};

TEST(ParseTrainPageQueryTest, Table) {
  constexpr int64_t kMaxOffset = std::numeric_limits<int64_t>::max();
  const std::vector<QueryCase> cases = {
      {"defaults", {}, TrainPageQuery{0, 1000}, ""},
      {"offset only", {{"offset", "5"}}, TrainPageQuery{5, 1000}, ""},
      {"limit only", {{"limit", "1"}}, TrainPageQuery{0, 1}, ""},
      {"both", {{"offset", "12"}, {"limit", "34"}}, TrainPageQuery{12, 34}, ""},
      {"largest limit", {{"limit", "10000"}}, TrainPageQuery{0, 10000}, ""},
      {"largest offset",
       {{"offset", std::to_string(kMaxOffset)}},
       TrainPageQuery{kMaxOffset, 1000},
       ""},
      {"other parameters are ignored", {{"page", "3"}, {"wait", "x"}}, TrainPageQuery{0, 1000}, ""},
      {"negative offset", {{"offset", "-1"}}, std::nullopt, "offset"},
      {"offset not a number", {{"offset", "abc"}}, std::nullopt, "offset"},
      {"empty offset", {{"offset", ""}}, std::nullopt, "offset"},
      {"fractional offset", {{"offset", "1.5"}}, std::nullopt, "offset"},
      {"offset with a plus sign", {{"offset", "+3"}}, std::nullopt, "offset"},
      {"offset with a space", {{"offset", " 3"}}, std::nullopt, "offset"},
      {"offset with a suffix", {{"offset", "3x"}}, std::nullopt, "offset"},
      {"offset overflows int64", {{"offset", "9223372036854775808"}}, std::nullopt, "offset"},
      {"offset given twice", {{"offset", "1"}, {"offset", "2"}}, std::nullopt, "offset"},
      {"zero limit", {{"limit", "0"}}, std::nullopt, "limit"},
      {"negative limit", {{"limit", "-5"}}, std::nullopt, "limit"},
      {"limit over the maximum", {{"limit", "10001"}}, std::nullopt, "limit"},
      {"limit not a number", {{"limit", "many"}}, std::nullopt, "limit"},
      {"hex limit", {{"limit", "0x10"}}, std::nullopt, "limit"},
      {"limit given twice", {{"limit", "5"}, {"limit", "5"}}, std::nullopt, "limit"},
      {"good offset, bad limit", {{"offset", "7"}, {"limit", "0"}}, std::nullopt, "limit"},
      {"both bad: offset first", {{"offset", "-1"}, {"limit", "0"}}, std::nullopt, "offset"},
  };
  for (const QueryCase& c : cases) {
    SCOPED_TRACE(c.name);
    Result<TrainPageQuery> got = ParseTrainPageQuery(c.params);
    if (c.want.has_value()) {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->offset, c.want->offset);
      EXPECT_EQ(got->limit, c.want->limit);
    } else {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(got.status().field(), c.field) << got.status().ToString();
    }
  }
}

TEST(ParseTrainPageQueryTest, DefaultsAreTheDocumentedOnes) {
  EXPECT_EQ(kDefaultTrainPageRows, 1000);
  EXPECT_EQ(kMaxTrainPageRows, 10000);
  EXPECT_EQ(ParseTrainPageQuery({}).value(), (TrainPageQuery{0, kDefaultTrainPageRows}));
}

class TrainPageJsonTest : public ::testing::Test {
 protected:
  // Rows i .. i+n-1 of the train split as the route writes them.
  json TrainRows(int64_t first, int64_t n) const {
    json rows = json::array();
    for (auto i = static_cast<size_t>(first); i < static_cast<size_t>(first + n); ++i) {
      const PromptRow& r = dataset_.train(i);
      // The built-in generator's rows have an expression, which the route passes on.
      rows.push_back({{"id", r.id},
                      {"prompt", r.prompt},
                      {"answer", r.answer},
                      {"expression", r.row.at("expression")}});
    }
    return rows;
  }

  // 2 eval rows; 8 train rows, less any that repeats an eval prompt.
  Dataset dataset_ = fixtures::MakeDataset(10, 0.2);
};

TEST_F(TrainPageJsonTest, PagesOfTheTrainSplitClampedAtItsEnd) {
  ASSERT_EQ(dataset_.eval_size(), 2U);
  const auto n = static_cast<int64_t>(dataset_.train_size());
  ASSERT_GE(n, 6);
  EXPECT_EQ(TrainPageJson(dataset_, {0, 3}),
            json({{"total", n}, {"offset", 0}, {"rows", TrainRows(0, 3)}}));
  EXPECT_EQ(TrainPageJson(dataset_, {3, 3}),
            json({{"total", n}, {"offset", 3}, {"rows", TrainRows(3, 3)}}));
  EXPECT_EQ(TrainPageJson(dataset_, {n - 2, 5}),
            json({{"total", n}, {"offset", n - 2}, {"rows", TrainRows(n - 2, 2)}}));
  EXPECT_EQ(TrainPageJson(dataset_, {0, 1000}),
            json({{"total", n}, {"offset", 0}, {"rows", TrainRows(0, n)}}));
  for (int64_t past : {n, n + 1, std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(TrainPageJson(dataset_, {past, 10000}),
              json({{"total", n}, {"offset", past}, {"rows", json::array()}}))
        << past;
  }
}

// "expression" is passed on only when the row has it as a string (JSONL rows may lack it).
TEST(TrainPageJsonRowTest, ExpressionOnlyWhenTheRowHasOneAsAString) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("sluice-train-expression-" + std::to_string(::getpid()) + ".jsonl"))
                               .string();
  {
    std::ofstream out(path);
    out << R"({"id": "a", "prompt": "p1", "answer": "1", "expression": "0 + 1"})"
        << "\n"
        << R"({"id": "b", "prompt": "p2", "answer": "2"})"
        << "\n"
        << R"({"id": "c", "prompt": "p3", "answer": "3", "expression": 3})"
        << "\n";
  }
  DatasetSource src;
  src.file = path;
  Result<Dataset> dataset = Dataset::Load(src);
  std::filesystem::remove(path);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  const json page = TrainPageJson(*dataset, {0, 10});
  EXPECT_EQ(page.at("rows"),
            json::parse(R"([{"id": "a", "prompt": "p1", "answer": "1", "expression": "0 + 1"},
                            {"id": "b", "prompt": "p2", "answer": "2"},
                            {"id": "c", "prompt": "p3", "answer": "3"}])"));
}

TEST_F(TrainPageJsonTest, NeverAnEvalRow) {
  std::set<std::string> eval_ids;
  for (size_t i = 0; i < dataset_.eval_size(); ++i) eval_ids.insert(dataset_.eval(i).id);
  std::set<std::string> served;
  for (int64_t offset = 0; offset < 10; ++offset) {  // Past the end too.
    const json page = TrainPageJson(dataset_, {offset, 1});
    for (const json& row : page.at("rows")) {
      const std::string id = row.at("id").get<std::string>();
      EXPECT_EQ(eval_ids.count(id), 0U) << id;
      served.insert(id);
    }
  }
  EXPECT_EQ(served.size(), dataset_.train_size());  // Every train row.
}

// ---- The route over real HTTP. ----

constexpr char kToken[] = "train-route-test-token";

class TrainRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-train-route-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown();
    if (service_) {
      EXPECT_TRUE(service_->Stop().ok());
    }
    service_.reset();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartService() {
    http::ServerOptions so;
    so.name = "train-route-test";
    so.auth = http::TokenSource::FromValue(kToken);
    so.access_log = false;
    so.shutdown_grace = std::chrono::milliseconds(2000);
    server_ = std::make_unique<http::Server>(so, &registry_, logger_);
    DataflowServiceOptions opts;
    opts.wal.dir = dir_ + "/wal";
    DataflowConfig config;
    config.policies = {"actor"};
    service_ = std::make_unique<DataflowService>(opts, std::move(config), &dataset_, &clock_,
                                                 &registry_, logger_);
    service_->Register(*server_);
    ASSERT_TRUE(server_->Start().ok());
    const sluice::Status recovered = service_->Recover();
    ASSERT_TRUE(recovered.ok()) << recovered.ToString();
    client_ = MakeClient(kToken);
  }

  std::unique_ptr<http::Client> MakeClient(const std::string& token) {
    return ::sluice::test_support::TestClient(server_->BaseUrl(), token);
  }

  http::Response Must(Result<http::Response> r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : http::Response{};
  }

  // The core's status (what a request may change).
  json CoreStatus() {
    http::Response r = Must(client_->Get("/v1/status"));
    EXPECT_EQ(r.status, 200) << r.body;
    json s = json::parse(r.body);
    for (const char* k : {"wal", "recovery", "trainer_wait", "ready"}) s.erase(k);
    return s;
  }

  FakeClock clock_;
  Dataset dataset_ = MakeDataset(50, 0.2);  // 10 eval rows.
  log::Logger logger_{"train-route-test"};
  metrics::Registry registry_;
  std::string dir_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<DataflowService> service_;
  std::unique_ptr<http::Client> client_;
};

// GET /v1/dataset/train serves the train split in order, page by page, and never an eval row.
TEST_F(TrainRouteTest, ServesTrainRowsOnly) {
  ASSERT_EQ(dataset_.eval_size(), 10U);
  const size_t n = dataset_.train_size();  // 40, less any row repeating an eval prompt.
  ASSERT_GE(n, 30U);
  StartService();
  const json before = CoreStatus();
  auto page = [&](const std::string& query) {
    http::Response r = Must(client_->Get("/v1/dataset/train" + query));
    EXPECT_EQ(r.status, 200) << query << ": " << r.body;
    return r.status == 200 ? json::parse(r.body) : json::object();
  };
  auto expect_rows = [&](const json& reply, size_t first, size_t count) {
    ASSERT_TRUE(reply.contains("rows") && reply.at("rows").is_array()) << reply.dump();
    ASSERT_EQ(reply.at("rows").size(), count) << reply.dump();
    for (size_t i = 0; i < count; ++i) {
      const PromptRow& want = dataset_.train(first + i);
      const json& got = reply.at("rows")[i];
      EXPECT_EQ(got, json({{"id", want.id},
                           {"prompt", want.prompt},
                           {"answer", want.answer},
                           {"expression", want.row.at("expression")}}))
          << "row " << first + i;
    }
  };

  json all = page("");  // Defaults: offset 0, limit 1000.
  EXPECT_EQ(all["total"], n);
  EXPECT_EQ(all["offset"], 0);
  expect_rows(all, 0, n);
  std::set<std::string> eval_ids;
  for (size_t i = 0; i < dataset_.eval_size(); ++i) eval_ids.insert(dataset_.eval(i).id);
  for (const json& row : all["rows"]) {
    EXPECT_EQ(eval_ids.count(row["id"].get<std::string>()), 0U) << row.dump();
  }

  expect_rows(page("?limit=3"), 0, 3);
  json middle = page("?offset=10&limit=7");
  EXPECT_EQ(middle["offset"], 10);
  expect_rows(middle, 10, 7);
  expect_rows(page("?offset=" + std::to_string(n - 5) + "&limit=10"), n - 5, 5);  // Clamped.
  for (const std::string& past :
       {"?offset=" + std::to_string(n), "?offset=" + std::to_string(n + 1) + "&limit=1",
        std::string("?offset=1000000&limit=10000")}) {
    json empty = page(past);
    EXPECT_EQ(empty["total"], n) << past;
    EXPECT_EQ(empty["rows"], json::array()) << past;
  }
  EXPECT_EQ(page("?offset=" + std::to_string(n))["offset"], n);

  // Bad parameters: 400 naming the parameter.
  for (const auto& [query, field] :
       std::vector<std::pair<std::string, std::string>>{{"?offset=-1", "offset"},
                                                        {"?offset=x", "offset"},
                                                        {"?offset=", "offset"},
                                                        {"?offset=1&offset=2", "offset"},
                                                        {"?limit=0", "limit"},
                                                        {"?limit=10001", "limit"},
                                                        {"?limit=2.5", "limit"},
                                                        {"?offset=3&limit=-4", "limit"}}) {
    http::Response r = Must(client_->Get("/v1/dataset/train" + query));
    EXPECT_EQ(r.status, 400) << query << ": " << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["field"], field) << query << ": " << r.body;
  }
  // The same authentication as every /v1 route.
  EXPECT_EQ(Must(MakeClient("not-the-token")->Get("/v1/dataset/train")).status, 401);
  EXPECT_EQ(CoreStatus(), before);  // Reading the dataset changes nothing.
}

// DataflowClient::TrainRows and AllTrainRows against the real route.
TEST_F(TrainRouteTest, ClientReadsTheTrainSplitPageByPage) {
  const auto n = static_cast<int64_t>(dataset_.train_size());
  ASSERT_GE(n, 30);
  StartService();
  DataflowClient dataflow{std::shared_ptr<http::Client>(MakeClient(kToken))};
  auto expect_train_rows = [&](const std::vector<PromptRow>& rows, size_t first) {
    for (size_t i = 0; i < rows.size(); ++i) {
      const PromptRow& want = dataset_.train(first + i);
      EXPECT_EQ(rows[i].id, want.id) << first + i;
      EXPECT_EQ(rows[i].prompt, want.prompt) << first + i;
      EXPECT_EQ(rows[i].answer, want.answer) << first + i;
      // Only the expression of the row's other fields travels (a warm start's calculator call).
      EXPECT_EQ(rows[i].row, json({{"expression", want.row.at("expression")}})) << first + i;
    }
  };
  Result<TrainRowsPage> first = dataflow.TrainRows(0, 7);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->total, n);
  ASSERT_EQ(first->rows.size(), 7U);
  expect_train_rows(first->rows, 0);
  Result<TrainRowsPage> last = dataflow.TrainRows(n - 2, 7);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  ASSERT_EQ(last->rows.size(), 2U);
  expect_train_rows(last->rows, static_cast<size_t>(n - 2));
  Result<TrainRowsPage> past = dataflow.TrainRows(n, 7);
  ASSERT_TRUE(past.ok()) << past.status().ToString();
  EXPECT_EQ(past->total, n);
  EXPECT_TRUE(past->rows.empty());

  Result<TrainRowsPage> bad = dataflow.TrainRows(-1, 5);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().field(), "offset");
  bad = dataflow.TrainRows(0, 0);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().field(), "limit");

  for (int64_t page_rows : {int64_t{1}, int64_t{7}, n, int64_t{1000}}) {
    Result<std::vector<PromptRow>> all = dataflow.AllTrainRows(page_rows);
    ASSERT_TRUE(all.ok()) << page_rows << ": " << all.status().ToString();
    ASSERT_EQ(static_cast<int64_t>(all->size()), n) << page_rows;
    expect_train_rows(*all, 0);
  }
  EXPECT_EQ(dataflow.AllTrainRows(0).status().field(), "limit");
  EXPECT_EQ(static_cast<int64_t>(dataflow.AllTrainRows()->size()), n);
}

}  // namespace dataset_route_test
}  // namespace sluice::dataflow
