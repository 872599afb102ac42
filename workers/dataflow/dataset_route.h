// GET /v1/dataset/train?offset=N&limit=M: pages of the Dataflow's train split, for a trainer that
// runs a supervised warm start (SFT) on the same prompts before RL. The eval split is never
// served here: the held-out rows stay held out.
//
// Reply: 200 {"total": <train split rows>, "offset": N, "rows": [{"id", "prompt", "answer"},
// ...]}, each row with "expression" too when the dataset row has that field as a string (the
// built-in generators write it; a calculator agent's warm start calls the calculator on it),
// with train rows N .. N+M-1 in train-split order (Dataset::train(i)), clamped at the end
// of the split: an offset at or past the end gives an empty "rows". Units are rows. `offset`
// defaults to 0 and must be >= 0; `limit` defaults to kDefaultTrainPageRows and must be in
// [1, kMaxTrainPageRows]; a malformed or out-of-range parameter, or one given twice, is 400
// naming it in the error's field. Other query parameters are ignored.
//
// Thread safety: the Dataset is immutable, so every function here may run on any number of
// server threads at once. ParseTrainPageQuery and TrainPageJson are pure.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "workers/dataflow/client/dataset.h"

namespace sluice::dataflow {

// Rows per page when the request names no limit, and the most one page may ask for.
inline constexpr int64_t kDefaultTrainPageRows = 1000;
inline constexpr int64_t kMaxTrainPageRows = 10000;

struct TrainPageQuery {
  int64_t offset = 0;                     // First train row, 0-based; >= 0.
  int64_t limit = kDefaultTrainPageRows;  // Rows wanted; in [1, kMaxTrainPageRows].
  friend bool operator==(const TrainPageQuery&, const TrainPageQuery&) = default;
};

// The query of a request from its decoded parameters. InvalidArgument naming "offset" or
// "limit" when one is not a decimal integer, out of range, or given more than once.
Result<TrainPageQuery> ParseTrainPageQuery(const httplib::Params& params);

// The reply body for `query` (see the header comment).
nlohmann::json TrainPageJson(const Dataset& dataset, const TrainPageQuery& query);

// Answers one request: 200 with TrainPageJson, or the 400 of ParseTrainPageQuery.
void ServeTrainRows(const Dataset& dataset, const httplib::Request& req, httplib::Response& res);

}  // namespace sluice::dataflow
