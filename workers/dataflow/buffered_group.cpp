#include "workers/dataflow/buffered_group.h"

#include <exception>
#include <utility>

#include "workers/dataflow/client/trajectory_codec.h"

namespace sluice::dataflow {

Result<nlohmann::json> EncodeBufferedGroup(const BufferedGroup& group) {
  TrajectoryGroup frame;
  frame.task_id = group.task_id;
  frame.prompt_id = group.prompt_id;
  frame.samples = group.samples;
  std::string bytes;
  SLUICE_RETURN_IF_ERROR(EncodeTrajectoryGroup(frame, &bytes));
  nlohmann::json stamps = nlohmann::json::array();
  for (const Sample& s : group.samples) {
    stamps.push_back({s.group_mean.has_value(), s.group_mean.value_or(0.0), s.group_std.has_value(),
                      s.group_std.value_or(0.0), s.advantage.has_value(), s.advantage.value_or(0.0),
                      s.loss_weight});
  }
  nlohmann::json out = {
      {"group_id", group.group_id}, {"arrival", group.arrival}, {"stamps", std::move(stamps)}};
  out["samples"] = nlohmann::json::binary(std::vector<uint8_t>(bytes.begin(), bytes.end()));
  return out;
}

Result<BufferedGroup> DecodeBufferedGroup(const nlohmann::json& encoded) {
  try {
    if (!encoded.is_object() || !encoded.contains("samples") ||
        !encoded.at("samples").is_binary()) {
      return Status::Corruption("a buffered group needs a binary samples frame", "samples");
    }
    const auto& bin = encoded.at("samples").get_binary();
    const std::string_view bytes(reinterpret_cast<const char*>(bin.data()), bin.size());
    Result<TrajectoryGroup> frame = DecodeTrajectoryGroup(bytes);
    if (!frame.ok()) {
      return Status::Corruption("buffered group: " + frame.status().ToString(), "samples");
    }
    BufferedGroup g;
    g.group_id = encoded.at("group_id").get<uint64_t>();
    g.arrival = encoded.at("arrival").get<uint64_t>();
    g.task_id = frame->task_id;
    g.prompt_id = frame->prompt_id;
    g.samples = std::move(frame->samples);
    const nlohmann::json& stamps = encoded.at("stamps");
    if (!stamps.is_array() || stamps.size() != g.samples.size()) {
      return Status::Corruption("one stamp per sample expected", "stamps");
    }
    for (size_t i = 0; i < g.samples.size(); ++i) {
      const nlohmann::json& st = stamps[i];
      if (!st.is_array() || st.size() != 7) {
        return Status::Corruption("a stamp has 7 entries", "stamps");
      }
      Sample& s = g.samples[i];
      s.group_id = g.group_id;
      if (st[0].get<bool>()) s.group_mean = st[1].get<double>();
      if (st[2].get<bool>()) s.group_std = st[3].get<double>();
      if (st[4].get<bool>()) s.advantage = st[5].get<double>();
      s.loss_weight = st[6].get<double>();
    }
    return g;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("buffered group: ") + e.what());
  }
}

}  // namespace sluice::dataflow
