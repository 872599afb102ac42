// Kubeconfig writer: the kubectl configuration file that `sluice up` hands out for the local API
// server (server URL, CA, access token), in the schema kubectl v1.32 reads and that
// kube/kubeconfig.h parses.
//
// The file holds a bearer token, so it is written with mode 0600, atomically (secret_file.h). It
// replaces the whole file: point it at a file of its own (e.g. <state>/kubeconfig), never at a
// user's ~/.kube/config, which holds other clusters.
//
// Thread safety: stateless functions.
#pragma once

#include <string>

#include "common/status.h"

namespace sluice::apiserver {

struct KubeconfigParams {
  std::string cluster_name = "sluice-local";
  std::string context_name = "sluice-local";  // Also current-context.
  std::string user_name = "sluice-local";
  std::string server;  // "https://127.0.0.1:6443", or "http://..." with `insecure`.
  // PEM CA bundle that signed the server's certificate, embedded base64-encoded as
  // certificate-authority-data. Empty: none (plain http, or the system's CAs).
  std::string ca_pem;
  // The server speaks plain HTTP (loopback only): `server` must be http:// and there is no CA.
  // Required for an http:// server, so that plain HTTP is never written by accident.
  bool insecure = false;
  // insecure-skip-tls-verify: an https server's certificate is not checked (tests). Not with
  // ca_pem, nor with `insecure`.
  bool insecure_skip_tls_verify = false;
  std::string token;       // Bearer token; empty: the user has no credentials.
  std::string namespace_;  // The context's default namespace; empty: omitted ("default").
};

// The kubeconfig YAML for `params`: one cluster, one user, one context, which is current.
std::string RenderKubeconfig(const KubeconfigParams& params);

// Checks `params` (names present; server https://, or http:// exactly when `insecure`; at most
// one of ca_pem, insecure and insecure_skip_tls_verify) and writes RenderKubeconfig(params) to
// `path` with mode 0600, atomically. InvalidArgument for bad params; Internal for I/O errors.
Status WriteKubeconfig(const std::string& path, const KubeconfigParams& params);

}  // namespace sluice::apiserver
