// X.509 certificates for Sluice's own TLS: a private certificate authority and the serving
// certificates it signs, as PEM text (no files: callers store them where they belong, the local
// API server in its state directory, the operator in Secrets).
//
// Keys are ECDSA P-256, signatures SHA-256, serial numbers random 127-bit. A CA certificate is
// CA:TRUE with keyCertSign; a serving certificate is CA:FALSE, serverAuth, with a subjectAltName
// for each host. Validity starts 5 minutes before `now` to tolerate clock skew between processes.
//
// Hosts are DNS names (letters, digits and '-', a leading "*." allowed; lower-cased, a trailing
// dot dropped) or IPv4/IPv6 addresses (optionally in brackets); duplicates and empty entries are
// ignored, and anything else is InvalidArgument naming the host.
//
// Thread safety: stateless functions; safe to call from any thread (OpenSSL 3).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace sluice::tls {

// A certificate and its private key, both PEM.
struct CertifiedKey {
  std::string cert_pem;
  std::string key_pem;
};

// What to put in a new certificate.
struct CertificateSpec {
  std::string common_name;
  Clock::WallTime now;             // Valid from 5 minutes before this.
  std::chrono::hours validity{0};  // ...until this long after it.
};

// A new self-signed CA with a new key.
Result<CertifiedKey> NewCertificateAuthority(const CertificateSpec& spec);

// A new key and a serving certificate for it, signed by `ca`, covering `hosts` (at least one).
// Errors: InvalidArgument for a bad host or an unusable `ca` (unparsable, not a CA, key and
// certificate not matching), naming which.
Result<CertifiedKey> IssueServingCertificate(const CertifiedKey& ca, const CertificateSpec& spec,
                                             const std::vector<std::string>& hosts);

// Checks `ca` can keep signing. InvalidArgument when it cannot be used at all (unparsable, not a
// CA, key not matching: a human must look); otherwise a reason when it must be replaced (not yet
// valid at `now`, expired, or expiring within `renew_before`), nullopt when it is good.
Result<std::optional<std::string>> CertificateAuthorityProblem(const CertifiedKey& ca,
                                                               Clock::WallTime now,
                                                               std::chrono::hours renew_before);

// Why `serving` should be reissued, or nullopt when it can be kept: unparsable, its key not
// matching, not verifying against `ca_cert_pem` as a server certificate at `now`, expiring within
// `renew_before`, or not covering one of `hosts` (canonicalised as above; an invalid host is
// reported as a reason too). A host is covered by its own name or, as clients verify, by a
// wildcard for its first label ("*.train.rl.svc" covers "train-0.train.rl.svc", not
// "a.train-0.train.rl.svc" nor "train.rl.svc").
std::optional<std::string> ServingCertificateProblem(const std::string& ca_cert_pem,
                                                     const CertifiedKey& serving,
                                                     const std::vector<std::string>& hosts,
                                                     Clock::WallTime now,
                                                     std::chrono::hours renew_before);

// OK when every entry of `hosts` is a DNS name, an IP address or empty (the rules above).
Status ValidateHosts(const std::vector<std::string>& hosts);

// The hosts (DNS names and IP addresses as text) a certificate's subjectAltName covers, in the
// certificate's order; InvalidArgument for text that is not a PEM certificate.
Result<std::vector<std::string>> CertificateHosts(const std::string& cert_pem);

// Seconds since the epoch at which `cert_pem` stops being valid (notAfter).
Result<int64_t> CertificateNotAfter(const std::string& cert_pem);

}  // namespace sluice::tls
