#include "api/crds/crds.h"

#include <cstdio>
#include <cstdlib>

#include "api/meta.h"
#include "common/yaml/yaml_json.h"

namespace sluice::api {

Result<ResourceKind> ParseCrd(const nlohmann::json& crd, std::string file) {
  ResourceKind k;
  k.file = std::move(file);
  const std::string where = "CRD " + k.file;
  if (!crd.is_object() || crd.value("kind", "") != "CustomResourceDefinition") {
    return Status::InvalidArgument(where + " is not a CustomResourceDefinition");
  }
  try {
    const nlohmann::json& spec = crd.at("spec");
    if (spec.at("group") != kGroup) {
      return Status::InvalidArgument(where + ": group is not " + std::string(kGroup));
    }
    const nlohmann::json& names = spec.at("names");
    k.kind = names.at("kind").get<std::string>();
    k.list_kind = names.value("listKind", k.kind + "List");
    k.plural = names.at("plural").get<std::string>();
    k.singular = names.value("singular", "");
    k.short_names = names.value("shortNames", std::vector<std::string>{});
    for (const nlohmann::json& version : spec.at("versions")) {
      if (version.at("name") == kVersion) {
        k.schema = version.at("schema").at("openAPIV3Schema");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(where + ": " + e.what());
  }
  if (k.schema.is_null()) {
    return Status::InvalidArgument(where + " has no " + std::string(kVersion) + " schema");
  }
  k.crd = crd;
  return k;
}

const std::vector<ResourceKind>& Kinds() {
  static const std::vector<ResourceKind> kinds = [] {
    std::vector<ResourceKind> out;
    for (const EmbeddedFile& f : EmbeddedCrdFiles()) {
      Result<std::vector<nlohmann::json>> docs = yaml::ParseDocuments(f.text);
      if (!docs.ok()) {
        std::fprintf(stderr, "embedded %s: %s\n", std::string(f.name).c_str(),
                     docs.status().ToString().c_str());
        std::abort();
      }
      for (const nlohmann::json& doc : *docs) {
        Result<ResourceKind> k = ParseCrd(doc, std::string(f.name));
        if (!k.ok()) {
          std::fprintf(stderr, "%s\n", k.status().ToString().c_str());
          std::abort();
        }
        out.push_back(std::move(k).value());
      }
    }
    return out;
  }();
  return kinds;
}

const ResourceKind* FindKind(std::string_view kind) {
  for (const ResourceKind& k : Kinds()) {
    if (k.kind == kind) return &k;
  }
  return nullptr;
}

}  // namespace sluice::api
