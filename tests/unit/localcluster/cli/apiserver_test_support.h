// What the CLI tests that start the real sluice-apiserver share: finding the built binaries and
// a free loopback port.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "localcluster/cli/install_paths.h"

namespace sluice::cli::testing_support {

// The directory holding sluice-apiserver: $SLUICE_BIN_DIR, <test exe>/../bin,
// $SLUICE_SOURCE_DIR/build/bin or ./build/bin; "" when none does (the test skips).
inline std::string FindBinDir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SLUICE_BIN_DIR")) candidates.push_back(env);
  if (Result<std::string> self = SelfExecutableDir(); self.ok()) {
    candidates.push_back(*self + "/../bin");
  }
  if (const char* src = std::getenv("SLUICE_SOURCE_DIR")) {
    candidates.push_back(std::string(src) + "/build/bin");
  }
  candidates.push_back(CurrentDirectory() + "/build/bin");
  for (const std::string& dir : candidates) {
    if (IsExecutableFile(dir + "/sluice-apiserver")) {
      return std::filesystem::weakly_canonical(dir).string();
    }
  }
  return "";
}

// A loopback port free now (bound to port 0, then released).
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace sluice::cli::testing_support
