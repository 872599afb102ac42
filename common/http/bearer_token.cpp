#include "common/http/bearer_token.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <strings.h>

#include <fstream>
#include <sstream>

#include "common/ascii.h"

namespace sluice::http {
namespace {}  // namespace

std::shared_ptr<TokenSource> TokenSource::FromValue(std::string token) {
  std::shared_ptr<TokenSource> source(new TokenSource());
  source->token_ = std::string(StripAsciiSpace(token));
  return source;
}

Result<std::shared_ptr<TokenSource>> TokenSource::FromFile(std::filesystem::path path) {
  std::shared_ptr<TokenSource> source(new TokenSource());
  source->path_ = std::move(path);
  std::lock_guard<std::mutex> lock(source->mu_);
  SLUICE_RETURN_IF_ERROR(source->ReloadLocked());
  return source;
}

Status TokenSource::ReloadLocked() {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(*path_, ec);
  if (ec) {
    return Status::InvalidArgument("token file " + path_->string() + ": " + ec.message());
  }
  std::ifstream in(*path_, std::ios::binary);
  if (!in) return Status::InvalidArgument("token file " + path_->string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  std::string token(StripAsciiSpace(text.str()));
  if (token.empty()) return Status::InvalidArgument("token file " + path_->string() + " is empty");
  token_ = std::move(token);
  mtime_ = mtime;
  return Status::Ok();
}

std::string TokenSource::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (path_) {
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(*path_, ec);
    if (!ec && mtime != mtime_) (void)ReloadLocked();  // Keep the old token on failure.
  }
  return token_;
}

bool TokensEqual(std::string_view a, std::string_view b) {
  unsigned char da[SHA256_DIGEST_LENGTH];
  unsigned char db[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), da);
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), db);
  return CRYPTO_memcmp(da, db, SHA256_DIGEST_LENGTH) == 0;
}

std::optional<std::string_view> ParseBearerHeader(std::string_view value) {
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() ||
      strncasecmp(value.data(), kScheme.data(), kScheme.size()) != 0 ||
      (value[kScheme.size()] != ' ' && value[kScheme.size()] != '\t')) {
    return std::nullopt;
  }
  std::string_view token = value.substr(kScheme.size());
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

}  // namespace sluice::http
