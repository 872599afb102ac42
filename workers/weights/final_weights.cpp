#include "workers/weights/final_weights.h"

#include <filesystem>
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

constexpr std::string_view kImageSuffix = ".safetensors";

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

Status FinalWeights::Load() {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return Status::Ok();
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    // A write interrupted by a crash left only its temporary file: the upload was never
    // answered, so the trainer still has the version and uploads it again.
    if (file::IsAtomicWriteTemp(name)) fs::remove(entry.path(), ec);
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

Result<bool> FinalWeights::Put(const std::string& policy, int64_t version, std::string_view digest,
                               std::string image) {
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
  std::lock_guard<std::mutex> lock(put_mu_);
  PolicyImages& images = *it->second;
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
  for (auto& [policy, images] : policies_) images->routes->Register(server);
}

}  // namespace sluice::weights
