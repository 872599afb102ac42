#include "workers/weights/weight_digest.h"

#include <openssl/evp.h>

#include "common/check.h"

namespace sluice::weights {

struct WeightDigest::Context {
  EVP_MD_CTX* md = nullptr;
};

WeightDigest::WeightDigest() : ctx_(new Context) {
  ctx_->md = EVP_MD_CTX_new();
  // Only allocation can fail here; without a context no digest can be trusted, so stop.
  SLUICE_CHECK(ctx_->md != nullptr);
  SLUICE_CHECK(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1);
}

WeightDigest::~WeightDigest() {
  EVP_MD_CTX_free(ctx_->md);
  delete ctx_;
}

void WeightDigest::Update(std::string_view bytes) {
  if (bytes.empty()) return;
  SLUICE_CHECK(EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()) == 1);
}

void WeightDigest::Reset() {
  SLUICE_CHECK(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1);
}

std::string WeightDigest::Finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  SLUICE_CHECK(EVP_DigestFinal_ex(ctx_->md, md, &len) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kDigestPrefix);
  out.reserve(kDigestPrefix.size() + 2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xF]);
  }
  return out;
}

std::string DigestOf(std::string_view bytes) {
  WeightDigest d;
  d.Update(bytes);
  return d.Finish();
}

Status CheckDigestSyntax(std::string_view digest, std::string_view field) {
  constexpr size_t kHexDigits = 64;
  bool ok = digest.size() == kDigestPrefix.size() + kHexDigits && digest.starts_with(kDigestPrefix);
  for (size_t i = kDigestPrefix.size(); ok && i < digest.size(); ++i) {
    const char c = digest[i];
    ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
  if (ok) return Status::Ok();
  return Status::InvalidArgument("expected \"sha256:\" and 64 lowercase hex digits, got \"" +
                                     std::string(digest.substr(0, 100)) + "\"",
                                 std::string(field));
}

}  // namespace sluice::weights
