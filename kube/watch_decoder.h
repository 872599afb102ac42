// WatchDecoder: turns the body of a watch response, as it arrives in chunks split at any byte,
// into events. The body is newline-delimited JSON, one metav1.WatchEvent per line:
// {"type":"ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR","object":{...}}. An ERROR event's
// object is a metav1.Status (410 Gone when the requested resourceVersion is too old).
//
// Only the incomplete last line is buffered, never the whole response; a line longer than
// `max_line_bytes` is an error (the stream is then unusable).
//
// Ownership: a value owned by one watch. Thread safety: none; one thread feeds it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// "ADDED", "MODIFIED", ...
const char* WatchEventTypeName(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  std::shared_ptr<const nlohmann::json> object;  // Never null.

  // metadata.resourceVersion of the object ("" for ERROR events and objects without one).
  std::string ResourceVersion() const;
  // For ERROR events: the error the Status object describes.
  Status ErrorStatus() const;
};

class WatchDecoder {
 public:
  explicit WatchDecoder(size_t max_line_bytes = 64u << 20) : max_line_(max_line_bytes) {}

  // Decodes every complete line in `chunk` (after what earlier chunks left) and hands each
  // event to `on_event`, which returns false to stop (the rest of the chunk is kept). Errors: a
  // line that is not a watch event, or one over the size limit; the decoder stays failed.
  Status Feed(std::string_view chunk, const std::function<bool(WatchEvent)>& on_event);

  // Bytes of an incomplete line held back.
  size_t buffered() const { return buffer_.size(); }

 private:
  Status DecodeLine(std::string_view line, WatchEvent& out) const;

  size_t max_line_;
  std::string buffer_;
  Status failed_;
};

}  // namespace sluice::kube
