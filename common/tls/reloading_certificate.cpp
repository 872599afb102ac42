#include "common/tls/reloading_certificate.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <system_error>
#include <utility>

#include "common/file/read_file.h"

namespace sluice::tls {

struct ReloadingCertificate::Pair {
  X509* leaf = nullptr;
  STACK_OF(X509) * chain = nullptr;  // The certificates after the leaf, in file order.
  EVP_PKEY* key = nullptr;
  std::string leaf_pem;

  Pair() = default;
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;
  ~Pair() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
  }
};

namespace {

// Parses a PEM chain and key; InvalidArgument naming the file that is wrong.
Result<std::shared_ptr<const ReloadingCertificate::Pair>> ParsePair(
    const std::filesystem::path& cert_file, const std::string& cert_pem,
    const std::filesystem::path& key_file, const std::string& key_pem) {
  auto pair = std::make_shared<ReloadingCertificate::Pair>();
  {
    BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    pair->chain = sk_X509_new_null();
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      if (pair->leaf == nullptr) {
        pair->leaf = cert;
      } else {
        sk_X509_push(pair->chain, cert);
      }
    }
    BIO_free(bio);
    ERR_clear_error();  // The loop ends on "no start line".
  }
  if (pair->leaf == nullptr) {
    return Status::InvalidArgument("TLS certificate file \"" + cert_file.string() +
                                   "\" holds no PEM certificate");
  }
  {
    BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    pair->key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    ERR_clear_error();
  }
  if (pair->key == nullptr) {
    return Status::InvalidArgument("TLS key file \"" + key_file.string() +
                                   "\" holds no PEM private key");
  }
  if (X509_check_private_key(pair->leaf, pair->key) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("TLS key file \"" + key_file.string() +
                                   "\" does not match the certificate in \"" + cert_file.string() +
                                   "\"");
  }
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(out, pair->leaf);
  char* data = nullptr;
  const long len = BIO_get_mem_data(out, &data);
  pair->leaf_pem.assign(data, static_cast<size_t>(len));
  BIO_free(out);
  return std::shared_ptr<const ReloadingCertificate::Pair>(std::move(pair));
}

int ServeCurrent(SSL* ssl, void* arg) {
  auto pair = static_cast<ReloadingCertificate*>(arg)->Current();
  // Replaces whatever the context set; takes its own references to all three.
  return SSL_use_cert_and_key(ssl, pair->leaf, pair->key, pair->chain, 1) == 1 ? 1 : 0;
}

}  // namespace

// A file that cannot be seen gets the default stamp (a reload then fails on read). stat()
// follows kubelet's symlinks to the file they name now.
ReloadingCertificate::Stamp ReloadingCertificate::StampOf(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size)};
}

ReloadingCertificate::ReloadingCertificate(std::filesystem::path cert_file,
                                           std::filesystem::path key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

ReloadingCertificate::~ReloadingCertificate() = default;

Result<std::unique_ptr<ReloadingCertificate>> ReloadingCertificate::Load(
    std::filesystem::path cert_file, std::filesystem::path key_file) {
  std::unique_ptr<ReloadingCertificate> cert(
      new ReloadingCertificate(std::move(cert_file), std::move(key_file)));
  std::lock_guard<std::mutex> lock(cert->mu_);
  SLUICE_RETURN_IF_ERROR(cert->ReloadLocked());
  cert->reloads_ = 0;
  return cert;
}

Status ReloadingCertificate::ReloadLocked() {
  // Times first: a write that lands while the files are read is seen again next time.
  const Stamp cert_stamp = StampOf(cert_file_);
  const Stamp key_stamp = StampOf(key_file_);
  auto cert_pem = file::ReadWholeFile(cert_file_.string());
  if (!cert_pem.ok()) {
    return Status::InvalidArgument("cannot read TLS certificate file \"" + cert_file_.string() +
                                   "\": " + cert_pem.status().message());
  }
  auto key_pem = file::ReadWholeFile(key_file_.string());
  if (!key_pem.ok()) {
    return Status::InvalidArgument("cannot read TLS key file \"" + key_file_.string() +
                                   "\": " + key_pem.status().message());
  }
  auto pair = ParsePair(cert_file_, *cert_pem, key_file_, *key_pem);
  if (!pair.ok()) return pair.status();
  current_ = std::move(*pair);
  cert_stamp_ = cert_stamp;
  key_stamp_ = key_stamp;
  ++reloads_;
  return Status::Ok();
}

std::shared_ptr<const ReloadingCertificate::Pair> ReloadingCertificate::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  if (StampOf(cert_file_) != cert_stamp_ || StampOf(key_file_) != key_stamp_) {
    (void)ReloadLocked();  // On failure: keep the last good pair; retried next handshake.
  }
  return current_;
}

std::string ReloadingCertificate::CurrentLeafPem() { return Current()->leaf_pem; }

void ReloadingCertificate::InstallOn(SSL_CTX* ctx) {
  SSL_CTX_set_cert_cb(ctx, &ServeCurrent, this);
}

uint64_t ReloadingCertificate::reloads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reloads_;
}

}  // namespace sluice::tls
