#include "localcluster/apiserver/serving_certs.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include "common/file/atomic_file.h"
#include "common/tls/certificates.h"
#include "localcluster/apiserver/secret_file.h"

namespace sluice::apiserver {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;

constexpr const char* kCaCommonName = "sluice-local-ca";
constexpr const char* kServerCommonName = "sluice-apiserver";
constexpr hours kCaValidity = hours(24 * 3652);  // 10 years.
constexpr hours kServerValidity = hours(24 * 365);
constexpr hours kRenewBefore = hours(24 * 30);

// The existing CA; nullopt when it must be (re)generated, with `why` set.
Result<std::optional<tls::CertifiedKey>> LoadCa(const fs::path& crt_path, const fs::path& key_path,
                                                Clock::WallTime now, std::string* why) {
  Result<std::string> crt_pem = ReadSmallFile(crt_path, "CA certificate");
  if (!crt_pem.ok()) {
    if (crt_pem.status().code() != StatusCode::kNotFound) return crt_pem.status();
    *why = "no CA yet (" + crt_path.string() + " does not exist)";
    return std::optional<tls::CertifiedKey>();
  }
  Result<std::string> key_pem = ReadSmallFile(key_path, "CA key");
  if (!key_pem.ok()) {
    return key_pem.status().WithContext("the CA certificate exists but its key cannot be read " +
                                        std::string("(delete both CA files to make a new CA)"));
  }
  tls::CertifiedKey ca{std::move(*crt_pem), std::move(*key_pem)};
  Result<std::optional<std::string>> problem =
      tls::CertificateAuthorityProblem(ca, now, kRenewBefore);
  if (!problem.ok()) {
    return problem.status().WithContext(crt_path.string() + " and " + key_path.string() +
                                        " (delete both CA files to make a new CA)");
  }
  if (*problem) {
    *why = crt_path.string() + ": " + **problem;
    return std::optional<tls::CertifiedKey>();
  }
  return std::optional<tls::CertifiedKey>(std::move(ca));
}

}  // namespace

Result<ServingCerts> EnsureServingCerts(const std::string& dir,
                                        const std::vector<std::string>& hosts,
                                        Clock::WallTime now) {
  std::vector<std::string> all_hosts = {"localhost", "127.0.0.1"};
  all_hosts.insert(all_hosts.end(), hosts.begin(), hosts.end());
  if (Status s = tls::ValidateHosts(all_hosts); !s.ok()) {
    return Status::InvalidArgument("serving " + s.message(), "hosts");
  }
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

  SLUICE_ASSIGN_OR_RETURN(std::optional<tls::CertifiedKey> ca,
                          LoadCa(ca_crt, ca_key, now, &out.reason));
  if (!ca) {
    Result<tls::CertifiedKey> made =
        tls::NewCertificateAuthority({kCaCommonName, now, kCaValidity});
    if (!made.ok()) return made.status().WithContext(ca_crt.string());
    // Key first: a ca.crt on disk always has its key beside it.
    SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(ca_key, made->key_pem, 0600));
    SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(ca_crt, made->cert_pem, 0644));
    ca = std::move(*made);
    out.ca_generated = true;
  }
  out.ca_pem = ca->cert_pem;

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
      problem = tls::ServingCertificateProblem(ca->cert_pem, {*crt_pem, *key_pem}, all_hosts, now,
                                               kRenewBefore);
      if (problem) *problem = srv_crt.string() + ": " + *problem;
    }
  }
  if (!problem) return out;

  if (out.reason.empty()) out.reason = *problem;
  Result<tls::CertifiedKey> issued =
      tls::IssueServingCertificate(*ca, {kServerCommonName, now, kServerValidity}, all_hosts);
  if (!issued.ok()) return issued.status().WithContext(srv_crt.string());
  SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(srv_key, issued->key_pem, 0600));
  SLUICE_RETURN_IF_ERROR(file::WriteFileAtomic(srv_crt, issued->cert_pem, 0644));
  out.server_cert_issued = true;
  return out;
}

}  // namespace sluice::apiserver
