#include "kube/watch_decoder.h"

#include <cstdint>
#include <optional>
#include <string>

#include "common/json/fields.h"
#include "common/json/json_depth.h"
#include "kube/errors.h"

namespace sluice::kube {

const char* WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

std::string WatchEvent::ResourceVersion() const {
  const auto md = object->find("metadata");
  if (md == object->end() || !md->is_object()) return "";
  const auto rv = md->find("resourceVersion");
  return rv != md->end() && rv->is_string() ? rv->get<std::string>() : "";
}

Status WatchEvent::ErrorStatus() const {
  // The object is the server's: a code of another type, or out of HTTP's range, reads as 500.
  const int64_t code = IntField(*object, "code", 500);
  ApiError err =
      ParseApiError(code >= 100 && code <= 599 ? static_cast<int>(code) : 500, object->dump(), "");
  return err.ToStatus();
}

Status WatchDecoder::DecodeLine(std::string_view line, WatchEvent& out) const {
  if (const std::optional<size_t> at = FirstTooDeepJson(line)) {
    return Status::Corruption("watch stream line nests deeper than " +
                              std::to_string(kMaxJsonDepth) + " levels (at byte " +
                              std::to_string(*at) + ")");
  }
  nlohmann::json doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Corruption("watch stream line is not a JSON object: " +
                              std::string(line.substr(0, 120)));
  }
  const auto type = doc.find("type");
  const auto object = doc.find("object");
  if (type == doc.end() || !type->is_string() || object == doc.end() || !object->is_object()) {
    return Status::Corruption("watch event needs a string \"type\" and an object \"object\"");
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "ADDED") {
    out.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    out.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    out.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    out.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    out.type = WatchEventType::kError;
  } else {
    return Status::Corruption("unknown watch event type \"" + t + "\"");
  }
  out.object = std::make_shared<const nlohmann::json>(std::move(*object));
  return Status::Ok();
}

Status WatchDecoder::Feed(std::string_view chunk, const std::function<bool(WatchEvent)>& on_event) {
  if (!failed_.ok()) return failed_;
  buffer_.append(chunk);
  size_t start = 0;
  bool stopped = false;
  while (!stopped) {
    const size_t nl = buffer_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(buffer_.data() + start, nl - start);
    start = nl + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    WatchEvent event;
    Status s = DecodeLine(line, event);
    if (!s.ok()) {
      failed_ = s;
      buffer_.clear();
      return s;
    }
    stopped = !on_event(std::move(event));
  }
  buffer_.erase(0, start);
  if (buffer_.size() > max_line_) {
    failed_ = Status::TooLarge("watch event over " + std::to_string(max_line_) + " bytes");
    buffer_.clear();
    return failed_;
  }
  return Status::Ok();
}

}  // namespace sluice::kube
