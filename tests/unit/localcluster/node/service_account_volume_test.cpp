// The service-account token volume of a pod (service_account_volume.h): who gets one, what
// kubelet asks the API server for, when it refreshes, the files and the mount path mapping.
#include "localcluster/node/service_account_volume.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace sluice::node {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::seconds;

TEST(ServiceAccountVolumeTest, AutomountIsThePodsChoiceThenTheServiceAccountsThenYes) {
  const json yes = json::parse(R"({"automountServiceAccountToken": true})");
  const json no = json::parse(R"({"automountServiceAccountToken": false})");
  const json unset = json::parse(R"({"metadata": {"name": "robot"}})");
  struct Case {
    const char* name;
    const char* pod_spec;
    std::optional<json> account;
    bool mounted;
  };
  const std::vector<Case> cases = {
      {"nothing says", R"({})", unset, true},
      {"service account not found", R"({})", std::nullopt, true},
      {"service account says no", R"({})", no, false},
      {"service account says yes", R"({})", yes, true},
      {"pod says no", R"({"automountServiceAccountToken": false})", yes, false},
      {"pod says yes over the account", R"({"automountServiceAccountToken": true})", no, true},
      {"pod's value not a boolean", R"({"automountServiceAccountToken": "no"})", no, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const json pod = {{"spec", json::parse(c.pod_spec)}};
    EXPECT_EQ(AutomountServiceAccountToken(pod, c.account), c.mounted);
  }
  EXPECT_TRUE(
      PodDecidesAutomount(json::parse(R"({"spec": {"automountServiceAccountToken": false}})")));
  EXPECT_FALSE(PodDecidesAutomount(json::parse(R"({"spec": {}})")));
  EXPECT_FALSE(PodDecidesAutomount(json::array()));
}

TEST(ServiceAccountVolumeTest, ServiceAccountNameAndTheTokenRequestKubeletSends) {
  EXPECT_EQ(PodServiceAccountName(json::parse(R"({"spec": {"serviceAccountName": "robot"}})")),
            "robot");
  EXPECT_EQ(PodServiceAccountName(json::parse(R"({"spec": {"serviceAccount": "legacy"}})")),
            "legacy");
  EXPECT_EQ(PodServiceAccountName(json::parse(R"({"spec": {}})")), "default");
  EXPECT_EQ(PodServiceAccountName(json()), "default");

  const json pod = json::parse(R"({"metadata": {"name": "web-0", "namespace": "ml",
      "uid": "pod-1"}, "spec": {"serviceAccountName": "robot"}})");
  EXPECT_EQ(PodTokenRequest(pod), json::parse(R"({
      "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
      "spec": {"audiences": [], "expirationSeconds": 3607,
               "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0",
                                  "uid": "pod-1"}}})"));
}

TEST(ServiceAccountVolumeTest, TokenRepliesAndRefreshTimes) {
  const json reply = json::parse(R"({"apiVersion": "authentication.k8s.io/v1",
      "kind": "TokenRequest", "spec": {"expirationSeconds": 3607},
      "status": {"token": "header.payload.signature",
                 "expirationTimestamp": "2026-01-01T01:00:07Z"}})");
  Result<ServiceAccountToken> token = TokenFromTokenRequest(reply);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->token, "header.payload.signature");
  const Clock::WallTime issued = Clock::WallTime(seconds(1767225600));  // 2026-01-01T00:00:00Z
  EXPECT_EQ(token->expires, issued + seconds(3607));
  EXPECT_EQ(token->lifetime_seconds, 3607);

  struct Case {
    const char* name;
    int64_t lifetime;
    int64_t refresh_after_issue;  // Seconds.
  };
  const std::vector<Case> cases = {
      {"kubelet's hour: the last 20% (721 s) is left", 3607, 3607 - 721},
      {"ten minutes", 600, 480},
      {"two days: a day at most", 2 * 86400, 86400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ServiceAccountToken t{"t", issued + seconds(c.lifetime), c.lifetime};
    EXPECT_EQ(TokenRefreshTime(t), issued + seconds(c.refresh_after_issue));
  }

  for (const char* bad : {R"({"status": {"expirationTimestamp": "2026-01-01T01:00:07Z"},
                              "spec": {"expirationSeconds": 3607}})",
                          R"({"status": {"token": "t", "expirationTimestamp": "soon"},
                              "spec": {"expirationSeconds": 3607}})",
                          R"({"status": {"token": "t",
                              "expirationTimestamp": "2026-01-01T01:00:07Z"}})",
                          R"([])"}) {
    SCOPED_TRACE(bad);
    Result<ServiceAccountToken> refused = TokenFromTokenRequest(json::parse(bad));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  }
}

class ServiceAccountFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sluice-sa-volume-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static mode_t Mode(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  fs::path root_;
};

TEST_F(ServiceAccountFilesTest, FilesLandUnderThePodDirectoryAtTheKubePath) {
  const fs::path dir = ServiceAccountDir(root_ / "ml_web-0_pod-1");
  EXPECT_EQ(dir, root_ / "ml_web-0_pod-1" / "var/run/secrets/kubernetes.io/serviceaccount");
  const std::string ca = "-----BEGIN CERTIFICATE-----\n";
  ASSERT_TRUE(WriteServiceAccountFiles(dir, "token-1", ca, "ml").ok());
  EXPECT_EQ(Read(dir / "token"), "token-1");
  EXPECT_EQ(Read(dir / "ca.crt"), ca);
  EXPECT_EQ(Read(dir / "namespace"), "ml");
  EXPECT_EQ(Mode(dir / "token"), 0600u);
  EXPECT_EQ(Mode(dir / "ca.crt"), 0644u);
  EXPECT_EQ(Mode(dir / "namespace"), 0644u);

  // A refresh replaces the token and leaves no temporary file behind.
  ASSERT_TRUE(WriteServiceAccountFiles(dir, "token-2", ca, "ml").ok());
  EXPECT_EQ(Read(dir / "token"), "token-2");
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 3u);
}

TEST(ServiceAccountVolumeTest, TheMountPathMapsToTheDirectoryUnlessTheContainerUsesIt) {
  const fs::path dir = "/state/pods/ml_web-0_pod-1/var/run/secrets/kubernetes.io/serviceaccount";
  std::vector<PathMapping> mounts = {{"/etc/app/config", "/state/pods/x/volumes/config"},
                                     {"/data", "/state/claims/ml/data"}};
  AddServiceAccountMount(mounts, dir);
  ASSERT_EQ(mounts.size(), 3u);
  // Longest container path first, as ContainerMounts orders them.
  EXPECT_EQ(mounts[0].container_path, kServiceAccountMountPath);
  EXPECT_EQ(mounts[1].container_path, "/etc/app/config");
  EXPECT_EQ(mounts[2].container_path, "/data");
  EXPECT_EQ(RemapPath("/var/run/secrets/kubernetes.io/serviceaccount/token", mounts),
            dir.string() + "/token");
  EXPECT_EQ(RemapPath("--token-file=/var/run/secrets/kubernetes.io/serviceaccount/token", mounts),
            "--token-file=" + dir.string() + "/token");

  // The container mounts a volume of its own there: it keeps it.
  std::vector<PathMapping> own = {{kServiceAccountMountPath, "/state/pods/x/volumes/mine"}};
  AddServiceAccountMount(own, dir);
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].host_path.string(), "/state/pods/x/volumes/mine");

  // A mount above it (/var/run/secrets) still leaves the token path to the token.
  std::vector<PathMapping> above = {{"/var/run/secrets", "/state/pods/x/volumes/secrets"}};
  AddServiceAccountMount(above, dir);
  EXPECT_EQ(RemapPath("/var/run/secrets/kubernetes.io/serviceaccount/namespace", above),
            dir.string() + "/namespace");
  EXPECT_EQ(RemapPath("/var/run/secrets/other", above), "/state/pods/x/volumes/secrets/other");
}

}  // namespace
}  // namespace sluice::node
