#include "workers/rollout/leased_task.h"

#include <limits>
#include <string>
#include <utility>

namespace sluice::rollout {
namespace {

using nlohmann::json;

Status Bad(const std::string& field, const std::string& message) {
  return Status::InvalidArgument(message, field);
}

// Reads an optional string field; absent or null leaves *out alone.
Status ReadString(const json& j, const char* key, const std::string& where, std::string* out,
                  bool required = false) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? Bad(where + "." + key, "is required") : Status::Ok();
  }
  if (!it->is_string()) return Bad(where + "." + key, "must be a string");
  *out = it->get<std::string>();
  if (required && out->empty()) return Bad(where + "." + key, "must not be empty");
  return Status::Ok();
}

Status ReadInt(const json& j, const char* key, const std::string& where, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) return Bad(where + "." + key, "must be an integer");
  *out = it->get<int64_t>();
  return Status::Ok();
}

}  // namespace

Result<LeasedTask> ParseLeasedTask(const json& j) {
  const std::string where = "task";
  if (!j.is_object()) return Bad(where, "must be an object");
  LeasedTask t;
  SLUICE_RETURN_IF_ERROR(ReadString(j, "task_id", where, &t.task_id, true));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "lease_id", where, &t.lease_id, true));
  int64_t attempt = 1;
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "attempt", where, &attempt));
  if (attempt < 1 || attempt > std::numeric_limits<uint32_t>::max()) {
    return Bad(where + ".attempt", "must be in [1, 2^32)");
  }
  t.attempt = static_cast<uint32_t>(attempt);
  if (auto it = j.find("eval"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return Bad(where + ".eval", "must be a boolean");
    t.eval = it->get<bool>();
  }
  SLUICE_RETURN_IF_ERROR(ReadString(j, "prompt_id", where, &t.prompt_id));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "prompt", where, &t.prompt));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "answer", where, &t.answer));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "dataset", where, &t.dataset));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "samples", where, &t.samples));
  if (t.samples < 1 || t.samples > 4096) return Bad(where + ".samples", "must be in [1, 4096]");
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "deadline_unix_ms", where, &t.deadline_unix_ms));
  for (const char* key : {"row", "sampling", "workflow"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_object()) return Bad(where + "." + key, "must be an object");
  }
  if (auto it = j.find("row"); it != j.end() && it->is_object()) t.row = *it;
  if (auto it = j.find("sampling"); it != j.end() && it->is_object()) t.sampling = *it;
  if (auto it = j.find("workflow"); it != j.end() && it->is_object()) t.workflow = *it;
  return t;
}

Result<engine::SamplingParams> TaskSamplingParams(const json& sampling, int32_t n) {
  if (!sampling.is_object()) return Bad("sampling", "must be an object");
  engine::SamplingParams p;
  p.temperature = 1.0;
  p.top_p = 1.0;
  p.top_k = 0;
  p.max_new_tokens = 512;
  p.n = n;
  auto number = [&](const char* key, double* out) -> Status {
    auto it = sampling.find(key);
    if (it == sampling.end() || it->is_null()) return Status::Ok();
    if (!it->is_number()) return Bad(std::string("sampling.") + key, "must be a number");
    *out = it->get<double>();
    return Status::Ok();
  };
  auto integer = [&](const char* key, int32_t* out) -> Status {
    auto it = sampling.find(key);
    if (it == sampling.end() || it->is_null()) return Status::Ok();
    if (!it->is_number_integer()) return Bad(std::string("sampling.") + key, "must be an integer");
    const int64_t v = it->get<int64_t>();
    if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
      return Bad(std::string("sampling.") + key, "out of range");
    }
    *out = static_cast<int32_t>(v);
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(number("temperature", &p.temperature));
  SLUICE_RETURN_IF_ERROR(number("topP", &p.top_p));
  SLUICE_RETURN_IF_ERROR(integer("topK", &p.top_k));
  SLUICE_RETURN_IF_ERROR(integer("maxNewTokens", &p.max_new_tokens));
  if (auto it = sampling.find("stop"); it != sampling.end() && !it->is_null()) {
    if (!it->is_array()) return Bad("sampling.stop", "must be a list of strings");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return Bad("sampling.stop[" + std::to_string(i) + "]", "must be a string");
      }
      p.stop.push_back((*it)[i].get<std::string>());
    }
  }
  SLUICE_RETURN_IF_ERROR(engine::Validate(p));
  return p;
}

}  // namespace sluice::rollout
