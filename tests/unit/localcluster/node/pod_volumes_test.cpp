// Tests of MaterializeVolumes, ContainerMounts and RemapPath, in a scratch directory.
#include "localcluster/node/pod_volumes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/read_file.h"

namespace sluice::node {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void WriteAll(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

mode_t Mode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Relative paths of every file under `dir`, sorted.
std::vector<std::string> Files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_directory()) out.push_back(fs::relative(e.path(), dir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class VolumesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sluice-volumes-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    pod_dir_ = root_ / "pods" / "web-0";
    claims_dir_ = root_ / "claims";
    pod_ = json::parse(R"({
      "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-1",
                   "labels": {"tier": "front", "app": "web"},
                   "annotations": {"build": "42"}},
      "spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "64Mi"}}}],
               "volumes": []}
    })");
    config_maps_["cfg"] = json::parse(R"({"metadata": {"name": "cfg"},
        "data": {"app.yaml": "port: 80\n", "level": "debug"},
        "binaryData": {"blob.bin": "AAEC"}})");
    secrets_["tok"] = json::parse(R"({"metadata": {"name": "tok"},
        "data": {"token": "czNjcjN0", "ca.crt": "Q0E="}})");
    lookup_.config_map = [this](const std::string& name) -> std::optional<json> {
      auto it = config_maps_.find(name);
      if (it == config_maps_.end()) return std::nullopt;
      return it->second;
    };
    lookup_.secret = [this](const std::string& name) -> std::optional<json> {
      auto it = secrets_.find(name);
      if (it == secrets_.end()) return std::nullopt;
      return it->second;
    };
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  Result<VolumeDirs> Materialize(const json& volumes) {
    pod_["spec"]["volumes"] = volumes;
    return MaterializeVolumes(pod_, pod_dir_, claims_dir_, lookup_);
  }
  // The directory of a single volume that must materialise.
  fs::path One(const json& volume) {
    auto dirs = Materialize(json::array({volume}));
    EXPECT_TRUE(dirs.ok()) << dirs.status().ToString();
    if (!dirs.ok()) return {};
    return dirs->by_volume.at(volume["name"].get<std::string>());
  }
  Status Error(const json& volume) {
    auto dirs = Materialize(json::array({volume}));
    EXPECT_FALSE(dirs.ok());
    return dirs.ok() ? Status::Ok() : dirs.status();
  }

  fs::path root_;
  fs::path pod_dir_;
  fs::path claims_dir_;
  json pod_;
  std::map<std::string, json> config_maps_;
  std::map<std::string, json> secrets_;
  ObjectLookup lookup_;
};

TEST_F(VolumesTest, NoVolumes) {
  auto dirs = Materialize(json::array());
  ASSERT_TRUE(dirs.ok());
  EXPECT_TRUE(dirs->by_volume.empty());
}

TEST_F(VolumesTest, EmptyDirKeptAcrossCalls) {
  json v = json::parse(R"({"name": "scratch", "emptyDir": {}})");
  fs::path dir = One(v);
  EXPECT_EQ(dir, pod_dir_ / "volumes" / "scratch");
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(Files(dir).empty());
  WriteAll(dir / "state", "kept");
  EXPECT_EQ(One(v), dir);
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "state"), "kept");
}

TEST_F(VolumesTest, ConfigMapAllKeys) {
  fs::path dir = One(json::parse(R"({"name": "config", "configMap": {"name": "cfg"}})"));
  EXPECT_EQ(dir, pod_dir_ / "volumes" / "config");
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"app.yaml", "blob.bin", "level"}));
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "app.yaml"), "port: 80\n");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "blob.bin"), std::string("\x00\x01\x02", 3));
  EXPECT_EQ(Mode(dir / "level"), 0644u);
}

TEST_F(VolumesTest, ConfigMapItemsAndModes) {
  fs::path dir = One(json::parse(R"({"name": "config", "configMap": {"name": "cfg",
      "defaultMode": 256,
      "items": [{"key": "app.yaml", "path": "conf/nested/app.yaml"},
                {"key": "level", "path": "level.txt", "mode": 384}]}})"));
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"conf/nested/app.yaml", "level.txt"}));
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "conf/nested/app.yaml"), "port: 80\n");
  EXPECT_EQ(Mode(dir / "conf/nested/app.yaml"), 0400u);
  EXPECT_EQ(Mode(dir / "level.txt"), 0600u);
}

TEST_F(VolumesTest, ConfigMapMissing) {
  EXPECT_EQ(Error(json::parse(R"({"name": "c", "configMap": {"name": "x"}})")),
            Status::NotFound("configmap \"x\" not found"));
  fs::path dir = One(json::parse(R"({"name": "c", "configMap": {"name": "x", "optional": true}})"));
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(Files(dir).empty());
  EXPECT_EQ(Error(json::parse(R"({"name": "c", "configMap": {"name": "cfg",
      "items": [{"key": "nokey", "path": "f"}]}})")),
            Status::NotFound("configmap references non-existent config key: nokey"));
  dir = One(json::parse(R"({"name": "c", "configMap": {"name": "cfg", "optional": true,
      "items": [{"key": "nokey", "path": "f"}, {"key": "level", "path": "l"}]}})"));
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"l"}));
}

TEST_F(VolumesTest, BadModes) {
  Status s =
      Error(json::parse(R"({"name": "c", "configMap": {"name": "cfg", "defaultMode": 512}})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "spec.volumes[0].configMap.defaultMode");
  s = Error(json::parse(R"({"name": "c", "secret": {"secretName": "tok",
      "items": [{"key": "token", "path": "t", "mode": -1}]}})"));
  EXPECT_EQ(s.field(), "spec.volumes[0].secret.items[0].mode");
}

TEST_F(VolumesTest, Secret) {
  fs::path dir = One(json::parse(R"({"name": "creds", "secret": {"secretName": "tok",
      "defaultMode": 288}})"));
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"ca.crt", "token"}));
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "token"), "s3cr3t");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "ca.crt"), "CA");
  EXPECT_EQ(Mode(dir / "token"), 0440u);
  dir = One(json::parse(R"({"name": "creds", "secret": {"secretName": "tok",
      "items": [{"key": "token", "path": "auth/token"}]}})"));
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"auth/token"}));
  EXPECT_EQ(Error(json::parse(R"({"name": "s", "secret": {"secretName": "nope"}})")),
            Status::NotFound("secret \"nope\" not found"));
  EXPECT_EQ(Error(json::parse(R"({"name": "s", "secret": {"secretName": "tok",
      "items": [{"key": "nokey", "path": "f"}]}})")),
            Status::NotFound("references non-existent secret key: nokey"));
  dir = One(json::parse(R"({"name": "s", "secret": {"secretName": "nope", "optional": true}})"));
  EXPECT_TRUE(Files(dir).empty());
}

TEST_F(VolumesTest, DownwardApi) {
  fs::path dir = One(json::parse(R"({"name": "info", "downwardAPI": {"items": [
      {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
      {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}},
      {"path": "uid", "fieldRef": {"fieldPath": "metadata.uid"}},
      {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
      {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}, "mode": 256},
      {"path": "sub/tier", "fieldRef": {"fieldPath": "metadata.labels['tier']"}},
      {"path": "mem", "resourceFieldRef": {"containerName": "app", "resource": "limits.memory",
                                           "divisor": "1Mi"}}]}})"));
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "name"), "web-0");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "ns"), "shop");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "uid"), "u-1");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "labels"), "app=\"web\"\ntier=\"front\"");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "annotations"), "build=\"42\"");
  EXPECT_EQ(Mode(dir / "annotations"), 0400u);
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "sub/tier"), "front");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "mem"), "64");
}

TEST_F(VolumesTest, DownwardApiErrors) {
  Status s = Error(json::parse(R"({"name": "info", "downwardAPI": {"items": [
      {"path": "ip", "fieldRef": {"fieldPath": "status.podIP"}}]}})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unsupported fieldPath: status.podIP"), std::string::npos);
  s = Error(json::parse(R"({"name": "info", "downwardAPI": {"items": [
      {"path": "m", "resourceFieldRef": {"containerName": "ghost", "resource": "limits.memory"}}]}})"));
  EXPECT_EQ(s.field(), "spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName");
  s = Error(json::parse(R"({"name": "info", "downwardAPI": {"items": [{"path": "x"}]}})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST_F(VolumesTest, ProjectedMergesSources) {
  fs::path dir = One(json::parse(R"({"name": "all", "projected": {"defaultMode": 256, "sources": [
      {"configMap": {"name": "cfg", "items": [{"key": "level", "path": "config/level"}]}},
      {"secret": {"name": "tok", "items": [{"key": "token", "path": "secret/token", "mode": 384}]}},
      {"downwardAPI": {"items": [{"path": "podname", "fieldRef": {"fieldPath": "metadata.name"}}]}},
      {"configMap": {"name": "missing", "optional": true}}]}})"));
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"config/level", "podname", "secret/token"}));
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "config/level"), "debug");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "secret/token"), "s3cr3t");
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "podname"), "web-0");
  EXPECT_EQ(Mode(dir / "config/level"), 0400u);
  EXPECT_EQ(Mode(dir / "secret/token"), 0600u);
}

TEST_F(VolumesTest, ProjectedErrors) {
  EXPECT_EQ(Error(json::parse(R"({"name": "all", "projected": {"sources": [
      {"secret": {"name": "nope"}}]}})")),
            Status::NotFound("secret \"nope\" not found"));
  Status s = Error(json::parse(R"({"name": "all", "projected": {"sources": [
      {"serviceAccountToken": {"path": "token"}}]}})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("serviceAccountToken"), std::string::npos);
  EXPECT_EQ(s.field(), "spec.volumes[0].projected.sources[0]");
}

TEST_F(VolumesTest, PersistentVolumeClaimOutlivesPod) {
  json v = json::parse(R"({"name": "data", "persistentVolumeClaim": {"claimName": "db"}})");
  fs::path dir = One(v);
  EXPECT_EQ(dir, claims_dir_ / "shop" / "db");
  EXPECT_TRUE(fs::is_directory(dir));
  WriteAll(dir / "table", "rows");
  fs::remove_all(pod_dir_);  // The caller deletes the pod.
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "table"), "rows");
  EXPECT_EQ(One(v), dir);  // A new pod with the same claim sees the data.
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "table"), "rows");
  EXPECT_EQ(
      Error(json::parse(R"({"name": "d", "persistentVolumeClaim": {"claimName": "../x"}})")).code(),
      StatusCode::kInvalidArgument);
}

TEST_F(VolumesTest, HostPath) {
  fs::path host = root_ / "host-data";
  fs::create_directories(host);
  WriteAll(host / "f", "x");
  json v = {{"name", "h"}, {"hostPath", {{"path", host.string()}}}};
  EXPECT_EQ(One(v), host);
  EXPECT_FALSE(fs::exists(pod_dir_ / "volumes" / "h"));  // No copy.

  fs::path created = root_ / "made" / "here";
  v = {{"name", "h"}, {"hostPath", {{"path", created.string()}, {"type", "DirectoryOrCreate"}}}};
  EXPECT_EQ(One(v), created);
  EXPECT_TRUE(fs::is_directory(created));

  fs::path file = root_ / "made" / "file";
  v = {{"name", "h"}, {"hostPath", {{"path", file.string()}, {"type", "FileOrCreate"}}}};
  EXPECT_EQ(One(v), file);
  EXPECT_TRUE(fs::is_regular_file(file));
  v = {{"name", "h"}, {"hostPath", {{"path", file.string()}, {"type", "File"}}}};
  EXPECT_EQ(One(v), file);

  v = {{"name", "h"}, {"hostPath", {{"path", (root_ / "absent").string()}, {"type", "Directory"}}}};
  EXPECT_EQ(Error(v).code(), StatusCode::kNotFound);
  v = {{"name", "h"}, {"hostPath", {{"path", file.string()}, {"type", "Directory"}}}};
  EXPECT_EQ(Error(v), Status::InvalidArgument(
                          "hostPath type check failed: " + file.string() + " is not a directory",
                          "spec.volumes[0].hostPath.type"));
  v = {{"name", "h"}, {"hostPath", {{"path", host.string()}, {"type", "Socket"}}}};
  EXPECT_EQ(Error(v).code(), StatusCode::kInvalidArgument);
  v = {{"name", "h"}, {"hostPath", {{"path", "relative/dir"}}}};
  EXPECT_EQ(Error(v).code(), StatusCode::kInvalidArgument);
}

TEST_F(VolumesTest, RefreshRewritesContents) {
  json v = json::parse(R"({"name": "config", "configMap": {"name": "cfg"}})");
  fs::path dir = One(v);
  ASSERT_EQ(test_support::ReadFileOrEmpty(dir / "level"), "debug");
  config_maps_["cfg"]["data"]["level"] = "info";
  config_maps_["cfg"]["data"].erase("app.yaml");
  config_maps_["cfg"]["data"]["new"] = "n";
  config_maps_["cfg"].erase("binaryData");
  EXPECT_EQ(One(v), dir);
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"level", "new"}));
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "level"), "info");

  // An unchanged file is left alone (same inode); a changed one is replaced.
  struct stat st1 {};
  ASSERT_EQ(::stat((dir / "new").c_str(), &st1), 0);
  config_maps_["cfg"]["data"]["level"] = "warn";
  EXPECT_EQ(One(v), dir);
  struct stat st2 {};
  ASSERT_EQ(::stat((dir / "new").c_str(), &st2), 0);
  EXPECT_EQ(st1.st_ino, st2.st_ino);
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "level"), "warn");

  // Items moving a key into a subdirectory: the old file goes, no temporary files stay.
  WriteAll(dir / ".level.tmp-abcdef", "stale");
  v = json::parse(R"({"name": "config", "configMap": {"name": "cfg", "defaultMode": 384,
      "items": [{"key": "level", "path": "level/value"}]}})");
  EXPECT_EQ(One(v), dir);
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"level/value"}));
  EXPECT_EQ(Mode(dir / "level/value"), 0600u);
  // And back.
  v = json::parse(R"({"name": "config", "configMap": {"name": "cfg"}})");
  EXPECT_EQ(One(v), dir);
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"level", "new"}));

  // The object disappearing from an optional volume empties it.
  config_maps_.erase("cfg");
  v = json::parse(R"({"name": "config", "configMap": {"name": "cfg", "optional": true}})");
  EXPECT_EQ(One(v), dir);
  EXPECT_TRUE(Files(dir).empty());
}

TEST_F(VolumesTest, SecretRefreshAndModeChange) {
  json v = json::parse(R"({"name": "s", "secret": {"secretName": "tok"}})");
  fs::path dir = One(v);
  EXPECT_EQ(Mode(dir / "token"), 0644u);
  secrets_["tok"]["data"]["token"] = "bmV3";
  v["secret"]["defaultMode"] = 256;
  EXPECT_EQ(One(v), dir);
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "token"), "new");
  EXPECT_EQ(Mode(dir / "token"), 0400u);
}

TEST_F(VolumesTest, PathTraversalRejected) {
  for (const char* bad : {"../escape", "/etc/passwd", "a/../../b", "..", "a/..", ""}) {
    json v = {{"name", "c"},
              {"configMap", {{"name", "cfg"}, {"items", {{{"key", "level"}, {"path", bad}}}}}}};
    Status s = Error(v);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.field(), "spec.volumes[0].configMap.items[0].path") << bad;
  }
  EXPECT_FALSE(fs::exists(root_ / "escape"));
  json v = json::parse(R"({"name": "d", "downwardAPI": {"items": [
      {"path": "../../x", "fieldRef": {"fieldPath": "metadata.name"}}]}})");
  EXPECT_EQ(Error(v).code(), StatusCode::kInvalidArgument);
  // "a..b" is a fine file name.
  json ok = {{"name", "c"},
             {"configMap", {{"name", "cfg"}, {"items", {{{"key", "level"}, {"path", "a..b"}}}}}}};
  EXPECT_TRUE(fs::exists(One(ok) / "a..b"));
  // Volume names become directory names.
  EXPECT_EQ(Error(json::parse(R"({"name": "../up", "emptyDir": {}})")).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(VolumesTest, UnsupportedVolumeType) {
  auto dirs = Materialize(json::parse(R"([{"name": "ok", "emptyDir": {}},
      {"name": "net", "nfs": {"server": "x", "path": "/"}}])"));
  ASSERT_FALSE(dirs.ok());
  EXPECT_EQ(dirs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dirs.status().message().find("spec.volumes[1]"), std::string::npos);
  EXPECT_NE(dirs.status().message().find("nfs"), std::string::npos);
  EXPECT_EQ(Error(json::parse(R"({"name": "none"})")).code(), StatusCode::kInvalidArgument);
  dirs =
      Materialize(json::parse(R"([{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}])"));
  EXPECT_FALSE(dirs.ok());
}

TEST_F(VolumesTest, ContainerMounts) {
  auto dirs = Materialize(json::parse(R"([
      {"name": "config", "configMap": {"name": "cfg"}},
      {"name": "data", "emptyDir": {}}])"));
  ASSERT_TRUE(dirs.ok()) << dirs.status().ToString();
  json c = json::parse(R"({"name": "app", "volumeMounts": [
      {"name": "data", "mountPath": "/data/"},
      {"name": "data", "mountPath": "/data/cache", "subPath": "cache/v1"},
      {"name": "config", "mountPath": "/etc/app/app.yaml", "subPath": "app.yaml", "readOnly": true}]})");
  auto mounts = ContainerMounts(c, *dirs);
  ASSERT_TRUE(mounts.ok()) << mounts.status().ToString();
  ASSERT_EQ(mounts->size(), 3u);
  const fs::path vols = pod_dir_ / "volumes";
  EXPECT_EQ((*mounts)[0].container_path, "/etc/app/app.yaml");
  EXPECT_EQ((*mounts)[0].host_path, vols / "config" / "app.yaml");
  EXPECT_EQ((*mounts)[1].container_path, "/data/cache");
  EXPECT_EQ((*mounts)[1].host_path, vols / "data" / "cache" / "v1");
  EXPECT_TRUE(fs::is_directory(vols / "data" / "cache" / "v1"));  // subPath created.
  EXPECT_EQ((*mounts)[2].container_path, "/data");
  EXPECT_EQ((*mounts)[2].host_path, vols / "data");
  EXPECT_TRUE(fs::is_regular_file(vols / "config" / "app.yaml"));
}

TEST_F(VolumesTest, ContainerMountErrors) {
  VolumeDirs dirs;
  dirs.by_volume["data"] = root_ / "data";
  auto err = [&](const std::string& mounts) {
    auto r = ContainerMounts(json::parse("{\"volumeMounts\": " + mounts + "}"), dirs);
    EXPECT_FALSE(r.ok()) << mounts;
    return r.ok() ? Status::Ok() : r.status();
  };
  EXPECT_EQ(err(R"([{"name": "data", "mountPath": "/d"}, {"name": "ghost", "mountPath": "/g"}])"),
            Status::InvalidArgument("volumeMounts[1].name: Not found: \"ghost\"",
                                    "volumeMounts[1].name"));
  EXPECT_EQ(err(R"([{"name": "data", "mountPath": "rel"}])").field(), "volumeMounts[0].mountPath");
  EXPECT_EQ(err(R"([{"name": "data", "mountPath": "/"}])").field(), "volumeMounts[0].mountPath");
  EXPECT_EQ(
      err(R"([{"name": "data", "mountPath": "/d"}, {"name": "data", "mountPath": "/d/"}])").field(),
      "volumeMounts[1].mountPath");
  EXPECT_EQ(err(R"([{"name": "data", "mountPath": "/d", "subPath": "../x"}])").field(),
            "volumeMounts[0].subPath");
  EXPECT_EQ(err(R"([{"name": "data", "mountPath": "/d", "subPath": "/abs"}])").field(),
            "volumeMounts[0].subPath");
  EXPECT_EQ(err(R"js([{"name": "data", "mountPath": "/d", "subPathExpr": "$(POD)"}])js").field(),
            "volumeMounts[0].subPathExpr");
  auto none = ContainerMounts(json::parse(R"({"name": "app"})"), dirs);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(RemapPathTest, Rules) {
  std::vector<PathMapping> mounts = {
      {"/etc/app/app.yaml", "/h/config/app.yaml"},
      {"/data/cache", "/h/cache"},
      {"/data", "/h/data/"},
      {"/etc/app", "/h/config"},
  };
  // Exact and prefix + "/".
  EXPECT_EQ(RemapPath("/data", mounts), "/h/data");
  EXPECT_EQ(RemapPath("/data/", mounts), "/h/data/");
  EXPECT_EQ(RemapPath("/data/x/y.txt", mounts), "/h/data/x/y.txt");
  EXPECT_EQ(RemapPath("/etc/app/app.yaml", mounts), "/h/config/app.yaml");
  EXPECT_EQ(RemapPath("/etc/app/other.yaml", mounts), "/h/config/other.yaml");
  // Longest mountPath wins.
  EXPECT_EQ(RemapPath("/data/cache/k", mounts), "/h/cache/k");
  // Not a path component prefix, relative, unrelated: unchanged.
  EXPECT_EQ(RemapPath("/database", mounts), "/database");
  EXPECT_EQ(RemapPath("/data-old/x", mounts), "/data-old/x");
  EXPECT_EQ(RemapPath("data/x", mounts), "data/x");
  EXPECT_EQ(RemapPath("/usr/bin/python3", mounts), "/usr/bin/python3");
  EXPECT_EQ(RemapPath("", mounts), "");
  EXPECT_EQ(RemapPath("--verbose", mounts), "--verbose");
  EXPECT_EQ(RemapPath("x /data", mounts), "x /data");
  // --flag=value and NAME=value.
  EXPECT_EQ(RemapPath("--config=/etc/app/app.yaml", mounts), "--config=/h/config/app.yaml");
  EXPECT_EQ(RemapPath("DATA_DIR=/data/in", mounts), "DATA_DIR=/h/data/in");
  EXPECT_EQ(RemapPath("--level=debug", mounts), "--level=debug");
  EXPECT_EQ(RemapPath("--opt=a=/data", mounts), "--opt=a=/data");  // Only after the first '='.
  // Comma-separated lists, after '=' or as the whole value.
  EXPECT_EQ(RemapPath("--files=/data/a,/etc/app/b,/other,rel", mounts),
            "--files=/h/data/a,/h/config/b,/other,rel");
  EXPECT_EQ(RemapPath("/data/a,/data/cache", mounts), "/h/data/a,/h/cache");
  EXPECT_EQ(RemapPath("a,,b", mounts), "a,,b");
  EXPECT_EQ(RemapPath("/data/a,b=c", mounts), "/h/data/a,b=c");
  EXPECT_EQ(RemapPath("rel,/data/x", mounts), "rel,/h/data/x");
  EXPECT_EQ(RemapPath("LIST=/data/x,/etc/app", mounts), "LIST=/h/data/x,/h/config");
  // A value that starts with a mounted path keeps its '=' as part of the path.
  EXPECT_EQ(RemapPath("/data/k=v", mounts), "/h/data/k=v");
  EXPECT_EQ(RemapPath("/x", {}), "/x");
}

}  // namespace
}  // namespace sluice::node
