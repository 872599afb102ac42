#include "localcluster/node/image_map.h"

#include "common/file/read_file.h"
#include "common/yaml/yaml_json.h"

namespace sluice::node {

std::string ImageRepository(std::string_view image) {
  std::string_view s = image;
  if (size_t at = s.find('@'); at != std::string_view::npos) s = s.substr(0, at);
  // A ':' after the last '/' is a tag; one before it is a registry port.
  const size_t slash = s.rfind('/');
  const size_t colon = s.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    s = s.substr(0, colon);
  }
  return std::string(s);
}

Result<ImageMap> ImageMap::Parse(std::string_view yaml_text) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<nlohmann::json> docs, yaml::ParseDocuments(yaml_text));
  ImageMap map;
  if (docs.empty()) return map;
  if (docs.size() != 1 || !docs[0].is_object()) {
    return Status::InvalidArgument("the image map must be one YAML mapping with `images`");
  }
  const nlohmann::json& images = docs[0].value("images", nlohmann::json::array());
  if (!images.is_array()) return Status::InvalidArgument("must be a list", "images");
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string field = "images[" + std::to_string(i) + "]";
    const nlohmann::json& e = images[i];
    if (!e.is_object()) return Status::InvalidArgument("must be a mapping", field);
    const nlohmann::json image = e.value("image", nlohmann::json());
    const nlohmann::json exe = e.value("executable", nlohmann::json());
    if (!image.is_string() || image.get<std::string>().empty()) {
      return Status::InvalidArgument("must be a non-empty string", field + ".image");
    }
    if (!exe.is_string() || exe.get<std::string>().empty()) {
      return Status::InvalidArgument("must be a non-empty string", field + ".executable");
    }
    map.entries_.push_back({image.get<std::string>(), exe.get<std::string>()});
  }
  return map;
}

Result<ImageMap> ImageMap::Load(const std::filesystem::path& path) {
  Result<std::string> text = file::ReadWholeFile(path.string());
  if (!text.ok()) return Status::NotFound("cannot read image map " + path.string());
  Result<ImageMap> map = Parse(*text);
  if (!map.ok()) {
    return Status(map.status().code(), path.string() + ": " + map.status().ToString());
  }
  return map;
}

Result<std::filesystem::path> ImageMap::Resolve(const std::string& image,
                                                const std::filesystem::path& bin_dir) const {
  auto place = [&](const std::string& exe) {
    std::filesystem::path p(exe);
    return p.is_absolute() ? p : bin_dir / p;
  };
  for (const ImageMapEntry& e : entries_) {
    if (e.image == image) return place(e.executable);
  }
  const std::string repository = ImageRepository(image);
  for (const ImageMapEntry& e : entries_) {
    if (e.image == repository) return place(e.executable);
  }
  // Default rule: .../sluice/<name>.
  const size_t slash = repository.rfind('/');
  if (slash != std::string::npos) {
    const std::string name = repository.substr(slash + 1);
    const std::string owner = repository.substr(0, slash);
    const bool sluice_owner = owner == "sluice" || (owner.size() > 7 && owner.ends_with("/sluice"));
    if (sluice_owner && !name.empty()) return bin_dir / ("sluice-" + name);
  }
  return Status::NotFound("image \"" + image +
                          "\" is not in the image map (sluice-node --image-map; only "
                          "sluice/<name> images map to binaries by default)");
}

}  // namespace sluice::node
