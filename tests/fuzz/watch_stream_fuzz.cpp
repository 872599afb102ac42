// libFuzzer target for the watch stream decoder (kube/watch_decoder.h: WatchDecoder::Feed and
// the WatchEvent accessors).
//
// Each input is the body of a watch response. It is decoded twice: fed whole, and fed in
// pseudo-random chunks (derived from the input) with a consumer that now and then asks Feed to
// stop (and is then fed empty chunks until the held lines are drained). Lines are decoded one by
// one from the bytes alone, so both must give the same events in the same order and end the same
// way (the same error, or OK holding exactly the bytes after the last newline). Every event's
// object is a JSON object; ResourceVersion() and ErrorStatus() do not crash.
//
// Fuzz it with `scripts/fuzz.sh watch_stream [seconds]` (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/crc32c.h"
#include "common/json/json_depth.h"
#include "common/splitmix64.h"
#include "common/status.h"
#include "kube/watch_decoder.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using sluice::Status;
using sluice::kube::WatchDecoder;
using sluice::kube::WatchEvent;
using sluice::kube::WatchEventType;

constexpr size_t kMaxInputBytes = 64 * 1024;

using sluice::fuzz::Require;

struct Decoded {
  std::vector<WatchEvent> events;
  Status status;
  size_t buffered = 0;
};

Decoded FeedWhole(std::string_view input) {
  Decoded out;
  WatchDecoder decoder;
  out.status = decoder.Feed(input, [&](WatchEvent e) {
    out.events.push_back(std::move(e));
    return true;
  });
  out.buffered = decoder.buffered();
  return out;
}

Decoded FeedInChunks(std::string_view input, uint64_t seed) {
  Decoded out;
  WatchDecoder decoder;
  uint64_t state = sluice::SplitMix64(seed);
  // Stop after every `stop_every`-th event (0: never).
  const size_t stop_every = static_cast<size_t>(state % 4);
  bool stopped = false;
  auto sink = [&](WatchEvent e) {
    out.events.push_back(std::move(e));
    stopped = stop_every != 0 && out.events.size() % stop_every == 0;
    return !stopped;
  };
  size_t fed = 0;
  while (out.status.ok() && fed < input.size()) {
    state = sluice::SplitMix64(state);
    const size_t limit = (state & 7) == 0 ? 2048 : 48;
    const size_t n = std::min<size_t>(1 + (state >> 8) % limit, input.size() - fed);
    stopped = false;
    out.status = decoder.Feed(input.substr(fed, n), sink);
    fed += n;
    // Each call after a stop delivers at least the next held event, so this ends.
    while (out.status.ok() && stopped) {
      stopped = false;
      out.status = decoder.Feed("", sink);
    }
  }
  if (out.status.ok()) {
    // Fed nothing (empty input) or drained: a last empty feed changes nothing.
    Require(decoder.Feed("", sink).ok(), "an empty feed after a clean stream");
  } else {
    Require(decoder.Feed("x\n", sink) == out.status, "the decoder stays failed");
  }
  out.buffered = decoder.buffered();
  return out;
}

bool KnownType(WatchEventType type) {
  return type == WatchEventType::kAdded || type == WatchEventType::kModified ||
         type == WatchEventType::kDeleted || type == WatchEventType::kBookmark ||
         type == WatchEventType::kError;
}

void CheckEvent(const WatchEvent& e) {
  Require(KnownType(e.type), "event types are the five of the protocol");
  Require(e.object != nullptr && e.object->is_object(), "an event's object is an object");
  (void)e.ResourceVersion();
  // The decoder refuses lines nesting past kMaxJsonDepth, and ErrorStatus reads members of any
  // type (both were found by this target).
  Require(sluice::JsonValueDepth(*e.object) <= sluice::kMaxJsonDepth, "events nest boundedly");
  if (e.type == WatchEventType::kError) (void)e.ErrorStatus();
}

bool SameEvent(const WatchEvent& a, const WatchEvent& b) {
  if (a.type != b.type || a.ResourceVersion() != b.ResourceVersion()) return false;
  return *a.object == *b.object;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string_view input(reinterpret_cast<const char*>(bytes), size);
  const Decoded whole = FeedWhole(input);
  for (const WatchEvent& e : whole.events) CheckEvent(e);
  if (whole.status.ok()) {
    // Only the incomplete last line is held back (the default line limit is far above 64 KiB).
    const size_t last_newline = input.rfind('\n');
    const size_t tail = last_newline == std::string_view::npos ? size : size - last_newline - 1;
    Require(whole.buffered == tail, "only the bytes after the last newline are held");
  } else {
    Require(whole.status.code() == sluice::StatusCode::kCorruption, "bad lines are Corruption");
    Require(whole.buffered == 0, "a failed decoder holds nothing");
  }

  const uint64_t seed = sluice::Crc32c(bytes, size) ^ (uint64_t{size} << 32);
  const Decoded chunked = FeedInChunks(input, seed);
  Require(chunked.status == whole.status, "chunking does not change how the stream ends");
  Require(chunked.buffered == whole.buffered, "chunking does not change what is held");
  Require(chunked.events.size() == whole.events.size(), "chunking does not change the events");
  for (size_t i = 0; i < whole.events.size(); ++i) {
    Require(SameEvent(whole.events[i], chunked.events[i]), "chunking does not change an event");
  }
  return 0;
}
