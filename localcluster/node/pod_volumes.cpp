#include "localcluster/node/pod_volumes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "common/file/atomic_file.h"
#include "common/json/fields.h"

namespace sluice::node {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr mode_t kDefaultFileMode = 0644;

struct FileProjection {
  std::string data;
  mode_t mode = kDefaultFileMode;
};
// Keyed by the normalised relative path inside the volume directory.
using Payload = std::map<std::string, FileProjection>;

std::string QuotedName(std::string_view s) { return "\"" + std::string(s) + "\""; }

Status Internal(const std::string& what, const fs::path& path, const std::error_code& ec) {
  return Status::Internal(what + " " + path.string() + ": " + ec.message());
}

std::optional<json> LookupVolumeSource(
    const std::function<std::optional<json>(const std::string&)>& fn, const std::string& name) {
  if (!fn) return std::nullopt;
  return fn(name);
}

// A relative path without `..` elements, normalised ("a/./b/" -> "a/b").
Result<std::string> CheckRelativePath(std::string_view path, const std::string& field) {
  if (path.empty()) return Status::InvalidArgument(field + ": Required value", field);
  if (path.front() == '/') {
    return Status::InvalidArgument(
        field + ": Invalid value: " + QuotedName(path) + ": must be a relative path", field);
  }
  for (const auto& element : fs::path(path)) {
    if (element == "..") {
      return Status::InvalidArgument(
          field + ": Invalid value: " + QuotedName(path) + ": must not contain '..'", field);
    }
  }
  std::string normal = fs::path(path).lexically_normal().generic_string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  if (normal.empty() || normal == ".") {
    return Status::InvalidArgument(
        field + ": Invalid value: " + QuotedName(path) + ": must name a file", field);
  }
  return normal;
}

// A single path element usable as a directory name (volume names, claim names, namespaces).
Status CheckName(const std::string& name, const std::string& field) {
  if (name.empty()) return Status::InvalidArgument(field + ": Required value", field);
  if (name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return Status::InvalidArgument(
        field + ": Invalid value: " + QuotedName(name) + ": must be a single path element", field);
  }
  return Status::Ok();
}

Result<mode_t> ModeOf(const json& obj, const char* key, mode_t fallback, const std::string& field) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 0777) {
    return Status::InvalidArgument(field + ": Invalid value: " + it->dump() +
                                       ": must be a number between 0 and 0777 (octal), both "
                                       "inclusive",
                                   field);
  }
  return static_cast<mode_t>(it->get<int64_t>());
}

// ConfigMap key: data, then binaryData (base64).
Result<std::optional<std::string>> ConfigMapValue(const json& cm, const std::string& key) {
  const json& data = ObjectField(cm, "data");
  if (auto it = data.is_object() ? data.find(key) : data.end();
      data.is_object() && it != data.end() && it->is_string()) {
    return std::optional(it->get<std::string>());
  }
  const json& bin = ObjectField(cm, "binaryData");
  if (auto it = bin.is_object() ? bin.find(key) : bin.end();
      bin.is_object() && it != bin.end() && it->is_string()) {
    SLUICE_ASSIGN_OR_RETURN(std::string v, DecodeBase64(it->get<std::string>()));
    return std::optional(std::move(v));
  }
  return std::optional<std::string>();
}

Result<std::optional<std::string>> SecretValue(const json& secret, const std::string& key) {
  const json& data = ObjectField(secret, "data");
  if (auto it = data.is_object() ? data.find(key) : data.end();
      data.is_object() && it != data.end() && it->is_string()) {
    auto v = DecodeBase64(it->get<std::string>());
    if (!v.ok()) {
      return Status::InvalidArgument(
          "secret " + QuotedName(StringField(ObjectField(secret, "metadata"), "name")) + " key " +
          key + ": " + v.status().message());
    }
    return std::optional(std::move(v).value());
  }
  const json& sd = ObjectField(secret, "stringData");
  if (auto it = sd.is_object() ? sd.find(key) : sd.end();
      sd.is_object() && it != sd.end() && it->is_string()) {
    return std::optional(it->get<std::string>());
  }
  return std::optional<std::string>();
}

// Keys of a ConfigMap (data and binaryData) or Secret (data).
std::vector<std::string> KeysOf(const json& object, bool config_map) {
  std::set<std::string> keys;
  for (const char* section : config_map ? std::vector<const char*>{"data", "binaryData"}
                                        : std::vector<const char*>{"data", "stringData"}) {
    const json& m = ObjectField(object, section);
    if (!m.is_object()) continue;
    for (auto it = m.begin(); it != m.end(); ++it) keys.insert(it.key());
  }
  return {keys.begin(), keys.end()};
}

// configMap or secret source (volume or projected) into `payload`.
Status AddKeyedPayload(const json& source, bool config_map, const char* name_key,
                       const ObjectLookup& lookup, mode_t default_mode, const std::string& field,
                       Payload& payload) {
  const std::string name = StringField(source, name_key);
  const bool optional = BoolField(source, "optional");
  auto object = LookupVolumeSource(config_map ? lookup.config_map : lookup.secret, name);
  if (!object) {
    if (optional) return Status::Ok();
    return Status::NotFound((config_map ? "configmap " : "secret ") + QuotedName(name) +
                            " not found");
  }
  auto value_of = [&](const std::string& key) {
    return config_map ? ConfigMapValue(*object, key) : SecretValue(*object, key);
  };
  const json& items = ArrayField(source, "items");
  if (items.empty()) {
    for (const std::string& key : KeysOf(*object, config_map)) {
      SLUICE_ASSIGN_OR_RETURN(std::string path, CheckRelativePath(key, field + ".name"));
      SLUICE_ASSIGN_OR_RETURN(auto value, value_of(key));
      if (value) payload[path] = FileProjection{std::move(*value), default_mode};
    }
    return Status::Ok();
  }
  for (size_t j = 0; j < items.size(); ++j) {
    const json& item = items[j];
    const std::string item_field = field + ".items[" + std::to_string(j) + "]";
    const std::string key = StringField(item, "key");
    SLUICE_ASSIGN_OR_RETURN(std::string path,
                            CheckRelativePath(StringField(item, "path"), item_field + ".path"));
    SLUICE_ASSIGN_OR_RETURN(mode_t mode, ModeOf(item, "mode", default_mode, item_field + ".mode"));
    SLUICE_ASSIGN_OR_RETURN(auto value, value_of(key));
    if (!value) {
      if (optional) continue;
      return Status::NotFound(config_map ? "configmap references non-existent config key: " + key
                                         : "references non-existent secret key: " + key);
    }
    payload[path] = FileProjection{std::move(*value), mode};
  }
  return Status::Ok();
}

const json* FindContainer(const json& pod, const std::string& name) {
  const json& spec = ObjectField(pod, "spec");
  for (const char* list : {"containers", "initContainers"}) {
    for (const json& c : ArrayField(spec, list)) {
      if (StringField(c, "name") == name) return &c;
    }
  }
  return nullptr;
}

Status AddDownwardPayload(const json& source, const json& pod, mode_t default_mode,
                          const std::string& field, Payload& payload) {
  const json& items = ArrayField(source, "items");
  for (size_t j = 0; j < items.size(); ++j) {
    const json& item = items[j];
    const std::string item_field = field + ".items[" + std::to_string(j) + "]";
    SLUICE_ASSIGN_OR_RETURN(std::string path,
                            CheckRelativePath(StringField(item, "path"), item_field + ".path"));
    SLUICE_ASSIGN_OR_RETURN(mode_t mode, ModeOf(item, "mode", default_mode, item_field + ".mode"));
    std::string value;
    if (const json& ref = ObjectField(item, "fieldRef"); ref.is_object()) {
      const std::string path_field = item_field + ".fieldRef.fieldPath";
      const std::string field_path = StringField(ref, "fieldPath");
      // Only metadata is known when volumes are set up (kube validates the same set).
      if (!field_path.starts_with("metadata.")) {
        return Status::InvalidArgument(path_field + ": unsupported fieldPath: " + field_path,
                                       path_field);
      }
      auto v = PodFieldValue(pod, field_path, PodFacts{});
      if (!v.ok()) {
        return Status::InvalidArgument(path_field + ": " + v.status().message(), path_field);
      }
      value = std::move(v).value();
    } else if (const json& rref = ObjectField(item, "resourceFieldRef"); rref.is_object()) {
      const std::string cname = StringField(rref, "containerName");
      const std::string name_field = item_field + ".resourceFieldRef.containerName";
      if (cname.empty()) {
        return Status::InvalidArgument(name_field + ": Required value", name_field);
      }
      const json* container = FindContainer(pod, cname);
      if (container == nullptr) {
        return Status::InvalidArgument(name_field + ": Not found: " + QuotedName(cname),
                                       name_field);
      }
      auto v = ContainerResourceValue(*container, rref);
      if (!v.ok()) {
        return Status::InvalidArgument(item_field + ".resourceFieldRef: " + v.status().message(),
                                       item_field + ".resourceFieldRef");
      }
      value = std::move(v).value();
    } else {
      return Status::InvalidArgument(
          item_field + ": must specify one of fieldRef or resourceFieldRef", item_field);
    }
    payload[path] = FileProjection{std::move(value), mode};
  }
  return Status::Ok();
}

// Makes `dir` hold exactly `payload`.
Status WritePayload(const fs::path& dir, const Payload& payload, const std::string& field) {
  // A path cannot be both a file and a directory.
  for (const auto& [path, unused] : payload) {
    for (fs::path p = fs::path(path).parent_path(); !p.empty(); p = p.parent_path()) {
      if (payload.contains(p.generic_string())) {
        return Status::InvalidArgument(field + ": conflicting paths " +
                                           QuotedName(p.generic_string()) + " and " +
                                           QuotedName(path),
                                       field);
      }
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("creating", dir, ec);
  std::set<fs::path> keep;
  for (const auto& [path, file] : payload) {
    fs::path target = dir;
    fs::path rel(path);
    for (auto it = rel.begin(); it != rel.end(); ++it) {
      target /= *it;
      if (std::next(it) == rel.end()) break;
      keep.insert(target);
      auto st = fs::symlink_status(target, ec);
      if (fs::exists(st) && !fs::is_directory(st)) fs::remove(target, ec);
      fs::create_directory(target, ec);
      if (ec) return Internal("creating", target, ec);
    }
    keep.insert(target);
    SLUICE_RETURN_IF_ERROR(UpdateVolumeFile(target, file.data, file.mode));
  }
  // Delete what is no longer projected (stale keys, leftovers of interrupted writes).
  std::vector<fs::path> stale;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!keep.contains(it->path())) {
      stale.push_back(it->path());
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
    }
  }
  if (ec) return Internal("listing", dir, ec);
  for (const fs::path& p : stale) {
    fs::remove_all(p, ec);
    if (ec) return Internal("removing", p, ec);
  }
  return Status::Ok();
}

Status CheckHostPath(const fs::path& path, const std::string& type, const std::string& field) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  const bool exists = fs::exists(st);
  auto fail = [&](const char* what) {
    std::string msg = "hostPath type check failed: " + path.string() + " is not a " + what;
    if (!exists) return Status::NotFound(msg);
    return Status::InvalidArgument(msg, field);
  };
  if (type.empty()) return Status::Ok();
  if (type == "DirectoryOrCreate") {
    if (!exists) {
      fs::create_directories(path, ec);
      if (ec) return Internal("creating", path, ec);
      return Status::Ok();
    }
    return fs::is_directory(st) ? Status::Ok() : fail("directory");
  }
  if (type == "FileOrCreate") {
    if (!exists) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) {
        return Status::Internal("creating " + path.string() + ": " + std::strerror(errno));
      }
      ::close(fd);
      return Status::Ok();
    }
    return fs::is_regular_file(st) ? Status::Ok() : fail("file");
  }
  if (type == "Directory") return fs::is_directory(st) ? Status::Ok() : fail("directory");
  if (type == "File") return fs::is_regular_file(st) ? Status::Ok() : fail("file");
  if (type == "Socket") return fs::is_socket(st) ? Status::Ok() : fail("socket file");
  if (type == "CharDevice")
    return fs::is_character_file(st) ? Status::Ok() : fail("character device");
  if (type == "BlockDevice") return fs::is_block_file(st) ? Status::Ok() : fail("block device");
  return Status::InvalidArgument(field + ": Unsupported value: " + QuotedName(type), field);
}

// The known volume types; any other member but `name` is an unsupported type.
constexpr std::string_view kHandled[] = {"emptyDir",    "configMap", "secret",
                                         "downwardAPI", "projected", "persistentVolumeClaim",
                                         "hostPath"};

Result<fs::path> MaterializeOne(const json& pod, const json& volume, size_t index,
                                const fs::path& pod_dir, const fs::path& claims_dir,
                                const ObjectLookup& lookup) {
  const std::string field = "spec.volumes[" + std::to_string(index) + "]";
  const std::string name = StringField(volume, "name");
  SLUICE_RETURN_IF_ERROR(CheckName(name, field + ".name"));
  const fs::path dir = pod_dir / "volumes" / name;
  std::string type;
  for (std::string_view t : kHandled) {
    if (volume.contains(t) && !volume[std::string(t)].is_null()) {
      type = t;
      break;
    }
  }
  if (type.empty()) {
    for (auto it = volume.begin(); it != volume.end(); ++it) {
      if (it.key() != "name") {
        return Status::InvalidArgument(field + ": unsupported volume type " + QuotedName(it.key()) +
                                           " (volume " + QuotedName(name) + ")",
                                       field + "." + it.key());
      }
    }
    return Status::InvalidArgument(field + ": must specify a volume type", field);
  }
  const json& source = volume[type];
  const std::string source_field = field + "." + type;
  std::error_code ec;
  if (type == "emptyDir") {
    fs::create_directories(dir, ec);
    if (ec) return Internal("creating", dir, ec);
    return dir;
  }
  if (type == "persistentVolumeClaim") {
    const std::string claim = StringField(source, "claimName");
    SLUICE_RETURN_IF_ERROR(CheckName(claim, source_field + ".claimName"));
    const std::string ns = PodNamespace(pod);
    SLUICE_RETURN_IF_ERROR(CheckName(ns, "metadata.namespace"));
    fs::path claim_dir = claims_dir / ns / claim;
    fs::create_directories(claim_dir, ec);
    if (ec) return Internal("creating", claim_dir, ec);
    return claim_dir;
  }
  if (type == "hostPath") {
    const std::string path = StringField(source, "path");
    if (path.empty() || path.front() != '/') {
      return Status::InvalidArgument(
          source_field + ".path: Invalid value: " + QuotedName(path) + ": must be an absolute path",
          source_field + ".path");
    }
    fs::path host = fs::path(path).lexically_normal();
    SLUICE_RETURN_IF_ERROR(
        CheckHostPath(host, StringField(source, "type"), source_field + ".type"));
    return host;
  }
  SLUICE_ASSIGN_OR_RETURN(mode_t default_mode, ModeOf(source, "defaultMode", kDefaultFileMode,
                                                      source_field + ".defaultMode"));
  Payload payload;
  if (type == "configMap") {
    SLUICE_RETURN_IF_ERROR(AddKeyedPayload(source, /*config_map=*/true, "name", lookup,
                                           default_mode, source_field, payload));
  } else if (type == "secret") {
    SLUICE_RETURN_IF_ERROR(AddKeyedPayload(source, /*config_map=*/false, "secretName", lookup,
                                           default_mode, source_field, payload));
  } else if (type == "downwardAPI") {
    SLUICE_RETURN_IF_ERROR(AddDownwardPayload(source, pod, default_mode, source_field, payload));
  } else {  // projected
    const json& sources = ArrayField(source, "sources");
    for (size_t k = 0; k < sources.size(); ++k) {
      const json& s = sources[k];
      const std::string f = source_field + ".sources[" + std::to_string(k) + "]";
      if (const json& cm = ObjectField(s, "configMap"); cm.is_object()) {
        SLUICE_RETURN_IF_ERROR(AddKeyedPayload(cm, /*config_map=*/true, "name", lookup,
                                               default_mode, f + ".configMap", payload));
      } else if (const json& sec = ObjectField(s, "secret"); sec.is_object()) {
        SLUICE_RETURN_IF_ERROR(AddKeyedPayload(sec, /*config_map=*/false, "name", lookup,
                                               default_mode, f + ".secret", payload));
      } else if (const json& dw = ObjectField(s, "downwardAPI"); dw.is_object()) {
        SLUICE_RETURN_IF_ERROR(
            AddDownwardPayload(dw, pod, default_mode, f + ".downwardAPI", payload));
      } else {
        std::string what = s.is_object() && !s.empty() ? s.begin().key() : std::string("(none)");
        return Status::InvalidArgument(f + ": unsupported projected volume source " +
                                           QuotedName(what) + " (volume " + QuotedName(name) + ")",
                                       f);
      }
    }
  }
  SLUICE_RETURN_IF_ERROR(WritePayload(dir, payload, source_field));
  return dir;
}

std::string HostString(const fs::path& p) {
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// The remapped value when `value` is (under) a mount path.
std::optional<std::string> RemapOne(std::string_view value,
                                    const std::vector<PathMapping>& mounts) {
  const PathMapping* best = nullptr;
  for (const PathMapping& m : mounts) {
    const std::string& cp = m.container_path;
    if (cp.empty() || !value.starts_with(cp)) continue;
    if (value.size() != cp.size() && value[cp.size()] != '/') continue;
    if (best == nullptr || cp.size() > best->container_path.size()) best = &m;
  }
  if (best == nullptr) return std::nullopt;
  return HostString(best->host_path) + std::string(value.substr(best->container_path.size()));
}

std::string RemapList(std::string_view value, const std::vector<PathMapping>& mounts) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t comma = value.find(',', start);
    std::string_view element = value.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto mapped = RemapOne(element, mounts);
    out += mapped ? *mapped : std::string(element);
    if (comma == std::string_view::npos) break;
    out += ',';
    start = comma + 1;
  }
  return out;
}

}  // namespace

Status UpdateVolumeFile(const fs::path& target, const std::string& data, mode_t mode) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == mode &&
      static_cast<size_t>(st.st_size) == data.size()) {
    std::ifstream in(target, std::ios::binary);
    std::ostringstream existing;
    existing << in.rdbuf();
    if (in && existing.str() == data) return Status::Ok();
  }
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(target, ec))) fs::remove_all(target, ec);
  return file::WriteFileAtomic(target, data, mode);
}

Result<VolumeDirs> MaterializeVolumes(const json& pod, const fs::path& pod_dir,
                                      const fs::path& claims_dir, const ObjectLookup& lookup) {
  VolumeDirs dirs;
  const json& volumes = ArrayField(ObjectField(pod, "spec"), "volumes");
  for (size_t i = 0; i < volumes.size(); ++i) {
    const json& volume = volumes[i];
    if (!volume.is_object()) {
      const std::string field = "spec.volumes[" + std::to_string(i) + "]";
      return Status::InvalidArgument(field + ": must be an object", field);
    }
    SLUICE_ASSIGN_OR_RETURN(fs::path dir,
                            MaterializeOne(pod, volume, i, pod_dir, claims_dir, lookup));
    if (!dirs.by_volume.emplace(StringField(volume, "name"), dir).second) {
      const std::string field = "spec.volumes[" + std::to_string(i) + "].name";
      return Status::InvalidArgument(
          field + ": Duplicate value: " + QuotedName(StringField(volume, "name")), field);
    }
  }
  return dirs;
}

Result<std::vector<PathMapping>> ContainerMounts(const json& container, const VolumeDirs& dirs) {
  std::vector<PathMapping> mounts;
  std::set<std::string> seen;
  const json& list = ArrayField(container, "volumeMounts");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = list[i];
    const std::string field = "volumeMounts[" + std::to_string(i) + "]";
    const std::string name = StringField(m, "name");
    auto dir = dirs.by_volume.find(name);
    if (dir == dirs.by_volume.end()) {
      return Status::InvalidArgument(field + ".name: Not found: " + QuotedName(name),
                                     field + ".name");
    }
    const std::string mount_path = StringField(m, "mountPath");
    if (mount_path.empty() || mount_path.front() != '/') {
      return Status::InvalidArgument(field + ".mountPath: Invalid value: " +
                                         QuotedName(mount_path) + ": must be an absolute path",
                                     field + ".mountPath");
    }
    std::string normal = fs::path(mount_path).lexically_normal().generic_string();
    while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
    if (normal == "/") {
      return Status::InvalidArgument(field +
                                         ".mountPath: Invalid value: \"/\": cannot mount over "
                                         "the root of a local process",
                                     field + ".mountPath");
    }
    if (!seen.insert(normal).second) {
      return Status::InvalidArgument(
          field + ".mountPath: Invalid value: " + QuotedName(mount_path) + ": must be unique",
          field + ".mountPath");
    }
    if (!StringField(m, "subPathExpr").empty()) {
      return Status::InvalidArgument(field + ".subPathExpr: subPathExpr is not supported",
                                     field + ".subPathExpr");
    }
    fs::path host = dir->second;
    if (const std::string sub = StringField(m, "subPath"); !sub.empty()) {
      SLUICE_ASSIGN_OR_RETURN(std::string rel, CheckRelativePath(sub, field + ".subPath"));
      host /= rel;
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(host, ec)) && fs::is_directory(dir->second, ec)) {
        fs::create_directories(host, ec);
        if (ec) return Internal("creating", host, ec);
      }
    }
    mounts.push_back(PathMapping{std::move(normal), std::move(host)});
  }
  std::sort(mounts.begin(), mounts.end(), [](const PathMapping& a, const PathMapping& b) {
    if (a.container_path.size() != b.container_path.size()) {
      return a.container_path.size() > b.container_path.size();
    }
    return a.container_path < b.container_path;
  });
  return mounts;
}

std::string RemapPath(std::string_view value, const std::vector<PathMapping>& mounts) {
  // A value that itself starts with a mounted path (or a list whose first element does) is taken
  // as a comma-separated list of paths; an '=' inside it is part of the path.
  const bool starts_with_mount = RemapOne(value.substr(0, value.find(',')), mounts).has_value();
  if (size_t eq = value.find('='); !starts_with_mount && eq != std::string_view::npos) {
    return std::string(value.substr(0, eq + 1)) + RemapList(value.substr(eq + 1), mounts);
  }
  return RemapList(value, mounts);
}

}  // namespace sluice::node
