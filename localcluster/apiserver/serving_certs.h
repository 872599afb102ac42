// Serving certificates for the local API server: a private CA and the server certificate it
// signs (common/tls/certificates.h), kept in the state directory.
//
// First start: generates an ECDSA P-256 CA (CN "sluice-local-ca", CA:TRUE, keyCertSign, valid 10
// years) and a server certificate (CN "sluice-apiserver", serverAuth, valid 1 year) whose
// subjectAltNames cover every requested host, localhost and 127.0.0.1. Files in `dir`: ca.crt,
// ca.key, apiserver.crt, apiserver.key; keys mode 0600, certificates 0644, each written
// atomically (secret_file.h). Later starts reuse the server certificate while it still chains to
// the CA, matches its key, covers every requested host and has more than 30 days left; otherwise
// a new server key and certificate are issued from the existing CA, so the CA in kubeconfigs
// already handed out stays valid. The CA itself is replaced only when ca.crt is missing, or is
// not valid at `now` or has 30 days or less left (ca_generated tells the caller to rewrite
// kubeconfigs). A ca.crt that exists but cannot be used (unparsable, not a CA, ca.key missing or
// not matching) is an error, never silently replaced: delete both files to start over. Keys are
// written before their certificates, so a crash between the two is repaired on the next start.
//
// Validity periods start 5 minutes before `now` to tolerate clock skew between processes.
//
// Thread safety: stateless, but calls on one directory must not overlap (two concurrent first
// starts could each write a CA). The API server should call it after opening its exclusively
// locked storage, which keeps a second server on the same state directory out.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace sluice::apiserver {

struct ServingCerts {
  std::string ca_cert_file;         // <dir>/ca.crt: what clients trust.
  std::string cert_file;            // <dir>/apiserver.crt: for ServerTlsOptions::cert_file.
  std::string key_file;             // <dir>/apiserver.key: for ServerTlsOptions::key_file.
  std::string ca_pem;               // ca.crt's content, for kubeconfig certificate-authority-data.
  bool ca_generated = false;        // A new CA was made on this call (first start or expiry).
  bool server_cert_issued = false;  // A new server certificate was issued on this call.
  // Why new material was made, for the startup log ("apiserver.crt does not cover host
  // \"10.0.0.5\""); empty when everything was reused.
  std::string reason;
};

// Ensures `dir` (created with mode 0700 if missing) holds a CA and a server certificate valid at
// `now` for `hosts` (DNS names, or IPv4/IPv6 addresses, optionally in brackets; entries are
// case-insensitive, duplicates and empty entries ignored). Errors name the file and carry
// OpenSSL's reason; a host that is neither an IP nor a DNS name is InvalidArgument.
Result<ServingCerts> EnsureServingCerts(const std::string& dir,
                                        const std::vector<std::string>& hosts, Clock::WallTime now);

}  // namespace sluice::apiserver
