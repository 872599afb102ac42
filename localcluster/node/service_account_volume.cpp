#include "localcluster/node/service_account_volume.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#include "common/json/fields.h"
#include "common/time_format.h"

namespace sluice::node {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr mode_t kTokenMode = 0600;
constexpr mode_t kPublicMode = 0644;
// kubelet refreshes a token older than this whatever its lifetime.
constexpr std::chrono::hours kMaxTokenAge{24};

const json& Spec(const json& pod) {
  static const json kEmpty = json::object();
  if (!pod.is_object()) return kEmpty;
  auto it = pod.find("spec");
  return it != pod.end() && it->is_object() ? *it : kEmpty;
}

// Longest container path first, then by path: ContainerMounts' order.
bool MountsBefore(const PathMapping& a, const PathMapping& b) {
  if (a.container_path.size() != b.container_path.size()) {
    return a.container_path.size() > b.container_path.size();
  }
  return a.container_path < b.container_path;
}

}  // namespace

std::string PodServiceAccountName(const json& pod) {
  std::string name = StringField(Spec(pod), "serviceAccountName");
  if (name.empty()) name = StringField(Spec(pod), "serviceAccount");
  return name.empty() ? "default" : name;
}

bool PodDecidesAutomount(const json& pod) {
  auto it = Spec(pod).find("automountServiceAccountToken");
  return it != Spec(pod).end() && it->is_boolean();
}

bool AutomountServiceAccountToken(const json& pod, const std::optional<json>& service_account) {
  if (PodDecidesAutomount(pod)) return Spec(pod)["automountServiceAccountToken"].get<bool>();
  if (service_account && service_account->is_object()) {
    auto it = service_account->find("automountServiceAccountToken");
    if (it != service_account->end() && it->is_boolean()) return it->get<bool>();
  }
  return true;
}

json PodTokenRequest(const json& pod) {
  const json meta = pod.is_object() ? pod.value("metadata", json::object()) : json::object();
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenRequest"},
          {"spec",
           {{"audiences", json::array()},
            {"expirationSeconds", kPodTokenExpirationSeconds},
            {"boundObjectRef",
             {{"kind", "Pod"},
              {"apiVersion", "v1"},
              {"name", StringField(meta, "name")},
              {"uid", StringField(meta, "uid")}}}}}};
}

Result<ServiceAccountToken> TokenFromTokenRequest(const json& reply) {
  const json status = reply.is_object() ? reply.value("status", json::object()) : json::object();
  ServiceAccountToken out;
  out.token = StringField(status, "token");
  if (out.token.empty()) {
    return Status::InvalidArgument("the TokenRequest reply holds no status.token");
  }
  const std::string expires = StringField(status, "expirationTimestamp");
  Result<Clock::WallTime> parsed = ParseTime(expires);
  if (!parsed.ok()) {
    return Status::InvalidArgument("the TokenRequest reply's status.expirationTimestamp \"" +
                                   expires + "\" is not a time");
  }
  out.expires = *parsed;
  const json spec = reply.is_object() ? reply.value("spec", json::object()) : json::object();
  const json lifetime = spec.is_object() ? spec.value("expirationSeconds", json()) : json();
  if (!lifetime.is_number_integer() || lifetime.get<int64_t>() <= 0) {
    return Status::InvalidArgument("the TokenRequest reply holds no spec.expirationSeconds");
  }
  out.lifetime_seconds = lifetime.get<int64_t>();
  return out;
}

Clock::WallTime TokenRefreshTime(const ServiceAccountToken& token) {
  const Clock::WallTime issued = token.expires - std::chrono::seconds(token.lifetime_seconds);
  // kubelet: the last 20% of the lifetime, in whole seconds.
  const Clock::WallTime late =
      token.expires - std::chrono::seconds(token.lifetime_seconds * 20 / 100);
  const Clock::WallTime old = issued + kMaxTokenAge;
  return std::min(late, old);
}

fs::path ServiceAccountDir(const fs::path& pod_dir) {
  return pod_dir / std::string(kServiceAccountMountPath).substr(1);
}

Status WriteServiceAccountFiles(const fs::path& dir, const std::string& token,
                                const std::string& ca_pem, const std::string& namespace_) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Internal("creating " + dir.string() + ": " + ec.message());
  SLUICE_RETURN_IF_ERROR(UpdateVolumeFile(dir / "token", token, kTokenMode));
  SLUICE_RETURN_IF_ERROR(UpdateVolumeFile(dir / "ca.crt", ca_pem, kPublicMode));
  return UpdateVolumeFile(dir / "namespace", namespace_, kPublicMode);
}

void AddServiceAccountMount(std::vector<PathMapping>& mounts, const fs::path& dir) {
  for (const PathMapping& m : mounts) {
    if (m.container_path == kServiceAccountMountPath) return;
  }
  PathMapping mapping{kServiceAccountMountPath, dir};
  auto at = std::find_if(mounts.begin(), mounts.end(),
                         [&](const PathMapping& m) { return MountsBefore(mapping, m); });
  mounts.insert(at, std::move(mapping));
}

}  // namespace sluice::node
