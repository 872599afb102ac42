#include "workers/weights/final_weights.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include "common/file/atomic_file.h"
#include "common/file/read_file.h"
#include "common/http/json_body.h"
#include "workers/weights/weight_snapshot.h"

namespace sluice::weights {

namespace fs = std::filesystem;

struct FinalWeights::PolicyImages {
  WeightStore store{1};  // The held version only.
  std::unique_ptr<WeightRoutes> routes;
};

namespace {

// A decimal byte count or offset (no sign, no spaces); InvalidArgument naming `field`.
Result<uint64_t> ParseByteCount(const std::string& text, std::string_view field) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return Status::InvalidArgument("\"" + text + "\" is not a byte count", std::string(field));
  }
  return value;
}

constexpr std::string_view kImageSuffix = ".safetensors";
constexpr std::string_view kUploadSuffix = ".upload";

}  // namespace

FinalWeights::FinalWeights(std::string dir, const std::vector<std::string>& policies,
                           AnnouncedLookup announced)
    : dir_(std::move(dir)), announced_(std::move(announced)) {
  for (const std::string& policy : policies) {
    auto images = std::make_unique<PolicyImages>();
    // No registry: one WeightRoutes per policy would register the same metric families twice.
    images->routes = std::make_unique<WeightRoutes>(images->store, nullptr, BasePath(policy));
    policies_.emplace(policy, std::move(images));
  }
}

FinalWeights::~FinalWeights() = default;

std::string FinalWeights::BasePath(std::string_view policy) {
  return "/v1/final/" + std::string(policy);
}

std::string FinalWeights::PathOf(const std::string& policy) const {
  return (fs::path(dir_) / (policy + std::string(kImageSuffix))).string();
}

std::string FinalWeights::UploadPathOf(const std::string& policy) const {
  return (fs::path(dir_) / (policy + std::string(kUploadSuffix))).string();
}

Status FinalWeights::Load() {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return Status::Ok();
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    // A write interrupted by a crash left only its temporary file: the upload was never
    // answered, so the trainer still has the version and uploads it again.
    if (file::IsAtomicWriteTemp(name)) fs::remove(entry.path(), ec);
    // So did the parts of an upload a restart interrupted: the trainer sends them again.
    if (entry.path().extension() == kUploadSuffix) fs::remove(entry.path(), ec);
  }
  Status first_error;
  for (auto& [policy, images] : policies_) {
    const std::string path = PathOf(policy);
    if (!fs::exists(path, ec)) continue;
    Result<std::string> image = file::ReadWholeFile(path);
    Result<WeightSnapshot> snapshot = image.ok() ? WeightSnapshot::Parse(std::move(*image))
                                                 : Result<WeightSnapshot>(image.status());
    Status loaded =
        snapshot.ok() ? images->store.Publish(std::move(*snapshot), false) : snapshot.status();
    if (!loaded.ok() && first_error.ok()) first_error = loaded.WithContext(path);
  }
  return first_error;
}

Result<FinalWeights::PolicyImages*> FinalWeights::CheckUpload(const std::string& policy,
                                                              int64_t version,
                                                              std::string_view digest) {
  auto it = policies_.find(policy);
  if (it == policies_.end()) {
    return Status::NotFound("policy " + policy + " is not served by this dataflow");
  }
  if (digest.empty()) {
    return Status::InvalidArgument(std::string(kWeightsDigestHeader) + " is required",
                                   std::string(kWeightsDigestHeader));
  }
  SLUICE_ASSIGN_OR_RETURN(std::optional<Announced> announced, announced_(policy));
  if (!announced) {
    return Status::Conflict("policy " + policy + " has announced no version; only its newest " +
                            "announced version is kept as its final weights");
  }
  if (version != announced->version) {
    return Status::Conflict("version " + std::to_string(version) +
                            " is not the newest announced version of policy " + policy + " (" +
                            std::to_string(announced->version) + ")");
  }
  if (digest != announced->digest) {
    return Status::Conflict("digest " + std::string(digest) + " is not the announced digest of " +
                            "version " + std::to_string(version) + " of policy " + policy + " (" +
                            announced->digest + ")");
  }
  return it->second.get();
}

Result<bool> FinalWeights::StoreLocked(PolicyImages& images, const std::string& policy,
                                       int64_t version, std::string_view digest,
                                       std::string image) {
  if (images.store.Latest() == version) return false;  // Same version, so the same digest.
  Result<WeightSnapshot> snapshot = WeightSnapshot::Parse(std::move(image), digest);
  if (!snapshot.ok()) {
    return Status::InvalidArgument(snapshot.status().message(), snapshot.status().field().empty()
                                                                    ? "body"
                                                                    : snapshot.status().field());
  }
  if (snapshot->version() != version) {
    return Status::InvalidArgument("the image is version " + std::to_string(snapshot->version()) +
                                       ", not " + std::to_string(version),
                                   "metadata.sluice.version");
  }
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status::Internal("cannot create " + dir_ + ": " + ec.message());
  SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(PathOf(policy), snapshot->image(), 0600));
  SLUICE_RETURN_IF_ERROR(images.store.Publish(std::move(*snapshot), false));
  return true;
}

Result<bool> FinalWeights::Put(const std::string& policy, int64_t version, std::string_view digest,
                               std::string image) {
  SLUICE_ASSIGN_OR_RETURN(PolicyImages * images, CheckUpload(policy, version, digest));
  std::lock_guard<std::mutex> lock(put_mu_);
  return StoreLocked(*images, policy, version, digest, std::move(image));
}

Result<FinalWeights::PartProgress> FinalWeights::PutPart(const std::string& policy, int64_t version,
                                                         std::string_view digest, uint64_t size,
                                                         uint64_t offset, std::string_view part) {
  SLUICE_ASSIGN_OR_RETURN(PolicyImages * images, CheckUpload(policy, version, digest));
  if (size == 0) {
    return Status::InvalidArgument("must be the image's size in bytes, > 0",
                                   std::string(kWeightsSizeHeader));
  }
  if (offset > size || part.size() > size - offset) {
    return Status::InvalidArgument("bytes " + std::to_string(offset) + " .. " +
                                       std::to_string(offset + part.size()) +
                                       " run past the image's " + std::to_string(size) + " bytes",
                                   "offset");
  }
  std::lock_guard<std::mutex> lock(put_mu_);
  const std::string staging = UploadPathOf(policy);
  std::error_code ec;
  if (offset == 0) {
    // A new upload (or the same one started over): what an earlier one collected goes.
    if (images->store.Latest() == version) {
      uploads_.erase(policy);
      fs::remove(staging, ec);
      return PartProgress{size, size, false};
    }
    fs::create_directories(dir_, ec);
    if (ec) return Status::Internal("cannot create " + dir_ + ": " + ec.message());
    std::ofstream(staging, std::ios::binary | std::ios::trunc).close();
    uploads_[policy] = Upload{version, std::string(digest), size, 0};
  }
  auto it = uploads_.find(policy);
  // A part sent again (the client retried after a lost reply) is answered, not appended: the
  // whole image, when it was the last part, or what was received.
  if (it == uploads_.end() && images->store.Latest() == version) {
    return PartProgress{size, size, false};
  }
  if (it != uploads_.end() && it->second.version == version && it->second.digest == digest &&
      offset < it->second.received && part.size() <= it->second.received - offset) {
    return PartProgress{it->second.received, size, std::nullopt};
  }
  if (it == uploads_.end() || it->second.version != version || it->second.digest != digest ||
      it->second.size != size) {
    return Status::Conflict("no upload of version " + std::to_string(version) + " of policy " +
                            policy + " with this digest and size is under way; start at " +
                            "offset 0");
  }
  Upload& upload = it->second;
  if (offset != upload.received) {
    return Status::Conflict("offset " + std::to_string(offset) + " is not the next byte: " +
                            std::to_string(upload.received) + " bytes received so far");
  }
  {
    std::ofstream out(staging, std::ios::binary | std::ios::app);
    out.write(part.data(), static_cast<std::streamsize>(part.size()));
    out.close();
    if (!out) return Status::Internal("cannot append to " + staging);
  }
  upload.received += part.size();
  PartProgress progress{upload.received, size, std::nullopt};
  if (upload.received < size) return progress;
  uploads_.erase(it);
  Result<std::string> image = file::ReadWholeFile(staging);
  fs::remove(staging, ec);
  if (!image.ok()) return image.status();
  if (image->size() != size) {
    return Status::Internal(staging + " holds " + std::to_string(image->size()) + " bytes, not " +
                            std::to_string(size));
  }
  SLUICE_ASSIGN_OR_RETURN(progress.created,
                          StoreLocked(*images, policy, version, digest, std::move(*image)));
  return progress;
}

std::optional<int64_t> FinalWeights::Held(const std::string& policy) const {
  auto it = policies_.find(policy);
  if (it == policies_.end()) return std::nullopt;
  return it->second->store.Latest();
}

void FinalWeights::Register(http::Server& server) {
  server.Put(R"(/v1/final/([^/]+)/v1/weights/([^/]+))",
             [this](const httplib::Request& req, httplib::Response& res) {
               const std::string policy = req.matches[1].str();
               Result<int64_t> version = ParseVersionNumber(req.matches[2].str(), "version");
               if (!version.ok()) return http::ReplyError(res, version.status());
               const std::string digest = req.get_header_value(std::string(kWeightsDigestHeader));
               const size_t bytes = req.body.size();
               Result<bool> created = Put(policy, *version, digest, req.body);
               if (!created.ok()) return http::ReplyError(res, created.status());
               http::ReplyJson(res,
                               {{"policy", policy},
                                {"version", *version},
                                {"digest", digest},
                                {"bytes", bytes},
                                {"created", *created}},
                               *created ? 201 : 200);
             });
  server.Put(R"(/v1/final/([^/]+)/v1/weights/([^/]+)/parts/([^/]+))",
             [this](const httplib::Request& req, httplib::Response& res) {
               const std::string policy = req.matches[1].str();
               Result<int64_t> version = ParseVersionNumber(req.matches[2].str(), "version");
               if (!version.ok()) return http::ReplyError(res, version.status());
               Result<uint64_t> offset = ParseByteCount(req.matches[3].str(), "offset");
               if (!offset.ok()) return http::ReplyError(res, offset.status());
               Result<uint64_t> size = ParseByteCount(
                   req.get_header_value(std::string(kWeightsSizeHeader)), kWeightsSizeHeader);
               if (!size.ok()) return http::ReplyError(res, size.status());
               const std::string digest = req.get_header_value(std::string(kWeightsDigestHeader));
               Result<PartProgress> progress =
                   PutPart(policy, *version, digest, *size, *offset, req.body);
               if (!progress.ok()) return http::ReplyError(res, progress.status());
               nlohmann::json body = {{"policy", policy},
                                      {"version", *version},
                                      {"received", progress->received},
                                      {"size", progress->size}};
               if (!progress->created) return http::ReplyJson(res, body, 202);
               body["digest"] = digest;
               body["bytes"] = progress->size;
               body["created"] = *progress->created;
               http::ReplyJson(res, body, *progress->created ? 201 : 200);
             });
  for (auto& [policy, images] : policies_) images->routes->Register(server);
}

}  // namespace sluice::weights
