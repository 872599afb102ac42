// ReloadingCertificate: a server's certificate chain and private key, read from PEM files and read
// again when either file changes, so a server keeps serving across certificate renewals.
//
// Kubelets update a mounted Secret in place (they swap a symlink to a new directory), and the
// operator reissues serving certificates before they expire (certificates.h); a server that read
// its certificate once would serve the old one until it expired. InstallOn() makes every new TLS
// handshake on an SSL_CTX serve the current pair: the callback compares both files' modification
// times, inodes and sizes (two stat calls, small beside a handshake) and reloads when either
// changed. Connections already open keep the certificate they were set up with.
//
// A reload that fails (a file briefly missing, the key not matching the chain: one file of the
// pair updated before the other) keeps serving the last good pair and is retried on the next
// handshake; Load() itself fails instead, since a server with no certificate cannot start.
//
// Ownership: InstallOn stores a raw pointer in the SSL_CTX; the ReloadingCertificate must outlive
// every handshake on it (the HTTP server owns both and stops serving before destroying them).
// Thread safety: Current() and the installed callback may run on any number of threads.
#pragma once

#include <openssl/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"

namespace sluice::tls {

class ReloadingCertificate {
 public:
  // A parsed chain (leaf first) and its key. Immutable once built; shared with handshakes.
  struct Pair;

  // Reads and checks both files now. InvalidArgument naming the file: unreadable, not PEM, no
  // certificate, or a key that does not match the first certificate.
  static Result<std::unique_ptr<ReloadingCertificate>> Load(std::filesystem::path cert_file,
                                                            std::filesystem::path key_file);
  ~ReloadingCertificate();
  ReloadingCertificate(const ReloadingCertificate&) = delete;
  ReloadingCertificate& operator=(const ReloadingCertificate&) = delete;

  // The current pair, reloaded first when either file changed.
  std::shared_ptr<const Pair> Current();

  // The current leaf certificate as PEM (for tests and logs).
  std::string CurrentLeafPem();

  // Sets `ctx`'s certificate callback so that each handshake serves Current().
  void InstallOn(SSL_CTX* ctx);

  // Successful reloads after Load (for tests and metrics).
  uint64_t reloads() const;

 private:
  ReloadingCertificate(std::filesystem::path cert_file, std::filesystem::path key_file);
  Status ReloadLocked();

  // What tells a changed file: modification time, inode and size (a rename onto the path, as
  // kubelets and atomic writers do, changes the inode even within one clock tick).
  struct Stamp {
    int64_t mtime_ns = -1;
    uint64_t inode = 0;
    int64_t size = -1;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp StampOf(const std::filesystem::path& path);

  const std::filesystem::path cert_file_;
  const std::filesystem::path key_file_;
  mutable std::mutex mu_;
  std::shared_ptr<const Pair> current_;
  Stamp cert_stamp_;
  Stamp key_stamp_;
  uint64_t reloads_ = 0;
};

}  // namespace sluice::tls
