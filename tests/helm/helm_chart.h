// Test helper: the real helm (pinned by scripts/install-deps.sh into .tools/bin, compiled in as
// SLUICE_HELM) run on the chart helm/sluice, and its output parsed into Kubernetes objects. Used
// by the chart's tests (tests/helm/) and by its end-to-end test against the local cluster.
//
// Every helm run gets its own cache, config and data directories under a temporary directory,
// so tests never read or write the user's ~/.config/helm and run side by side.
// Thread safety: none needed (one test per process at a time).
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/yaml/yaml_json.h"
#include "tests/support/read_file.h"
#include "tests/support/shell.h"

namespace sluice::helm_test {

// What a test that needs helm prints when it is missing: it fails, never skips.
inline constexpr char kHelmMissing[] =
    "helm is missing: run scripts/install-deps.sh (it installs the pinned helm and kubectl into "
    ".tools/bin; `make test` runs it)";

inline std::string HelmBinary() { return SLUICE_HELM; }

inline bool HaveHelm() { return ::access(HelmBinary().c_str(), X_OK) == 0; }

inline std::filesystem::path RepoDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return dir != nullptr ? std::filesystem::path(dir) : std::filesystem::current_path();
}

inline std::filesystem::path ChartDir() { return RepoDir() / "helm" / "sluice"; }

using test_support::ShellQuote;

inline std::string ReadText(const std::filesystem::path& path) {
  return test_support::ReadFileOrEmpty(path);
}

struct HelmResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// A temporary directory for one helm invocation (values file, helm's homes), removed with it.
class HelmScratch {
 public:
  // Without a directory (mkdtemp failed) every Run fails, saying why, rather than running helm
  // with its homes somewhere shared.
  HelmScratch() {
    char tmpl[] = "/tmp/sluice-helm-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    if (made != nullptr) {
      dir_ = made;
    } else {
      error_ = std::string("cannot create a scratch directory for helm: ") + std::strerror(errno);
    }
  }
  ~HelmScratch() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  HelmScratch(const HelmScratch&) = delete;
  HelmScratch& operator=(const HelmScratch&) = delete;

  const std::string& dir() const { return dir_; }

  // Writes `text` to a file in the directory; its path ("" and nothing written without one).
  std::string Write(const std::string& name, const std::string& text) const {
    if (dir_.empty()) return "";
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Runs helm with `args` (already shell-quoted where needed).
  HelmResult Run(const std::string& args) const {
    if (dir_.empty()) return HelmResult{-1, "", error_};
    const std::string err_file = dir_ + "/stderr";
    const std::string command = "HELM_CACHE_HOME=" + ShellQuote(dir_ + "/cache") +
                                " HELM_CONFIG_HOME=" + ShellQuote(dir_ + "/config") +
                                " HELM_DATA_HOME=" + ShellQuote(dir_ + "/data") + " " +
                                ShellQuote(HelmBinary()) + " " + args + " 2>" +
                                ShellQuote(err_file);
    const test_support::ShellResult run = test_support::RunShell(command, /*merge_stderr=*/false);
    HelmResult result;
    result.exit_code = run.exit_code;
    result.out = run.output;
    result.err = ReadText(err_file);
    return result;
  }

 private:
  std::string dir_;    // Empty when mkdtemp failed.
  std::string error_;  // Why, then.
};

// `helm template RELEASE helm/sluice --namespace NAMESPACE -f VALUES` (CRDs not included: the
// chart's crds/ are checked against crds/ byte for byte instead).
inline HelmResult RenderChart(const std::string& values_yaml, const std::string& release = "sluice",
                              const std::string& namespace_ = "sluice-system") {
  HelmScratch scratch;
  const std::string values = scratch.Write("values.yaml", values_yaml);
  return scratch.Run("template " + ShellQuote(release) + " " + ShellQuote(ChartDir().string()) +
                     " --namespace " + ShellQuote(namespace_) + " -f " + ShellQuote(values));
}

// The objects of a multi-document YAML stream (empty documents dropped); an empty vector and
// `error` set when it does not parse.
inline std::vector<nlohmann::json> ParseObjects(const std::string& yaml_text,
                                                std::string* error = nullptr) {
  Result<std::vector<nlohmann::json>> docs = yaml::ParseDocuments(yaml_text);
  if (!docs.ok()) {
    if (error != nullptr) *error = docs.status().ToString();
    return {};
  }
  std::vector<nlohmann::json> objects;
  for (nlohmann::json& doc : *docs) {
    if (doc.is_object()) objects.push_back(std::move(doc));
  }
  return objects;
}

// The first object of `kind` (and `name`, when given); null when there is none.
inline nlohmann::json FindObject(const std::vector<nlohmann::json>& objects,
                                 const std::string& kind, const std::string& name = "") {
  for (const nlohmann::json& o : objects) {
    if (o.value("kind", "") != kind) continue;
    if (!name.empty() && o.value("/metadata/name"_json_pointer, "") != name) continue;
    return o;
  }
  return nullptr;
}

// Every object of `kind`.
inline std::vector<nlohmann::json> FindObjects(const std::vector<nlohmann::json>& objects,
                                               const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& o : objects) {
    if (o.value("kind", "") == kind) out.push_back(o);
  }
  return out;
}

}  // namespace sluice::helm_test
