// Test helpers shared by the serving-certificate and kubeconfig tests: a private temporary
// directory, and a sluice::http::Server set up the way the local API server will be (TLS from
// EnsureServingCerts, bearer token from EnsureAccessToken) serving GET /version behind the token.
#pragma once

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/clock.h"
#include "common/http/json_body.h"
#include "common/http/server.h"
#include "common/logging/logger.h"
#include "localcluster/apiserver/access_token.h"
#include "localcluster/apiserver/serving_certs.h"

namespace sluice::apiserver::testutil {

// A directory under /tmp unique to this process, removed on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = "/tmp/sluice_apiserver_sec_" + std::to_string(getpid()) + "_XXXXXX";
    SLUICE_CHECK(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The kube-style version document the fake /version route answers with.
inline constexpr char kGitVersion[] = "v1.32.0-sluice-test";

// A TLS server on 127.0.0.1 with certificates and a token made in `dir`; GET /version needs the
// token (as kube-apiserver's does for an anonymous-auth-disabled cluster).
// With `tls` false it serves plain HTTP (the local server's --insecure-http mode).
class LocalTlsServer {
 public:
  explicit LocalTlsServer(const std::string& dir, bool tls = true) : dir_(dir), tls_(tls) {}
  ~LocalTlsServer() {
    if (server_) server_->Shutdown();
  }

  Status Start() {
    SLUICE_ASSIGN_OR_RETURN(certs_, EnsureServingCerts(dir_ + "/pki", {"sluice.test"},
                                                       std::chrono::system_clock::now()));
    SLUICE_ASSIGN_OR_RETURN(token_, EnsureAccessToken(dir_ + "/token"));
    http::ServerOptions options;
    options.name = "apiserver-test";
    options.access_log = false;
    options.auth = http::TokenSource::FromValue(token_);
    if (tls_) options.tls = http::ServerTlsOptions{certs_.cert_file, certs_.key_file, ""};
    server_ = std::make_unique<http::Server>(options, nullptr, logger_);
    server_->Get("/version", [this](const httplib::Request&, httplib::Response& res) {
      ++version_requests_;
      http::ReplyJson(res, {{"major", "1"}, {"minor", "32"}, {"gitVersion", kGitVersion}});
    });
    return server_->Start();
  }

  std::string url() const { return server_->BaseUrl(); }
  const ServingCerts& certs() const { return certs_; }
  const std::string& token() const { return token_; }
  int version_requests() const { return version_requests_.load(); }

 private:
  std::string dir_;
  bool tls_;
  log::Logger logger_{"test", SystemClock::Instance(), [](std::string_view) {}};
  ServingCerts certs_;
  std::string token_;
  std::unique_ptr<http::Server> server_;
  std::atomic<int> version_requests_{0};
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together.
};

// Runs a shell command line, capturing its output.
inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace sluice::apiserver::testutil
