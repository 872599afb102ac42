// libFuzzer target for the JSON depth guard (common/json/json_depth.h: FirstTooDeepJson,
// JsonValueDepth) and the guarded parse of bodies built on it (common/http/json_body.h:
// ParseJsonText, ParseJsonObject).
//
// Each input is a body. Invariants:
//  - FirstTooDeepJson reports a '[' or '{' inside the text; the text before it is within the
//    limit and the text through it is not (one pass, first excess); a lower limit is exceeded no
//    later than a higher one;
//  - on text nlohmann parses (iteratively, so at any depth), FirstTooDeepJson(text, d) reports
//    exactly when JsonValueDepth of the parsed value exceeds d;
//  - ParseJsonText accepts exactly what is non-empty, within kMaxJsonDepth, valid JSON and free
//    of NUL bytes, and then gives nlohmann's value, which (being shallow enough to copy, dump and
//    compare) dumps to text that parses back to it; ParseJsonObject adds only "is an object" and
//    the Content-Type check.
// Deep values are only measured and destroyed (both iterative), never copied or compared.
//
// Fuzz it with `scripts/fuzz.sh json_depth [seconds]` (tests/fuzz/CMakeLists.txt).
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/json_body.h"
#include "common/json/json_depth.h"
#include "common/status.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using nlohmann::json;
using sluice::Result;

constexpr size_t kMaxInputBytes = 64 * 1024;
constexpr size_t kLimits[] = {0, 1, 2, 3, 8, 64, sluice::kMaxJsonDepth};

using sluice::fuzz::Require;

void CheckFirstTooDeep(std::string_view text) {
  std::optional<size_t> lower;  // The result for the previous (lower) limit.
  bool first = true;
  for (size_t limit : kLimits) {
    const std::optional<size_t> at = sluice::FirstTooDeepJson(text, limit);
    if (at) {
      Require(*at < text.size() && (text[*at] == '[' || text[*at] == '{'),
              "the offset is an opening bracket");
      Require(!sluice::FirstTooDeepJson(text.substr(0, *at), limit),
              "the text before the offset is within the limit");
      Require(sluice::FirstTooDeepJson(text.substr(0, *at + 1), limit) == at,
              "the text through the offset is not");
      Require(first || (lower && *lower <= *at), "a lower limit is exceeded no later");
    }
    lower = at;
    first = false;
  }
}

// The request body as the servers read it.
Result<json> ParseRequest(std::string_view text, const char* content_type) {
  httplib::Request request;
  request.body = std::string(text);
  if (content_type != nullptr) request.set_header("Content-Type", content_type);
  return sluice::http::ParseJsonObject(request);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  CheckFirstTooDeep(text);

  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const bool valid = !parsed.is_discarded();
  size_t depth = 0;
  if (valid) {
    depth = sluice::JsonValueDepth(parsed);
    // nlohmann's lexer takes a NUL byte for the end of the input, so "7\0[[" parses as 7: the
    // depths compare up to the first NUL (found by this target in CI).
    const std::string_view parsed_text = text.substr(0, text.find('\0'));
    for (size_t limit : kLimits) {
      Require(sluice::FirstTooDeepJson(parsed_text, limit).has_value() == (depth > limit),
              "FirstTooDeepJson agrees with the parsed value's depth");
    }
  }

  // ParseJsonText refuses any NUL byte, which JSON never allows unescaped.
  const Result<json> guarded = sluice::http::ParseJsonText(text, "fuzz body");
  const bool shallow = !sluice::FirstTooDeepJson(text).has_value();
  const bool no_nul = text.find('\0') == std::string_view::npos;
  Require(guarded.ok() == (!text.empty() && shallow && valid && no_nul),
          "ParseJsonText accepts exactly the shallow valid texts without NUL bytes");
  if (!guarded.ok()) {
    Require(guarded.status().code() == sluice::StatusCode::kInvalidArgument,
            "ParseJsonText errors are InvalidArgument");
  } else {
    Require(*guarded == parsed, "ParseJsonText gives nlohmann's value");
    const std::string dumped = guarded->dump();
    Require(!sluice::FirstTooDeepJson(dumped).has_value(), "the dump is as shallow");
    const json again = json::parse(dumped, nullptr, /*allow_exceptions=*/false);
    Require(!again.is_discarded() && again == *guarded, "the dump parses back to the value");
    Require(sluice::JsonValueDepth(again) == depth, "the dump has the same depth");
  }

  const bool object = guarded.ok() && guarded->is_object();
  Require(ParseRequest(text, nullptr).ok() == object, "no Content-Type: any JSON object");
  Require(ParseRequest(text, "application/json; charset=utf-8").ok() == object,
          "application/json: any JSON object");
  Require(ParseRequest(text, "application/merge-patch+json").ok() == object,
          "+json types: any JSON object");
  Require(!ParseRequest(text, "text/plain").ok(), "other types are refused");
  return 0;
}
