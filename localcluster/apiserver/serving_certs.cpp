#include "localcluster/apiserver/serving_certs.h"

#include <arpa/inet.h>
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
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "common/file/atomic_file.h"
#include "localcluster/apiserver/secret_file.h"

namespace sluice::apiserver {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::minutes;

constexpr const char* kCaCommonName = "sluice-local-ca";
constexpr const char* kServerCommonName = "sluice-apiserver";
constexpr hours kCaValidity = hours(24 * 3652);  // 10 years.
constexpr hours kServerValidity = hours(24 * 365);
constexpr hours kRenewBefore = hours(24 * 30);
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
  std::vector<std::string> all = {"localhost", "127.0.0.1"};
  all.insert(all.end(), hosts.begin(), hosts.end());
  for (const std::string& raw : all) {
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
          "serving certificate host \"" + raw + "\" is neither an IP address nor a DNS name",
          "hosts");
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
  const char* common_name;
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
                                 reinterpret_cast<const unsigned char*>(spec.common_name), -1, -1,
                                 0) != 1 ||
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

// True when `cert` is valid from `now` until at least kRenewBefore later.
bool FreshAt(X509* cert, Clock::WallTime now) {
  time_t t = std::chrono::system_clock::to_time_t(now);
  if (X509_cmp_time(X509_get0_notBefore(cert), &t) >= 0) return false;
  t = std::chrono::system_clock::to_time_t(now + kRenewBefore);
  return X509_cmp_time(X509_get0_notAfter(cert), &t) > 0;
}

// Why the existing server certificate cannot be reused; nullopt when it can.
std::optional<std::string> ServerCertProblem(X509* ca, X509* cert, EVP_PKEY* key,
                                             const HostSet& hosts, Clock::WallTime now) {
  ERR_clear_error();
  if (X509_check_private_key(cert, key) != 1) {
    ERR_clear_error();
    return "apiserver.key does not match apiserver.crt";
  }
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr) != 1) {
    return "cannot set up verification: " + SslReason();
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, std::chrono::system_clock::to_time_t(now));
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (X509_verify_cert(ctx.get()) != 1) {
    ERR_clear_error();
    return std::string("apiserver.crt does not verify against ca.crt: ") +
           X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
  }
  if (!FreshAt(cert, now)) return "apiserver.crt expires within 30 days";

  std::set<std::string> have_dns;
  std::set<std::string> have_ips;
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
      have_dns.insert(std::move(bytes));
    } else {
      have_ips.insert(std::move(bytes));
    }
  }
  for (const std::string& dns : hosts.dns) {
    if (!have_dns.count(dns)) return "apiserver.crt does not cover host \"" + dns + "\"";
  }
  for (const auto& [ip, text] : hosts.ips) {
    if (!have_ips.count(ip)) return "apiserver.crt does not cover host \"" + text + "\"";
  }
  return std::nullopt;
}

struct Ca {
  X509Ptr cert;
  PKeyPtr key;
  std::string pem;
};

// The existing CA; nullopt when it must be (re)generated, with `why` set.
Result<std::optional<Ca>> LoadCa(const fs::path& crt_path, const fs::path& key_path,
                                 Clock::WallTime now, std::string* why) {
  Result<std::string> crt_pem = ReadSmallFile(crt_path, "CA certificate");
  if (!crt_pem.ok()) {
    if (crt_pem.status().code() != StatusCode::kNotFound) return crt_pem.status();
    *why = "no CA yet (" + crt_path.string() + " does not exist)";
    return std::optional<Ca>();
  }
  const std::string crt_where = "CA certificate " + crt_path.string();
  const std::string key_where = "CA key " + key_path.string();
  SLUICE_ASSIGN_OR_RETURN(X509Ptr cert, ParseCert(*crt_pem, crt_where));
  Result<std::string> key_pem = ReadSmallFile(key_path, "CA key");
  if (!key_pem.ok()) {
    return key_pem.status().WithContext("the CA certificate exists but its key cannot be read " +
                                        std::string("(delete both CA files to make a new CA)"));
  }
  SLUICE_ASSIGN_OR_RETURN(PKeyPtr key, ParseKey(*key_pem, key_where));
  if (X509_check_ca(cert.get()) < 1) {
    return Status::InvalidArgument(crt_where + " is not a CA certificate");
  }
  ERR_clear_error();
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return Status::InvalidArgument(key_where + " does not match " + crt_path.string() + ": " +
                                   SslReason() + " (delete both CA files to make a new CA)");
  }
  if (!FreshAt(cert.get(), now)) {
    *why = crt_path.string() + " is not yet valid, expired or expires within 30 days";
    return std::optional<Ca>();
  }
  return std::optional<Ca>(Ca{std::move(cert), std::move(key), std::move(*crt_pem)});
}

}  // namespace

Result<ServingCerts> EnsureServingCerts(const std::string& dir,
                                        const std::vector<std::string>& hosts,
                                        Clock::WallTime now) {
  SLUICE_ASSIGN_OR_RETURN(const HostSet host_set, CanonicalHosts(hosts));
  const fs::path base(dir);
  std::error_code ec;
  if (fs::create_directories(base, ec)) {
    fs::permissions(base, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  if (ec) return Status::Internal("cannot create directory " + dir + ": " + ec.message());

  const fs::path ca_crt = base / "ca.crt";
  const fs::path ca_key = base / "ca.key";
  const fs::path srv_crt = base / "apiserver.crt";
  const fs::path srv_key = base / "apiserver.key";
  ServingCerts out;
  out.ca_cert_file = ca_crt.string();
  out.cert_file = srv_crt.string();
  out.key_file = srv_key.string();

  SLUICE_ASSIGN_OR_RETURN(std::optional<Ca> ca, LoadCa(ca_crt, ca_key, now, &out.reason));
  if (!ca) {
    SLUICE_ASSIGN_OR_RETURN(PKeyPtr key, NewKey());
    const CertSpec spec{kCaCommonName, now, kCaValidity, nullptr};
    Result<X509Ptr> cert = Issue(spec, key.get(), nullptr, key.get());
    if (!cert.ok()) return cert.status().WithContext("issuing CA certificate " + ca_crt.string());
    SLUICE_ASSIGN_OR_RETURN(std::string key_pem, KeyToPem(key.get(), ca_key.string()));
    SLUICE_ASSIGN_OR_RETURN(std::string crt_pem, CertToPem(cert->get(), ca_crt.string()));
    // Key first: a ca.crt on disk always has its key beside it.
    SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(ca_key, key_pem, 0600));
    SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(ca_crt, crt_pem, 0644));
    ca = Ca{std::move(*cert), std::move(key), std::move(crt_pem)};
    out.ca_generated = true;
  }
  out.ca_pem = ca->pem;

  // Reuse the server certificate when it is still good for this CA and these hosts.
  std::optional<std::string> problem;
  if (out.ca_generated) {
    problem = "the CA is new";
  } else {
    Result<std::string> crt_pem = ReadSmallFile(srv_crt, "server certificate");
    Result<std::string> key_pem = ReadSmallFile(srv_key, "server key");
    if (!crt_pem.ok() || !key_pem.ok()) {
      problem = (!crt_pem.ok() ? crt_pem : key_pem).status().message();
    } else {
      Result<X509Ptr> cert = ParseCert(*crt_pem, srv_crt.string());
      Result<PKeyPtr> key = ParseKey(*key_pem, srv_key.string());
      if (!cert.ok() || !key.ok()) {
        problem = (!cert.ok() ? cert.status() : key.status()).message();
      } else {
        problem = ServerCertProblem(ca->cert.get(), cert->get(), key->get(), host_set, now);
      }
    }
  }
  if (!problem) return out;

  if (out.reason.empty()) out.reason = *problem;
  SLUICE_ASSIGN_OR_RETURN(PKeyPtr key, NewKey());
  const CertSpec spec{kServerCommonName, now, kServerValidity, &host_set};
  Result<X509Ptr> cert = Issue(spec, key.get(), ca->cert.get(), ca->key.get());
  if (!cert.ok()) {
    return cert.status().WithContext("issuing server certificate " + srv_crt.string());
  }
  SLUICE_ASSIGN_OR_RETURN(std::string key_pem, KeyToPem(key.get(), srv_key.string()));
  SLUICE_ASSIGN_OR_RETURN(std::string crt_pem, CertToPem(cert->get(), srv_crt.string()));
  SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(srv_key, key_pem, 0600));
  SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(srv_crt, crt_pem, 0644));
  out.server_cert_issued = true;
  return out;
}

}  // namespace sluice::apiserver
