// The documents of `sluice run`'s manifests and the pure decisions of applying them.
//
// A manifest file is a multi-document YAML stream (common/yaml/yaml_json.h); empty documents are
// skipped. Each document needs apiVersion, kind and metadata.name (generateName is not
// supported: an experiment refers to its objects by name); a List is not unpacked.
//
// Applying a document is create-or-merge-patch, a two-way apply without kubectl's
// last-applied annotation: the patch (ApplyPatch) holds metadata.labels, metadata.annotations and
// every other top-level field of the document (spec; data/stringData of a ConfigMap or Secret)
// except apiVersion, kind, metadata and status. So fields set by the server or by others stay,
// and a field removed from the manifest stays too (delete the object to drop it). Whether the
// patch would change the stored object is decided here (DecideApply), so an unchanged object
// gets no write and is reported "unchanged".
//
// Thread safety: pure functions and values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::cli {

struct ManifestDocument {
  std::string file;  // As given on the command line.
  size_t index = 0;  // 1-based position among the file's non-empty documents.
  nlohmann::json object;

  std::string kind() const;
  std::string name() const;
  // "FILE document N (Kind name)": how errors name the document.
  std::string Where() const;
};

// The documents of one file's text. InvalidArgument naming the file (and the line) when the
// YAML does not parse, or naming the document when it is not a mapping with string apiVersion,
// kind and metadata.name.
Result<std::vector<ManifestDocument>> ParseManifest(const std::string& file, std::string_view text);

struct GroupVersion {
  std::string group;  // "" for the core group.
  std::string version;
};

// "sluice.dev/v1alpha1" -> {sluice.dev, v1alpha1}; "v1" -> {"", v1}. InvalidArgument for ""
// and for more than one '/'.
Result<GroupVersion> SplitApiVersion(std::string_view api_version);

// How an applied object is named in the output, as kubectl does: "trainerjob.sluice.dev/tiny",
// "configmap/settings" (the lower-case kind, then the group unless core).
std::string DisplayName(const std::string& kind, const std::string& group, const std::string& name);

// The merge patch (RFC 7386) a document applies, as described above.
nlohmann::json ApplyPatch(const nlohmann::json& document);

enum class ApplyAction { kCreate, kConfigure, kUnchanged };

// "created", "configured", "unchanged".
const char* ApplyActionName(ApplyAction action);

// `existing` is the stored object (null when absent), `patch` ApplyPatch of the document:
// create when absent, unchanged when merging the patch leaves the object as it is, else
// configure.
ApplyAction DecideApply(const nlohmann::json* existing, const nlohmann::json& patch);

// Which experiment role a kind plays when `sluice run` follows it.
enum class ExperimentRole { kNone, kTrainerJob, kDataflow, kRolloutPool, kPolicy };
// By kind, for the sluice.dev group only.
ExperimentRole RoleOf(const std::string& group, const std::string& kind);

}  // namespace sluice::cli
