#include "kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/base64.h"
#include "common/file/read_file.h"

namespace sluice::kube {
namespace {

namespace fs = std::filesystem;

std::string Resolve(const std::string& path, const fs::path& source) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (source.parent_path() / path).lexically_normal().string();
}

std::string Str(const YAML::Node& node, const char* key) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return "";
  return v.as<std::string>();
}

Result<std::string> Data(const YAML::Node& node, const char* key, const std::string& where) {
  const std::string raw = Str(node, key);
  if (raw.empty()) return std::string();
  Result<std::string> decoded = DecodeBase64(raw);
  if (!decoded.ok()) return decoded.status().WithContext(where + ": " + key);
  return decoded;
}

// Iterates a list of {name: ..., <field>: {...}} entries.
template <typename Fn>
Status ForEachNamed(const YAML::Node& root, const char* list, const char* field,
                    const fs::path& source, Fn&& fn) {
  const YAML::Node items = root[list];
  if (!items || items.IsNull()) return Status::Ok();
  if (!items.IsSequence()) {
    return Status::InvalidArgument(source.string() + ": " + list + " must be a list");
  }
  for (const YAML::Node& item : items) {
    const std::string name = Str(item, "name");
    if (name.empty()) {
      return Status::InvalidArgument(source.string() + ": an entry of " + list + " has no name");
    }
    YAML::Node body = item[field];
    if (!body || body.IsNull()) body = YAML::Node(YAML::NodeType::Map);
    if (!body.IsMap()) {
      return Status::InvalidArgument(source.string() + ": " + list + " \"" + name + "\": " + field +
                                     " must be a mapping");
    }
    SLUICE_RETURN_IF_ERROR(fn(name, body));
  }
  return Status::Ok();
}

Result<Kubeconfig> ParseNode(const YAML::Node& root, const fs::path& source) {
  Kubeconfig cfg;
  if (!root || root.IsNull()) return cfg;  // An empty file is an empty config, as in kubectl.
  if (!root.IsMap()) return Status::InvalidArgument(source.string() + ": not a YAML mapping");
  cfg.current_context = Str(root, "current-context");
  SLUICE_RETURN_IF_ERROR(ForEachNamed(
      root, "clusters", "cluster", source, [&](const std::string& name, const YAML::Node& c) {
        KubeCluster cl;
        const std::string where = source.string() + ": cluster \"" + name + "\"";
        cl.server = Str(c, "server");
        cl.certificate_authority = Resolve(Str(c, "certificate-authority"), source);
        SLUICE_ASSIGN_OR_RETURN(cl.certificate_authority_data,
                                Data(c, "certificate-authority-data", where));
        cl.insecure_skip_tls_verify =
            c["insecure-skip-tls-verify"] && c["insecure-skip-tls-verify"].as<bool>();
        cl.tls_server_name = Str(c, "tls-server-name");
        cl.proxy_url = Str(c, "proxy-url");
        cl.source = source.string();
        cfg.clusters.emplace(name, std::move(cl));
        return Status::Ok();
      }));
  SLUICE_RETURN_IF_ERROR(ForEachNamed(
      root, "users", "user", source, [&](const std::string& name, const YAML::Node& u) {
        KubeUser user;
        const std::string where = source.string() + ": user \"" + name + "\"";
        user.token = Str(u, "token");
        user.token_file = Resolve(Str(u, "tokenFile"), source);
        user.client_certificate = Resolve(Str(u, "client-certificate"), source);
        SLUICE_ASSIGN_OR_RETURN(user.client_certificate_data,
                                Data(u, "client-certificate-data", where));
        user.client_key = Resolve(Str(u, "client-key"), source);
        SLUICE_ASSIGN_OR_RETURN(user.client_key_data, Data(u, "client-key-data", where));
        user.username = Str(u, "username");
        user.password = Str(u, "password");
        user.has_auth_provider = u["auth-provider"] && !u["auth-provider"].IsNull();
        if (const YAML::Node e = u["exec"]; e && !e.IsNull()) {
          if (!e.IsMap()) return Status::InvalidArgument(where + ": exec must be a mapping");
          ExecConfig exec;
          exec.api_version = Str(e, "apiVersion");
          exec.command = Str(e, "command");
          if (exec.command.find('/') != std::string::npos) {
            exec.command = Resolve(exec.command, source);
          }
          if (const YAML::Node args = e["args"]; args && args.IsSequence()) {
            for (const YAML::Node& a : args) exec.args.push_back(a.as<std::string>());
          }
          if (const YAML::Node env = e["env"]; env && env.IsSequence()) {
            for (const YAML::Node& kv : env)
              exec.env.emplace_back(Str(kv, "name"), Str(kv, "value"));
          }
          exec.install_hint = Str(e, "installHint");
          exec.interactive_mode = Str(e, "interactiveMode");
          user.exec = std::move(exec);
        }
        user.source = source.string();
        cfg.users.emplace(name, std::move(user));
        return Status::Ok();
      }));
  SLUICE_RETURN_IF_ERROR(ForEachNamed(
      root, "contexts", "context", source, [&](const std::string& name, const YAML::Node& c) {
        cfg.contexts.emplace(name,
                             KubeContext{Str(c, "cluster"), Str(c, "user"), Str(c, "namespace")});
        return Status::Ok();
      }));
  return cfg;
}

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) { return Base64Decode(text); }

std::vector<fs::path> KubeconfigPaths(const std::optional<std::string>& kubeconfig_env,
                                      const fs::path& home) {
  std::vector<fs::path> out;
  if (kubeconfig_env && !kubeconfig_env->empty()) {
    std::set<std::string> seen;
    std::stringstream ss(*kubeconfig_env);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (item.empty() || !seen.insert(item).second) continue;
      out.emplace_back(item);
    }
    if (!out.empty()) return out;
  }
  out.push_back(home / ".kube" / "config");
  return out;
}

Result<Kubeconfig> ParseKubeconfig(const std::string& text, const fs::path& source) {
  try {
    return ParseNode(YAML::Load(text), source);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(source.string() + ": not valid kubeconfig YAML: " + e.what());
  }
}

void MergeKubeconfig(Kubeconfig& into, const Kubeconfig& later) {
  for (const auto& [k, v] : later.clusters) into.clusters.emplace(k, v);
  for (const auto& [k, v] : later.users) into.users.emplace(k, v);
  for (const auto& [k, v] : later.contexts) into.contexts.emplace(k, v);
  if (into.current_context.empty()) into.current_context = later.current_context;
}

Result<Kubeconfig> LoadKubeconfig(const std::vector<fs::path>& paths) {
  Kubeconfig merged;
  int loaded = 0;
  std::string tried;
  for (const fs::path& path : paths) {
    tried += (tried.empty() ? "" : ", ") + path.string();
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    Result<std::string> text = file::ReadWholeFile(path.string());
    if (!text.ok()) return Status::PermissionDenied("cannot read kubeconfig " + path.string());
    SLUICE_ASSIGN_OR_RETURN(Kubeconfig one, ParseKubeconfig(*text, path));
    MergeKubeconfig(merged, one);
    ++loaded;
  }
  if (loaded == 0) return Status::NotFound("no kubeconfig file found (looked for " + tried + ")");
  return merged;
}

Result<RestConfig> RestConfigFromKubeconfig(const Kubeconfig& config,
                                            const KubeconfigOverrides& overrides,
                                            const Clock& clock) {
  const std::string context_name =
      overrides.context.empty() ? config.current_context : overrides.context;
  if (context_name.empty()) {
    return Status::InvalidArgument("kubeconfig has no current-context and no --context was given");
  }
  const auto ctx = config.contexts.find(context_name);
  if (ctx == config.contexts.end()) {
    return Status::NotFound("context \"" + context_name + "\" is not in the kubeconfig");
  }
  const auto cl = config.clusters.find(ctx->second.cluster);
  if (cl == config.clusters.end()) {
    return Status::NotFound("context \"" + context_name + "\" names cluster \"" +
                            ctx->second.cluster + "\", which is not in the kubeconfig");
  }
  const KubeCluster& cluster = cl->second;
  const std::string cwhere = cluster.source + ": cluster \"" + ctx->second.cluster + "\"";
  if (cluster.server.empty()) return Status::InvalidArgument(cwhere + " has no server");
  if (!cluster.proxy_url.empty()) {
    return Status::InvalidArgument(cwhere + " sets proxy-url (" + cluster.proxy_url +
                                   "), which sluice-operator does not support; reach the API "
                                   "server directly or run the operator in the cluster");
  }
  RestConfig rc;
  rc.host = cluster.server;
  if (rc.host.rfind("http://", 0) != 0 && rc.host.rfind("https://", 0) != 0) {
    rc.host = "https://" + rc.host;
  }
  rc.tls.ca_file = cluster.certificate_authority;
  rc.tls.ca_pem = cluster.certificate_authority_data;
  rc.tls.insecure_skip_verify = cluster.insecure_skip_tls_verify;
  rc.tls.server_name = cluster.tls_server_name;
  if (rc.tls.insecure_skip_verify && (!rc.tls.ca_file.empty() || !rc.tls.ca_pem.empty())) {
    return Status::InvalidArgument(
        cwhere + " sets both insecure-skip-tls-verify and a certificate authority");
  }
  if (!ctx->second.user.empty()) {
    const auto us = config.users.find(ctx->second.user);
    if (us == config.users.end()) {
      return Status::NotFound("context \"" + context_name + "\" names user \"" + ctx->second.user +
                              "\", which is not in the kubeconfig");
    }
    const KubeUser& user = us->second;
    const std::string uwhere = user.source + ": user \"" + ctx->second.user + "\"";
    if (user.has_auth_provider) {
      return Status::InvalidArgument(uwhere +
                                     " uses auth-provider, which is not supported (kubectl "
                                     "removed it too); use an exec credential plugin");
    }
    const bool has_bearer = !user.token.empty() || !user.token_file.empty() || user.exec;
    if (has_bearer && (!user.username.empty() || !user.password.empty())) {
      return Status::InvalidArgument(
          uwhere + ": username/password or a bearer token may be set, but not both");
    }
    rc.bearer_token = user.token;
    rc.token_file = user.token_file;
    rc.username = user.username;
    rc.password = user.password;
    rc.tls.client_cert_file = user.client_certificate;
    rc.tls.client_cert_pem = user.client_certificate_data;
    rc.tls.client_key_file = user.client_key;
    rc.tls.client_key_pem = user.client_key_data;
    const bool has_cert = !rc.tls.client_cert_file.empty() || !rc.tls.client_cert_pem.empty();
    const bool has_key = !rc.tls.client_key_file.empty() || !rc.tls.client_key_pem.empty();
    if (has_cert != has_key) {
      return Status::InvalidArgument(uwhere +
                                     ": a client certificate needs a client key and vice versa");
    }
    if (user.exec) {
      Status valid = ExecCredentialProvider::Validate(*user.exec);
      if (!valid.ok()) return valid.WithContext(uwhere);
      rc.exec = std::make_shared<ExecCredentialProvider>(*user.exec, clock);
    }
  }
  rc.default_namespace = !overrides.namespace_.empty()     ? overrides.namespace_
                         : !ctx->second.namespace_.empty() ? ctx->second.namespace_
                                                           : "default";
  return rc;
}

}  // namespace sluice::kube
