#include "common/tls/certificates.h"

#include <arpa/inet.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string_view>

namespace sluice::tls {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

constexpr minutes kBackdate = minutes(5);

template <auto Fn>
struct Free {
  template <typename T>
  void operator()(T* p) const {
    Fn(p);
  }
};
using X509Ptr = std::unique_ptr<X509, Free<X509_free>>;
using PKeyPtr = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Free<BIO_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Free<BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Free<X509_EXTENSION_free>>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, Free<GENERAL_NAMES_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Free<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Free<X509_STORE_CTX_free>>;

// OpenSSL's queued errors as "library: reason; ...", emptying the queue.
std::string SslReason() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    if (!out.empty()) out += "; ";
    const char* lib = ERR_lib_error_string(e);
    const char* reason = ERR_reason_error_string(e);
    if (reason != nullptr) {
      out += lib != nullptr ? std::string(lib) + ": " + reason : std::string(reason);
    } else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof(buf));
      out += buf;
    }
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Status SslError(const std::string& what) { return Status::Internal(what + ": " + SslReason()); }

// The requested hosts, canonical: DNS names lowercased without a trailing dot; IPs as the bytes
// of their address (4 or 16).
struct HostSet {
  std::set<std::string> dns;
  std::map<std::string, std::string> ips;  // Address bytes -> the text first given for them.
};

std::optional<std::string> ParseIp(const std::string& text) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, text.c_str(), buf) == 1) return std::string(buf, buf + 4);
  if (inet_pton(AF_INET6, text.c_str(), buf) == 1) return std::string(buf, buf + 16);
  return std::nullopt;
}

// A DNS name: labels of letters, digits and '-' (not at either end), at most 63 each and 253 in
// all; the first label may be a lone '*' (a wildcard certificate name).
bool IsDnsName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view label(name.data() + start, end - start);
    if (label.empty() || label.size() > 63) return false;
    if (!(start == 0 && label == "*")) {
      if (label.front() == '-' || label.back() == '-') return false;
      for (char c : label) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
      }
    }
    start = end + 1;
  }
  return true;
}

Result<HostSet> CanonicalHosts(const std::vector<std::string>& hosts) {
  HostSet out;
  for (const std::string& raw : hosts) {
    std::string h = raw;
    h.erase(0, h.find_first_not_of(" \t"));
    h.erase(h.find_last_not_of(" \t") + 1);
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    if (h.empty()) continue;
    if (std::optional<std::string> ip = ParseIp(h)) {
      out.ips.emplace(*ip, h);
      continue;
    }
    std::transform(h.begin(), h.end(), h.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (h.back() == '.') h.pop_back();
    if (!IsDnsName(h)) {
      return Status::InvalidArgument(
          "certificate host \"" + raw + "\" is neither an IP address nor a DNS name", "hosts");
    }
    out.dns.insert(h);
  }
  return out;
}

// ---- Loading and saving ------------------------------------------------------------------

Result<X509Ptr> ParseCert(const std::string& pem, const std::string& where) {
  ERR_clear_error();
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return SslError(where);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    return Status::InvalidArgument(where + ": not a PEM certificate: " + SslReason());
  }
  return cert;
}

Result<PKeyPtr> ParseKey(const std::string& pem, const std::string& where) {
  ERR_clear_error();
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return SslError(where);
  PKeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return Status::InvalidArgument(where + ": not a PEM private key: " + SslReason());
  return key;
}

Result<std::string> BioText(BIO* bio, const std::string& where) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  if (n <= 0 || data == nullptr) return SslError(where);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> CertToPem(X509* cert, const std::string& where) {
  ERR_clear_error();
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return SslError(where + ": cannot encode the certificate");
  }
  return BioText(bio.get(), where);
}

Result<std::string> KeyToPem(EVP_PKEY* key, const std::string& where) {
  ERR_clear_error();
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return SslError(where + ": cannot encode the private key");
  }
  return BioText(bio.get(), where);
}

// ---- Issuing -------------------------------------------------------------------------------

Result<PKeyPtr> NewKey() {
  ERR_clear_error();
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return SslError("cannot generate an ECDSA P-256 key");
  return key;
}

Status AddExtension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return SslError(std::string("cannot add certificate extension ") + OBJ_nid2sn(nid) + "=" +
                    value);
  }
  return Status::Ok();
}

Status AddSubjectAltNames(X509* cert, const HostSet& hosts) {
  NamesPtr names(sk_GENERAL_NAME_new_null());
  if (!names) return SslError("cannot allocate subjectAltName");
  auto push = [&](int type, ASN1_STRING* value) -> Status {
    GENERAL_NAME* name = GENERAL_NAME_new();
    if (name == nullptr || value == nullptr) {
      GENERAL_NAME_free(name);
      ASN1_STRING_free(value);
      return SslError("cannot allocate subjectAltName");
    }
    GENERAL_NAME_set0_value(name, type, value);
    if (sk_GENERAL_NAME_push(names.get(), name) <= 0) {
      GENERAL_NAME_free(name);
      return SslError("cannot allocate subjectAltName");
    }
    return Status::Ok();
  };
  for (const std::string& dns : hosts.dns) {
    ASN1_IA5STRING* value = ASN1_IA5STRING_new();
    if (value != nullptr && ASN1_STRING_set(value, dns.data(), static_cast<int>(dns.size())) != 1) {
      ASN1_IA5STRING_free(value);
      value = nullptr;
    }
    SLUICE_RETURN_IF_ERROR(push(GEN_DNS, value));
  }
  for (const auto& [ip, text] : hosts.ips) {
    ASN1_OCTET_STRING* value = ASN1_OCTET_STRING_new();
    if (value != nullptr &&
        ASN1_OCTET_STRING_set(value, reinterpret_cast<const unsigned char*>(ip.data()),
                              static_cast<int>(ip.size())) != 1) {
      ASN1_OCTET_STRING_free(value);
      value = nullptr;
    }
    SLUICE_RETURN_IF_ERROR(push(GEN_IPADD, value));
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1) {
    return SslError("cannot add subjectAltName");
  }
  return Status::Ok();
}

struct CertSpec {
  const std::string& common_name;
  Clock::WallTime now;
  hours validity;
  const HostSet* hosts;  // Null for the CA.
};

// A certificate for `key`, signed by `issuer_key`; self-signed when `issuer` is null.
Result<X509Ptr> Issue(const CertSpec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key) {
  ERR_clear_error();
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
    return SslError("cannot create a certificate");
  }
  // A random positive 127-bit serial; the fixed second bit keeps it non-zero and 16 bytes long.
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return SslError("cannot generate a serial number");
  serial[0] = static_cast<unsigned char>((serial[0] & 0x7f) | 0x40);
  BnPtr bn(BN_bin2bn(serial, sizeof(serial), nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return SslError("cannot set the serial number");
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.c_str()),
                                 -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(),
                           issuer != nullptr ? X509_get_subject_name(issuer) : subject) != 1) {
    return SslError("cannot set the certificate's names");
  }
  const time_t not_before = std::chrono::system_clock::to_time_t(spec.now - kBackdate);
  const time_t not_after = std::chrono::system_clock::to_time_t(spec.now + spec.validity);
  if (ASN1_TIME_set(X509_getm_notBefore(cert.get()), not_before) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), not_after) == nullptr) {
    return SslError("cannot set the validity period");
  }
  if (X509_set_pubkey(cert.get(), key) != 1) return SslError("cannot set the public key");

  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  if (spec.hosts == nullptr) {
    SLUICE_RETURN_IF_ERROR(
        AddExtension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE"));
    SLUICE_RETURN_IF_ERROR(AddExtension(cert.get(), &ctx, NID_key_usage,
                                        "critical,digitalSignature,keyCertSign,cRLSign"));
    SLUICE_RETURN_IF_ERROR(AddExtension(cert.get(), &ctx, NID_subject_key_identifier, "hash"));
  } else {
    SLUICE_RETURN_IF_ERROR(
        AddExtension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE"));
    SLUICE_RETURN_IF_ERROR(
        AddExtension(cert.get(), &ctx, NID_key_usage, "critical,digitalSignature"));
    SLUICE_RETURN_IF_ERROR(AddExtension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth"));
    SLUICE_RETURN_IF_ERROR(AddExtension(cert.get(), &ctx, NID_subject_key_identifier, "hash"));
    SLUICE_RETURN_IF_ERROR(
        AddExtension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always"));
    SLUICE_RETURN_IF_ERROR(AddSubjectAltNames(cert.get(), *spec.hosts));
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) <= 0) {
    return SslError("cannot sign the certificate");
  }
  return cert;
}

// ---- Checking ------------------------------------------------------------------------------

// True when `cert` is valid from `now` until at least `renew_before` later.
bool FreshAt(X509* cert, Clock::WallTime now, hours renew_before) {
  time_t t = std::chrono::system_clock::to_time_t(now);
  if (X509_cmp_time(X509_get0_notBefore(cert), &t) >= 0) return false;
  t = std::chrono::system_clock::to_time_t(now + renew_before);
  return X509_cmp_time(X509_get0_notAfter(cert), &t) > 0;
}

// The hosts `cert`'s subjectAltName covers: DNS names lower-cased, IP addresses as their bytes.
struct CoveredHosts {
  std::set<std::string> dns;
  std::set<std::string> ips;
  std::vector<std::string> text;  // In the certificate's order, IPs printed.
};

CoveredHosts Covered(X509* cert) {
  CoveredHosts out;
  NamesPtr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    int type = 0;
    const auto* value = static_cast<const ASN1_STRING*>(GENERAL_NAME_get0_value(name, &type));
    if (value == nullptr || (type != GEN_DNS && type != GEN_IPADD)) continue;
    std::string bytes(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                      static_cast<size_t>(ASN1_STRING_length(value)));
    if (type == GEN_DNS) {
      std::transform(bytes.begin(), bytes.end(), bytes.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out.text.push_back(bytes);
      out.dns.insert(std::move(bytes));
    } else {
      char buf[64] = {};
      const int family = bytes.size() == 4 ? AF_INET : AF_INET6;
      if ((bytes.size() == 4 || bytes.size() == 16) &&
          inet_ntop(family, bytes.data(), buf, sizeof(buf)) != nullptr) {
        out.text.emplace_back(buf);
      }
      out.ips.insert(std::move(bytes));
    }
  }
  return out;
}

// A parsed certificate and key that belong together.
struct Parsed {
  X509Ptr cert;
  PKeyPtr key;
};

Result<Parsed> ParsePair(const CertifiedKey& pair, const std::string& what) {
  SLUICE_ASSIGN_OR_RETURN(X509Ptr cert, ParseCert(pair.cert_pem, what + " certificate"));
  SLUICE_ASSIGN_OR_RETURN(PKeyPtr key, ParseKey(pair.key_pem, what + " key"));
  ERR_clear_error();
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return Status::InvalidArgument("the " + what +
                                   " key does not match its certificate: " + SslReason());
  }
  return Parsed{std::move(cert), std::move(key)};
}

Result<Parsed> ParseCa(const CertifiedKey& ca) {
  SLUICE_ASSIGN_OR_RETURN(Parsed parsed, ParsePair(ca, "CA"));
  if (X509_check_ca(parsed.cert.get()) < 1) {
    return Status::InvalidArgument("the certificate is not a CA certificate");
  }
  return parsed;
}

}  // namespace

Result<CertifiedKey> NewCertificateAuthority(const CertificateSpec& spec) {
  SLUICE_ASSIGN_OR_RETURN(PKeyPtr key, NewKey());
  const CertSpec cert_spec{spec.common_name, spec.now, spec.validity, nullptr};
  Result<X509Ptr> cert = Issue(cert_spec, key.get(), nullptr, key.get());
  if (!cert.ok()) return cert.status().WithContext("issuing a CA certificate");
  CertifiedKey out;
  SLUICE_ASSIGN_OR_RETURN(out.cert_pem, CertToPem(cert->get(), "the CA certificate"));
  SLUICE_ASSIGN_OR_RETURN(out.key_pem, KeyToPem(key.get(), "the CA key"));
  return out;
}

Result<CertifiedKey> IssueServingCertificate(const CertifiedKey& ca, const CertificateSpec& spec,
                                             const std::vector<std::string>& hosts) {
  SLUICE_ASSIGN_OR_RETURN(const HostSet host_set, CanonicalHosts(hosts));
  if (host_set.dns.empty() && host_set.ips.empty()) {
    return Status::InvalidArgument("a serving certificate needs at least one host", "hosts");
  }
  SLUICE_ASSIGN_OR_RETURN(Parsed issuer, ParseCa(ca));
  SLUICE_ASSIGN_OR_RETURN(PKeyPtr key, NewKey());
  const CertSpec cert_spec{spec.common_name, spec.now, spec.validity, &host_set};
  Result<X509Ptr> cert = Issue(cert_spec, key.get(), issuer.cert.get(), issuer.key.get());
  if (!cert.ok()) return cert.status().WithContext("issuing a serving certificate");
  CertifiedKey out;
  SLUICE_ASSIGN_OR_RETURN(out.cert_pem, CertToPem(cert->get(), "the serving certificate"));
  SLUICE_ASSIGN_OR_RETURN(out.key_pem, KeyToPem(key.get(), "the serving key"));
  return out;
}

Result<std::optional<std::string>> CertificateAuthorityProblem(const CertifiedKey& ca,
                                                               Clock::WallTime now,
                                                               hours renew_before) {
  SLUICE_ASSIGN_OR_RETURN(Parsed parsed, ParseCa(ca));
  if (!FreshAt(parsed.cert.get(), now, renew_before)) {
    return std::optional<std::string>(
        "the CA certificate is not yet valid, expired or expires within " +
        std::to_string(renew_before.count() / 24) + " days");
  }
  return std::optional<std::string>();
}

std::optional<std::string> ServingCertificateProblem(const std::string& ca_cert_pem,
                                                     const CertifiedKey& serving,
                                                     const std::vector<std::string>& hosts,
                                                     Clock::WallTime now, hours renew_before) {
  Result<HostSet> host_set = CanonicalHosts(hosts);
  if (!host_set.ok()) return host_set.status().message();
  Result<X509Ptr> ca = ParseCert(ca_cert_pem, "the CA certificate");
  if (!ca.ok()) return ca.status().message();
  Result<Parsed> parsed = ParsePair(serving, "serving");
  if (!parsed.ok()) return parsed.status().message();
  X509* cert = parsed->cert.get();
  ERR_clear_error();
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca->get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr) != 1) {
    return "cannot set up verification: " + SslReason();
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, std::chrono::system_clock::to_time_t(now));
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (X509_verify_cert(ctx.get()) != 1) {
    ERR_clear_error();
    return std::string("the serving certificate does not verify against the CA: ") +
           X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
  }
  if (!FreshAt(cert, now, renew_before)) {
    return "the serving certificate expires within " + std::to_string(renew_before.count() / 24) +
           " days";
  }
  const CoveredHosts covered = Covered(cert);
  for (const std::string& dns : host_set->dns) {
    // As a client checks it: the name itself, or a wildcard for its first label (RFC 6125).
    const size_t dot = dns.find('.');
    const bool wildcard = dot != std::string::npos && covered.dns.count("*" + dns.substr(dot));
    if (!covered.dns.count(dns) && !wildcard) {
      return "the serving certificate does not cover host \"" + dns + "\"";
    }
  }
  for (const auto& [ip, text] : host_set->ips) {
    if (!covered.ips.count(ip)) {
      return "the serving certificate does not cover host \"" + text + "\"";
    }
  }
  return std::nullopt;
}

Status ValidateHosts(const std::vector<std::string>& hosts) {
  return CanonicalHosts(hosts).status();
}

Result<std::vector<std::string>> CertificateHosts(const std::string& cert_pem) {
  SLUICE_ASSIGN_OR_RETURN(X509Ptr cert, ParseCert(cert_pem, "certificate"));
  return Covered(cert.get()).text;
}

Result<int64_t> CertificateNotAfter(const std::string& cert_pem) {
  SLUICE_ASSIGN_OR_RETURN(X509Ptr cert, ParseCert(cert_pem, "certificate"));
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &tm) != 1) {
    return SslError("certificate: cannot read notAfter");
  }
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace sluice::tls
