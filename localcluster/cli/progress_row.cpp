#include "localcluster/cli/progress_row.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

template <typename T>
void Put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

Status WrongType(const char* key, const char* want) {
  return Status::InvalidArgument(std::string("\"") + key + "\" is not " + want, key);
}

Status ReadInt(const json& j, const char* key, std::optional<int64_t>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) return WrongType(key, "an integer");
  *out = it->get<int64_t>();
  return Status::Ok();
}

Status ReadDouble(const json& j, const char* key, std::optional<double>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return WrongType(key, "a number");
  *out = it->get<double>();
  return Status::Ok();
}

Status ReadString(const json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return WrongType(key, "a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadCounts(const json& j, const char* key, std::map<std::string, int64_t>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return WrongType(key, "an object");
  for (auto entry = it->begin(); entry != it->end(); ++entry) {
    if (!entry.value().is_number_integer()) return WrongType(key, "a map of integers");
    (*out)[entry.key()] = entry.value().get<int64_t>();
  }
  return Status::Ok();
}

}  // namespace

json ProgressRowToJson(const ProgressRow& row) {
  json j = json::object();
  j["t"] = row.t;
  j["trainer"] = row.trainer;
  if (!row.phase.empty()) j["phase"] = row.phase;
  Put(j, "step", row.step);
  Put(j, "steps", row.steps);
  Put(j, "version", row.version);
  Put(j, "rewardMean", row.reward_mean);
  Put(j, "loss", row.loss);
  Put(j, "stalenessMean", row.staleness_mean);
  Put(j, "trainTokensPerSecond", row.train_tokens_per_second);
  Put(j, "dataWaitShare", row.data_wait_share);
  Put(j, "buffered", row.buffered);
  Put(j, "trajectoriesPerSecond", row.trajectories_per_second);
  Put(j, "evalAccuracy", row.eval_accuracy);
  Put(j, "evalVersion", row.eval_version);
  Put(j, "rolloutTokensPerSecond", row.rollout_tokens_per_second);
  Put(j, "replicasTotal", row.replicas_total);
  Put(j, "readyTotal", row.ready_total);
  if (!row.region_replicas.empty()) j["replicas"] = row.region_replicas;
  if (!row.region_ready.empty()) j["ready"] = row.region_ready;
  return j;
}

Result<ProgressRow> ProgressRowFromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("not a JSON object");
  ProgressRow row;
  auto t = j.find("t");
  if (t == j.end() || !t->is_number()) return WrongType("t", "a number");
  row.t = t->get<double>();
  SLUICE_RETURN_IF_ERROR(ReadString(j, "trainer", &row.trainer));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "phase", &row.phase));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "step", &row.step));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "steps", &row.steps));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "version", &row.version));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "rewardMean", &row.reward_mean));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "loss", &row.loss));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "stalenessMean", &row.staleness_mean));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "trainTokensPerSecond", &row.train_tokens_per_second));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "dataWaitShare", &row.data_wait_share));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "buffered", &row.buffered));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "trajectoriesPerSecond", &row.trajectories_per_second));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "evalAccuracy", &row.eval_accuracy));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "evalVersion", &row.eval_version));
  SLUICE_RETURN_IF_ERROR(ReadDouble(j, "rolloutTokensPerSecond", &row.rollout_tokens_per_second));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "replicasTotal", &row.replicas_total));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "readyTotal", &row.ready_total));
  SLUICE_RETURN_IF_ERROR(ReadCounts(j, "replicas", &row.region_replicas));
  SLUICE_RETURN_IF_ERROR(ReadCounts(j, "ready", &row.region_ready));
  return row;
}

}  // namespace sluice::cli
