#include "localcluster/apiserver/kubeconfig_writer.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <vector>

#include "common/file/atomic_file.h"
#include "localcluster/apiserver/secret_file.h"

namespace sluice::apiserver {
namespace {

std::string Base64(const std::string& data) {
  if (data.empty()) return {};
  // EVP_EncodeBlock writes 4 bytes per 3 (rounded up) and a NUL, without line breaks.
  std::vector<unsigned char> out(4 * ((data.size() + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  return std::string(reinterpret_cast<const char*>(out.data()), static_cast<size_t>(n));
}

}  // namespace

std::string RenderKubeconfig(const KubeconfigParams& p) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "Config";

  out << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.cluster_name;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "server" << YAML::Value << p.server;
  if (!p.ca_pem.empty()) {
    out << YAML::Key << "certificate-authority-data" << YAML::Value << Base64(p.ca_pem);
  }
  if (p.insecure_skip_tls_verify) {
    out << YAML::Key << "insecure-skip-tls-verify" << YAML::Value << true;
  }
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;

  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.context_name;
  out << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cluster" << YAML::Value << p.cluster_name;
  out << YAML::Key << "user" << YAML::Value << p.user_name;
  if (!p.namespace_.empty()) out << YAML::Key << "namespace" << YAML::Value << p.namespace_;
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;

  out << YAML::Key << "current-context" << YAML::Value << p.context_name;
  out << YAML::Key << "preferences" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::EndMap;

  out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.user_name;
  out << YAML::Key << "user" << YAML::Value;
  if (p.token.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  } else {
    out << YAML::BeginMap << YAML::Key << "token" << YAML::Value << p.token << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndSeq;

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Status WriteKubeconfig(const std::string& path, const KubeconfigParams& params) {
  if (params.cluster_name.empty() || params.context_name.empty() || params.user_name.empty()) {
    return Status::InvalidArgument("kubeconfig cluster, context and user names must be set");
  }
  const bool http = params.server.rfind("http://", 0) == 0;
  if (!http && params.server.rfind("https://", 0) != 0) {
    return Status::InvalidArgument(
        "kubeconfig server must be an http:// or https:// URL, got \"" + params.server + "\"",
        "server");
  }
  if (http != params.insecure) {
    return Status::InvalidArgument(
        params.insecure ? "kubeconfig: insecure (plain HTTP) needs an http:// server, got \"" +
                              params.server + "\""
                        : "kubeconfig server \"" + params.server +
                              "\" is plain HTTP; set insecure to write it deliberately",
        "server");
  }
  if (params.insecure && (!params.ca_pem.empty() || params.insecure_skip_tls_verify)) {
    return Status::InvalidArgument(
        "kubeconfig: a plain HTTP server takes no certificate authority and no "
        "insecure-skip-tls-verify");
  }
  if (params.insecure_skip_tls_verify && !params.ca_pem.empty()) {
    // kubectl refuses this combination ("specifying a root certificates file with the insecure
    // flag is not allowed"), as does kube/kubeconfig.h.
    return Status::InvalidArgument(
        "kubeconfig cannot set both a certificate authority and insecure-skip-tls-verify");
  }
  Status s = file::WriteFileAtomic(path, RenderKubeconfig(params), 0600);
  return s.ok() ? s : s.WithContext("writing kubeconfig");
}

}  // namespace sluice::apiserver
