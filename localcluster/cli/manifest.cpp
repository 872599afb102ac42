#include "localcluster/cli/manifest.h"

#include "common/json/fields.h"
#include "common/yaml/yaml_json.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

}  // namespace

std::string ManifestDocument::kind() const { return StringField(object, "kind"); }

std::string ManifestDocument::name() const {
  if (!object.is_object()) return "";
  auto metadata = object.find("metadata");
  return metadata == object.end() ? "" : StringField(*metadata, "name");
}

std::string ManifestDocument::Where() const {
  std::string out = file + " document " + std::to_string(index);
  const std::string k = kind();
  const std::string n = name();
  if (!k.empty() || !n.empty()) {
    out += " (" + (k.empty() ? std::string("?") : k) + " " + (n.empty() ? "?" : n) + ")";
  }
  return out;
}

Result<std::vector<ManifestDocument>> ParseManifest(const std::string& file,
                                                    std::string_view text) {
  Result<std::vector<json>> parsed = yaml::ParseDocuments(text);
  if (!parsed.ok()) return Status::InvalidArgument(file + ": " + parsed.status().message());
  std::vector<ManifestDocument> docs;
  for (json& object : *parsed) {
    ManifestDocument doc{file, docs.size() + 1, std::move(object)};
    if (!doc.object.is_object()) {
      return Status::InvalidArgument(doc.Where() + ": not a mapping");
    }
    std::vector<std::string> missing;
    if (StringField(doc.object, "apiVersion").empty()) missing.push_back("apiVersion");
    if (doc.kind().empty()) missing.push_back("kind");
    if (doc.name().empty()) missing.push_back("metadata.name");
    if (!missing.empty()) {
      std::string list;
      for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
      return Status::InvalidArgument(doc.Where() + ": missing " + list);
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

Result<GroupVersion> SplitApiVersion(std::string_view api_version) {
  const size_t slash = api_version.find('/');
  if (api_version.empty() || api_version.front() == '/' || api_version.back() == '/' ||
      (slash != std::string_view::npos &&
       api_version.find('/', slash + 1) != std::string_view::npos)) {
    return Status::InvalidArgument("apiVersion \"" + std::string(api_version) +
                                   "\" is not GROUP/VERSION or VERSION");
  }
  if (slash == std::string_view::npos) return GroupVersion{"", std::string(api_version)};
  return GroupVersion{std::string(api_version.substr(0, slash)),
                      std::string(api_version.substr(slash + 1))};
}

std::string DisplayName(const std::string& kind, const std::string& group,
                        const std::string& name) {
  std::string lower;
  for (char c : kind) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower + (group.empty() ? "" : "." + group) + "/" + name;
}

json ApplyPatch(const json& document) {
  json patch = json::object();
  for (auto it = document.begin(); it != document.end(); ++it) {
    const std::string& key = it.key();
    if (key == "apiVersion" || key == "kind" || key == "status") continue;
    if (key == "metadata") {
      if (!it->is_object()) continue;
      for (const char* field : {"labels", "annotations"}) {
        // An empty map would only add an empty one the server does not keep.
        if (auto f = it->find(field); f != it->end() && !f->is_null() && !f->empty()) {
          patch["metadata"][field] = *f;
        }
      }
      continue;
    }
    patch[key] = *it;
  }
  return patch;
}

const char* ApplyActionName(ApplyAction action) {
  switch (action) {
    case ApplyAction::kCreate:
      return "created";
    case ApplyAction::kConfigure:
      return "configured";
    case ApplyAction::kUnchanged:
      return "unchanged";
  }
  return "?";
}

ApplyAction DecideApply(const json* existing, const json& patch) {
  if (existing == nullptr) return ApplyAction::kCreate;
  json merged = *existing;
  merged.merge_patch(patch);
  return merged == *existing ? ApplyAction::kUnchanged : ApplyAction::kConfigure;
}

ExperimentRole RoleOf(const std::string& group, const std::string& kind) {
  if (group != "sluice.dev") return ExperimentRole::kNone;
  if (kind == "TrainerJob") return ExperimentRole::kTrainerJob;
  if (kind == "Dataflow") return ExperimentRole::kDataflow;
  if (kind == "RolloutPool") return ExperimentRole::kRolloutPool;
  if (kind == "Policy") return ExperimentRole::kPolicy;
  return ExperimentRole::kNone;
}

}  // namespace sluice::cli
