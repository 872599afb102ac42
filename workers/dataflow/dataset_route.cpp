#include "workers/dataflow/dataset_route.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/http/json_body.h"
#include "workers/dataflow/request_fields.h"

namespace sluice::dataflow {

using nlohmann::json;

Result<TrainPageQuery> ParseTrainPageQuery(const httplib::Params& params) {
  for (const char* key : {"offset", "limit"}) {
    if (params.count(key) > 1) return BadField("must be given at most once", key);
  }
  TrainPageQuery q;
  SLUICE_RETURN_IF_ERROR(QueryInt(params, "offset", q.offset));
  if (q.offset < 0) return BadField("must be >= 0", "offset");
  SLUICE_RETURN_IF_ERROR(QueryInt(params, "limit", q.limit));
  if (q.limit < 1 || q.limit > kMaxTrainPageRows) {
    return BadField("must be in [1, " + std::to_string(kMaxTrainPageRows) + "]", "limit");
  }
  return q;
}

json TrainPageJson(const Dataset& dataset, const TrainPageQuery& query) {
  const auto total = static_cast<int64_t>(dataset.train_size());
  const int64_t begin = std::min(std::max<int64_t>(query.offset, 0), total);
  const int64_t end = begin + std::min(std::max<int64_t>(query.limit, 0), total - begin);
  json rows = json::array();
  for (int64_t i = begin; i < end; ++i) {
    const PromptRow& r = dataset.train(static_cast<size_t>(i));
    json row = {{"id", r.id}, {"prompt", r.prompt}, {"answer", r.answer}};
    // A calculator agent's warm start calls the calculator on it (trainer/calculator_warm_start.h).
    if (r.row.is_object()) {
      if (auto it = r.row.find("expression"); it != r.row.end() && it->is_string()) {
        row["expression"] = *it;
      }
    }
    rows.push_back(std::move(row));
  }
  return {{"total", total}, {"offset", query.offset}, {"rows", std::move(rows)}};
}

void ServeTrainRows(const Dataset& dataset, const httplib::Request& req, httplib::Response& res) {
  Result<TrainPageQuery> query = ParseTrainPageQuery(req.params);
  if (!query.ok()) return http::ReplyError(res, query.status());
  http::ReplyJson(res, TrainPageJson(dataset, *query));
}

}  // namespace sluice::dataflow
