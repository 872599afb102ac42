// libFuzzer target for the kubeconfig parser (kube/kubeconfig.h: ParseKubeconfig, then
// MergeKubeconfig and RestConfigFromKubeconfig on what it accepts).
//
// Each input is the text of one kubeconfig file, parsed as if it were /fuzz/kubeconfig. Invariants:
//  - errors are InvalidArgument; named entries have names; relative file references come back
//    resolved (absolute), and an exec command with a '/' too;
//  - an accepted config whose strings are printable ASCII, written back out as a kubeconfig (JSON
//    text, which is YAML; certificate data base64-encoded again), parses to the same config;
//  - merging is first-wins: a config merged into an empty one, or into itself, is unchanged;
//  - the RestConfig of any of its contexts, when there is one, has an http(s) host and a
//    namespace, never pairs a CA with insecure-skip-tls-verify, a client certificate without its
//    key, or a bearer token with basic auth.
//
// Fuzz it with `scripts/fuzz.sh kubeconfig [seconds]` (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/base64.h"
#include "common/clock.h"
#include "common/status.h"
#include "kube/exec_credential.h"
#include "kube/kubeconfig.h"
#include "kube/rest_config.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using nlohmann::json;
using sluice::Result;
using sluice::StatusCode;
using sluice::kube::ExecConfig;
using sluice::kube::KubeCluster;
using sluice::kube::Kubeconfig;
using sluice::kube::KubeContext;
using sluice::kube::KubeUser;
using sluice::kube::RestConfig;

constexpr size_t kMaxInputBytes = 64 * 1024;
constexpr char kSource[] = "/fuzz/kubeconfig";
// RestConfigs are built for at most this many contexts per input.
constexpr size_t kMaxContextsTried = 8;

using sluice::fuzz::Require;

bool ResolvedPath(const std::string& path) {
  return path.empty() || std::filesystem::path(path).is_absolute();
}

bool SameExec(const ExecConfig& a, const ExecConfig& b) {
  return a.api_version == b.api_version && a.command == b.command && a.args == b.args &&
         a.env == b.env && a.install_hint == b.install_hint &&
         a.interactive_mode == b.interactive_mode;
}

bool SameCluster(const KubeCluster& a, const KubeCluster& b) {
  return a.server == b.server && a.certificate_authority == b.certificate_authority &&
         a.certificate_authority_data == b.certificate_authority_data &&
         a.insecure_skip_tls_verify == b.insecure_skip_tls_verify &&
         a.tls_server_name == b.tls_server_name && a.proxy_url == b.proxy_url &&
         a.source == b.source;
}

bool SameUser(const KubeUser& a, const KubeUser& b) {
  return a.token == b.token && a.token_file == b.token_file &&
         a.client_certificate == b.client_certificate &&
         a.client_certificate_data == b.client_certificate_data && a.client_key == b.client_key &&
         a.client_key_data == b.client_key_data && a.username == b.username &&
         a.password == b.password && a.exec.has_value() == b.exec.has_value() &&
         (!a.exec || SameExec(*a.exec, *b.exec)) && a.has_auth_provider == b.has_auth_provider &&
         a.source == b.source;
}

bool SameContext(const KubeContext& a, const KubeContext& b) {
  return a.cluster == b.cluster && a.user == b.user && a.namespace_ == b.namespace_;
}

template <typename T, typename Eq>
bool SameMap(const std::map<std::string, T>& a, const std::map<std::string, T>& b, Eq eq) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
    if (i->first != j->first || !eq(i->second, j->second)) return false;
  }
  return true;
}

bool SameConfig(const Kubeconfig& a, const Kubeconfig& b) {
  return a.current_context == b.current_context && SameMap(a.clusters, b.clusters, SameCluster) &&
         SameMap(a.users, b.users, SameUser) && SameMap(a.contexts, b.contexts, SameContext);
}

bool PrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Every string the writer below puts in the file as text (certificate data goes as base64).
bool AllTextPrintable(const Kubeconfig& cfg) {
  std::vector<std::string_view> texts = {cfg.current_context};
  for (const auto& [name, c] : cfg.clusters) {
    texts.insert(texts.end(),
                 {name, c.server, c.certificate_authority, c.tls_server_name, c.proxy_url});
  }
  for (const auto& [name, u] : cfg.users) {
    texts.insert(texts.end(), {name, u.token, u.token_file, u.client_certificate, u.client_key,
                               u.username, u.password});
    if (u.exec) {
      const ExecConfig& e = *u.exec;
      texts.insert(texts.end(), {e.api_version, e.command, e.install_hint, e.interactive_mode});
      texts.insert(texts.end(), e.args.begin(), e.args.end());
      for (const auto& [k, v] : e.env) texts.insert(texts.end(), {k, v});
    }
  }
  for (const auto& [name, c] : cfg.contexts) {
    texts.insert(texts.end(), {name, c.cluster, c.user, c.namespace_});
  }
  for (std::string_view t : texts) {
    if (!PrintableAscii(t)) return false;
  }
  return true;
}

void PutData(json& out, const char* key, const std::string& data) {
  if (!data.empty()) out[key] = sluice::Base64Encode(data);
}

// The config as a kubeconfig file, in JSON syntax (strings double-quoted).
std::string Write(const Kubeconfig& cfg) {
  json out = {{"apiVersion", "v1"}, {"kind", "Config"}, {"current-context", cfg.current_context}};
  json clusters = json::array();
  for (const auto& [name, c] : cfg.clusters) {
    json body = {{"server", c.server},
                 {"certificate-authority", c.certificate_authority},
                 {"insecure-skip-tls-verify", c.insecure_skip_tls_verify},
                 {"tls-server-name", c.tls_server_name},
                 {"proxy-url", c.proxy_url}};
    PutData(body, "certificate-authority-data", c.certificate_authority_data);
    clusters.push_back({{"name", name}, {"cluster", body}});
  }
  json users = json::array();
  for (const auto& [name, u] : cfg.users) {
    json body = {{"token", u.token},
                 {"tokenFile", u.token_file},
                 {"client-certificate", u.client_certificate},
                 {"client-key", u.client_key},
                 {"username", u.username},
                 {"password", u.password}};
    PutData(body, "client-certificate-data", u.client_certificate_data);
    PutData(body, "client-key-data", u.client_key_data);
    if (u.has_auth_provider) body["auth-provider"] = {{"name", "gcp"}};
    if (u.exec) {
      json env = json::array();
      for (const auto& [k, v] : u.exec->env) env.push_back({{"name", k}, {"value", v}});
      body["exec"] = {{"apiVersion", u.exec->api_version},
                      {"command", u.exec->command},
                      {"args", u.exec->args},
                      {"env", env},
                      {"installHint", u.exec->install_hint},
                      {"interactiveMode", u.exec->interactive_mode}};
    }
    users.push_back({{"name", name}, {"user", body}});
  }
  json contexts = json::array();
  for (const auto& [name, c] : cfg.contexts) {
    contexts.push_back(
        {{"name", name},
         {"context", {{"cluster", c.cluster}, {"user", c.user}, {"namespace", c.namespace_}}}});
  }
  out["clusters"] = clusters;
  out["users"] = users;
  out["contexts"] = contexts;
  // One line: YAML reads JSON's flow syntax; quoted keys let ':' follow them directly.
  return out.dump();
}

void CheckRestConfig(const Kubeconfig& cfg, const sluice::kube::KubeconfigOverrides& overrides) {
  static const sluice::FakeClock clock;
  Result<RestConfig> rc = sluice::kube::RestConfigFromKubeconfig(cfg, overrides, clock);
  if (!rc.ok()) {
    const StatusCode code = rc.status().code();
    Require(code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound,
            "RestConfig errors");
    return;
  }
  Require(rc->host.rfind("http://", 0) == 0 || rc->host.rfind("https://", 0) == 0,
          "the host is an http(s) URL");
  Require(!rc->default_namespace.empty(), "there is a namespace");
  if (!overrides.namespace_.empty()) {
    Require(rc->default_namespace == overrides.namespace_, "--namespace wins");
  }
  Require(!rc->tls.insecure_skip_verify || (rc->tls.ca_file.empty() && rc->tls.ca_pem.empty()),
          "insecure-skip-tls-verify is never paired with a CA");
  const bool has_cert = !rc->tls.client_cert_file.empty() || !rc->tls.client_cert_pem.empty();
  const bool has_key = !rc->tls.client_key_file.empty() || !rc->tls.client_key_pem.empty();
  Require(has_cert == has_key, "client certificate and key come together");
  const bool bearer = !rc->bearer_token.empty() || !rc->token_file.empty() || rc->exec != nullptr;
  Require(!bearer || (rc->username.empty() && rc->password.empty()),
          "a bearer token and basic auth never come together");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(bytes), size);
  Result<Kubeconfig> cfg = sluice::kube::ParseKubeconfig(text, kSource);
  if (!cfg.ok()) {
    Require(cfg.status().code() == StatusCode::kInvalidArgument,
            "parse errors are InvalidArgument");
    return 0;
  }
  for (const auto& [name, c] : cfg->clusters) {
    Require(!name.empty() && c.source == kSource, "clusters are named and sourced");
    Require(ResolvedPath(c.certificate_authority), "the CA path is resolved");
  }
  for (const auto& [name, u] : cfg->users) {
    Require(!name.empty() && u.source == kSource, "users are named and sourced");
    Require(ResolvedPath(u.token_file) && ResolvedPath(u.client_certificate) &&
                ResolvedPath(u.client_key),
            "user file paths are resolved");
    if (u.exec && u.exec->command.find('/') != std::string::npos) {
      Require(ResolvedPath(u.exec->command), "an exec command path is resolved");
    }
  }
  for (const auto& [name, c] : cfg->contexts) Require(!name.empty(), "contexts are named");

  if (AllTextPrintable(*cfg)) {
    Result<Kubeconfig> again = sluice::kube::ParseKubeconfig(Write(*cfg), kSource);
    Require(again.ok(), "a written kubeconfig parses");
    Require(SameConfig(*cfg, *again), "kubeconfig round trip");
  }

  Kubeconfig merged;
  sluice::kube::MergeKubeconfig(merged, *cfg);
  Require(SameConfig(merged, *cfg), "merging into an empty config copies it");
  sluice::kube::MergeKubeconfig(merged, *cfg);
  Require(SameConfig(merged, *cfg), "merging a config into itself changes nothing");

  CheckRestConfig(*cfg, {});
  size_t tried = 0;
  for (const auto& [name, c] : cfg->contexts) {
    if (++tried > kMaxContextsTried) break;
    CheckRestConfig(*cfg, {name, ""});
    CheckRestConfig(*cfg, {name, "fuzz-ns"});
  }
  return 0;
}
