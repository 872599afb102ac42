// DataflowCore and its write-ahead log records (wal_records.h): Emit hands the record of a state
// change to the sink, and ApplyRecord re-executes one during recovery, at the wall time it was
// written, so the deterministic core reaches the same state (dataflow_core.h, "Durability").
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "workers/dataflow/client/trajectory_codec.h"
#include "workers/dataflow/dataflow_core.h"
#include "workers/dataflow/dataflow_core_state.h"
#include "workers/dataflow/wal_records.h"

namespace sluice::dataflow {

using core_internal::VersionFromJson;
using nlohmann::json;

void DataflowCore::Emit(RecordType type, json payload) {
  if (replaying_ || !sink_) return;
  const std::vector<uint8_t> bytes = json::to_cbor(payload);
  sink_(Record{static_cast<uint32_t>(type), std::string(bytes.begin(), bytes.end())});
}

Status DataflowCore::ApplyRecord(const Record& record) {
  std::lock_guard<std::mutex> lock(mu_);
  struct Replaying {
    bool& flag;
    explicit Replaying(bool& f) : flag(f) { flag = true; }
    ~Replaying() { flag = false; }
  } replaying(replaying_);
  dirty_ = false;
  const auto type = static_cast<RecordType>(record.type);
  const std::string what = "record type " + std::to_string(record.type);
  if (type == RecordType::kSubmit) {
    Result<TrajectoryGroup> group = DecodeTrajectoryGroup(record.payload);
    if (!group.ok()) return Status::Corruption(what + ": " + group.status().ToString());
    Result<SubmitResult> r = SubmitLocked(*group);
    if (!r.ok()) return Status::Corruption(what + " does not apply: " + r.status().ToString());
    changed_.notify_all();
    return Status::Ok();
  }
  Status applied;
  try {
    const json j = json::from_cbor(record.payload);
    switch (type) {
      case RecordType::kLease: {
        LeaseRequest request;
        request.worker_id = j.at("worker").get<std::string>();
        request.pool = j.at("pool").get<std::string>();
        request.region = j.at("region").get<std::string>();
        request.capacity = j.at("capacity").get<int64_t>();
        // Logs written before the room was recorded were granted under the capacity limit alone.
        std::optional<int64_t> room;
        if (j.contains("room")) room = j.at("room").get<int64_t>();
        LeaseLocked(request, j.at("now").get<int64_t>(), room, nullptr, !room.has_value());
        break;
      }
      case RecordType::kRenew:
        applied = RenewLocked(j.at("lease").get<std::string>(), j.at("now").get<int64_t>());
        break;
      case RecordType::kRelease:
        applied = ReleaseLocked(j.at("lease").get<std::string>(), j.at("error").get<std::string>());
        break;
      case RecordType::kExpire:
        ExpireLocked(j.at("now").get<int64_t>());
        break;
      case RecordType::kDuplicateSubmit:
        ++counters_->duplicates;
        break;
      case RecordType::kTakeBatch:
        applied = TakeBatchLocked(j.at("policy").get<std::string>(), j.at("groups").get<int64_t>(),
                                  j.at("now").get<int64_t>())
                      .status();
        break;
      case RecordType::kAck:
        applied = AckLocked(j.at("batch").get<std::string>(), j.value("hold", false)).status();
        break;
      case RecordType::kReleaseHeld:
        applied =
            ReleaseHeldLocked(j.at("policy").get<std::string>(), j.at("through").get<int64_t>())
                .status();
        break;
      case RecordType::kResumeHeld:
        applied =
            ResumeHeldLocked(j.at("policy").get<std::string>(), j.at("through").get<int64_t>())
                .status();
        break;
      case RecordType::kAnnounce:
        applied = AnnounceLocked(j.at("policy").get<std::string>(), VersionFromJson(j));
        break;
      default:
        return Status::Corruption("unknown " + what);
    }
  } catch (const std::exception& e) {
    return Status::Corruption(what + ": " + e.what());
  }
  if (!applied.ok()) return Status::Corruption(what + " does not apply: " + applied.ToString());
  changed_.notify_all();
  return Status::Ok();
}

}  // namespace sluice::dataflow
