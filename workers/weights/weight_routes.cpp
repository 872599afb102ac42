#include "workers/weights/weight_routes.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/http/json_body.h"

namespace sluice::weights {

namespace {

using nlohmann::json;

constexpr char kOctetStream[] = "application/octet-stream";
// Bytes handed to the socket per write; the whole requested range is written within one
// provider call because httplib checks for shutdown between calls and a started download is to
// be finished (server.h).
constexpr size_t kWriteChunkBytes = size_t{1} << 20;

// A non-negative decimal without sign or spaces; nullopt otherwise.
std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Writes [offset, offset + length) of the concatenation of `parts` to the sink.
bool WriteParts(const std::vector<std::shared_ptr<const std::string>>& parts, size_t offset,
                size_t length, httplib::DataSink& sink) {
  size_t part_start = 0;
  for (const auto& part : parts) {
    const size_t part_end = part_start + part->size();
    while (length > 0 && offset < part_end) {
      const size_t n = std::min({length, part_end - offset, kWriteChunkBytes});
      if (!sink.write(part->data() + (offset - part_start), n)) return false;
      offset += n;
      length -= n;
    }
    part_start = part_end;
  }
  return length == 0;
}

}  // namespace

Result<int64_t> ParseVersionNumber(std::string_view text, std::string_view field) {
  std::optional<uint64_t> v = ParseDecimal(text);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) {
    return Status::InvalidArgument(std::string(field) + " must be a non-negative integer, got \"" +
                                       std::string(text.substr(0, 64)) + "\"",
                                   std::string(field));
  }
  return static_cast<int64_t>(*v);
}

std::string FullWeightsPath(int64_t version) { return "/v1/weights/" + std::to_string(version); }

Result<std::optional<ByteRange>> ParseRangeHeader(std::string_view value, uint64_t size) {
  if (value.empty()) return std::optional<ByteRange>();
  auto malformed = [&](std::string why) {
    return Status::InvalidArgument(
        "Range header \"" + std::string(value.substr(0, 100)) + "\": " + why, "Range");
  };
  constexpr std::string_view kUnit = "bytes=";
  if (!value.starts_with(kUnit)) return malformed("only the \"bytes=\" unit is supported");
  std::string_view spec = value.substr(kUnit.size());
  if (spec.find(',') != std::string_view::npos) return malformed("only one range is supported");
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return malformed("expected first-last, first- or -suffix");
  const std::string_view first_text = spec.substr(0, dash);
  const std::string_view last_text = spec.substr(dash + 1);
  auto unsatisfiable = [&] {
    return Status::Unprocessable("Range header \"" + std::string(value.substr(0, 100)) +
                                     "\" selects no byte of the " + std::to_string(size) +
                                     "-byte body",
                                 "Range");
  };
  if (first_text.empty()) {  // bytes=-n: the last n bytes.
    std::optional<uint64_t> n = ParseDecimal(last_text);
    if (!n) return malformed("expected a byte count after \"-\"");
    if (*n == 0 || size == 0) return unsatisfiable();
    const uint64_t len = std::min(*n, size);
    return std::optional<ByteRange>(ByteRange{size - len, len});
  }
  std::optional<uint64_t> first = ParseDecimal(first_text);
  if (!first) return malformed("the first byte position is not a number");
  uint64_t last = size == 0 ? 0 : size - 1;
  if (!last_text.empty()) {
    std::optional<uint64_t> l = ParseDecimal(last_text);
    if (!l) return malformed("the last byte position is not a number");
    if (*l < *first) return malformed("the last byte position precedes the first");
    last = std::min(last, *l);
  }
  if (*first >= size) return unsatisfiable();
  return std::optional<ByteRange>(ByteRange{*first, last - *first + 1});
}

WeightRoutes::WeightRoutes(WeightStore& store, metrics::Registry* registry, std::string prefix)
    : store_(store), prefix_(std::move(prefix)), registry_(registry) {
  if (registry_ == nullptr) return;
  metrics::Registry& r = *registry_;
  served_bytes_ =
      &r.AddCounter("sluice_weights_served_bytes_total",
                    "Weight bytes written to workers, by kind (full, delta).", {"kind"});
  requests_ = &r.AddCounter("sluice_weights_requests_total",
                            "Weight downloads by kind (full, delta) and outcome (ok, partial "
                            "for a Range, fallback for a delta answered 409, error).",
                            {"kind", "outcome"});
  auto add = [this](metrics::CallbackFamily& family, metrics::CallbackFamily::ValueFunction fn) {
    family.Set({}, std::move(fn));
    callbacks_.emplace_back(&family, std::vector<std::string>{});
  };
  add(r.AddCallbackGauge("sluice_weights_latest_version", "Newest weights version served."),
      [this] { return static_cast<double>(store_.Latest().value_or(-1)); });
  add(r.AddCallbackGauge("sluice_weights_delta_density",
                         "Fraction of elements that changed in the latest version's delta (1 "
                         "when it has none: workers download everything)."),
      [this] {
        std::vector<VersionInfo> v = store_.Versions();
        if (v.empty() || !v.back().delta_from) return 1.0;
        return v.back().delta_stats.density();
      });
  add(r.AddCallbackGauge("sluice_weights_held_bytes",
                         "Bytes of full images and deltas the weight store holds."),
      [this] { return static_cast<double>(store_.bytes_held()); });
}

WeightRoutes::~WeightRoutes() {
  for (auto& [family, labels] : callbacks_) family->Remove(labels);
}

void WeightRoutes::Count(std::string_view kind, std::string_view outcome) {
  if (requests_) requests_->WithLabels({std::string(kind), std::string(outcome)}).Inc();
}

void WeightRoutes::Served(std::string_view kind, uint64_t bytes) {
  if (served_bytes_) served_bytes_->WithLabels({std::string(kind)}).Inc(static_cast<double>(bytes));
}

void WeightRoutes::Register(http::Server& server) {
  server.Get(prefix_ + "/v1/weights",
             [this](const httplib::Request& req, httplib::Response& res) { HandleList(req, res); });
  server.Get(prefix_ + R"(/v1/weights/([^/]+))",
             [this](const httplib::Request& req, httplib::Response& res) { HandleFull(req, res); });
  server.Get(
      prefix_ + R"(/v1/weights/([^/]+)/delta)",
      [this](const httplib::Request& req, httplib::Response& res) { HandleDelta(req, res); });
}

void WeightRoutes::HandleList(const httplib::Request&, httplib::Response& res) {
  json versions = json::array();
  for (const VersionInfo& v : store_.Versions()) {
    json item = {{"version", v.version}, {"digest", v.digest}, {"bytes", v.bytes}};
    if (v.delta_from) {
      item["deltaFrom"] = *v.delta_from;
      item["deltaBytes"] = v.delta_stats.bytes;
      item["deltaDensity"] = v.delta_stats.density();
    } else {
      item["deltaFrom"] = nullptr;
      item["deltaBytes"] = nullptr;
      item["deltaDensity"] = nullptr;
    }
    versions.push_back(std::move(item));
  }
  std::optional<int64_t> latest = store_.Latest();
  http::ReplyJson(
      res, {{"versions", std::move(versions)}, {"latest", latest ? json(*latest) : json(nullptr)}});
}

void WeightRoutes::HandleFull(const httplib::Request& req, httplib::Response& res) {
  // cpp-httplib 0.11 applies a parsed Range a second time to whatever the handler answers (and
  // slices error bodies by it) without checking it against the body's size; this handler
  // implements Range itself, so it drops the library's copy. The Request is the library's
  // non-const object, handed to handlers as const.
  const_cast<httplib::Request&>(req).ranges.clear();
  Result<int64_t> version = ParseVersionNumber(req.matches[1].str(), "version");
  if (!version.ok()) {
    Count("full", "error");
    return http::ReplyError(res, version.status());
  }
  std::shared_ptr<const WeightSnapshot> snapshot = store_.Full(*version);
  if (!snapshot) {
    Count("full", "error");
    return http::ReplyError(
        res, Status::NotFound("weights version " + std::to_string(*version) + " is not held"));
  }
  const uint64_t size = snapshot->size_bytes();
  res.set_header(std::string(kWeightsVersionHeader), std::to_string(*version));
  res.set_header(std::string(kWeightsDigestHeader), snapshot->digest());
  res.set_header("ETag", "\"" + snapshot->digest() + "\"");
  res.set_header("Accept-Ranges", "bytes");
  Result<std::optional<ByteRange>> range = ParseRangeHeader(req.get_header_value("Range"), size);
  if (!range.ok()) {
    Count("full", "error");
    if (range.status().code() == StatusCode::kUnprocessable) {
      res.set_header("Content-Range", "bytes */" + std::to_string(size));
      http::ReplyError(res, range.status());
      res.status = 416;
      return;
    }
    return http::ReplyError(res, range.status());
  }
  ByteRange want{0, size};
  if (range->has_value()) {
    want = **range;
    res.status = 206;
    res.set_header("Content-Range", "bytes " + std::to_string(want.offset) + "-" +
                                        std::to_string(want.offset + want.length - 1) + "/" +
                                        std::to_string(size));
    Count("full", "partial");
  } else {
    Count("full", "ok");
  }
  // The provider holds the image (not the snapshot's owner), so an eviction mid-download is safe.
  std::vector<std::shared_ptr<const std::string>> parts = {snapshot->shared_image()};
  res.set_content_provider(static_cast<size_t>(want.length), kOctetStream,
                           [this, parts = std::move(parts), base = want.offset](
                               size_t offset, size_t length, httplib::DataSink& sink) {
                             const bool ok = WriteParts(parts, static_cast<size_t>(base) + offset,
                                                        length, sink);
                             Served("full", length);
                             return ok;
                           });
}

void WeightRoutes::HandleDelta(const httplib::Request& req, httplib::Response& res) {
  const_cast<httplib::Request&>(req).ranges.clear();  // See HandleFull.
  Result<int64_t> version = ParseVersionNumber(req.matches[1].str(), "version");
  if (!version.ok()) {
    Count("delta", "error");
    return http::ReplyError(res, version.status());
  }
  if (!req.has_param("from")) {
    Count("delta", "error");
    return http::ReplyError(res, Status::InvalidArgument("the from parameter is required", "from"));
  }
  Result<int64_t> from = ParseVersionNumber(req.get_param_value("from"), "from");
  if (!from.ok()) {
    Count("delta", "error");
    return http::ReplyError(res, from.status());
  }
  Result<DeltaPlan> plan = store_.PlanDelta(*from, *version);
  if (!plan.ok()) {
    Count("delta", "error");
    return http::ReplyError(res, plan.status());
  }
  if (plan->use_full) {
    Count("delta", "fallback");
    json body = http::ErrorJson(Status::Conflict("no delta from version " + std::to_string(*from) +
                                                 " to " + std::to_string(*version) + ": " +
                                                 plan->reason + "; download the full image"));
    body["full"] = FullWeightsPath(*version);
    return http::ReplyJson(res, body, 409);
  }
  Count("delta", "ok");
  res.set_header(std::string(kWeightsVersionHeader), std::to_string(*version));
  res.set_header(std::string(kWeightsDigestHeader), plan->to_digest);
  res.set_header(std::string(kWeightsFromHeader), std::to_string(*from));
  if (plan->bytes == 0) {  // from == version: an empty chain.
    res.set_content("", kOctetStream);
    return;
  }
  res.set_content_provider(static_cast<size_t>(plan->bytes), kOctetStream,
                           [this, parts = std::move(plan->deltas)](size_t offset, size_t length,
                                                                   httplib::DataSink& sink) {
                             const bool ok = WriteParts(parts, offset, length, sink);
                             Served("delta", length);
                             return ok;
                           });
}

}  // namespace sluice::weights
