// The kinds of record the dataflow core writes to its write-ahead log: one Record per state
// change, handed to the core's RecordSink and re-executed by DataflowCore::ApplyRecord on
// recovery (dataflow_core.h, "Durability"). The log itself (write_ahead_log.h) stores a record's
// type and payload as opaque u32 and bytes; this header gives them their meaning. The numbers are
// on disk: never reuse or renumber them.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::dataflow {

// One state change, for the write-ahead log. `type` is a RecordType; `payload` is CBOR.
struct Record {
  uint32_t type = 0;
  std::string payload;
};

// The payload of each kind, as the core writes it ("now": the call's wall time in nanoseconds):
//  - kLease: {now, worker, pool, region, capacity, room} (no room in logs written before it was
//    recorded).
//  - kRenew: {now, lease}. kRelease: {now, lease, error}. kExpire: {now}.
//  - kSubmit: the group's wire encoding (client/trajectory_codec.h), not CBOR.
//  - kDuplicateSubmit: {task, attempt}.
//  - kTakeBatch: {now, policy, groups}. kAck: {now, batch} (and hold: true for AckHeld).
//  - kReleaseHeld, kResumeHeld: {now, policy, through}.
//  - kAnnounce: {now, policy} and the VersionInfo's fields (no evaluate in older logs).
enum class RecordType : uint32_t {
  kLease = 1,
  kRenew = 2,
  kRelease = 3,
  kExpire = 4,
  kSubmit = 5,
  kDuplicateSubmit = 6,
  kTakeBatch = 7,
  kAck = 8,
  kAnnounce = 9,
  kReleaseHeld = 10,
  kResumeHeld = 11,
};

}  // namespace sluice::dataflow
