#include "localcluster/apiserver/access_token.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include <string_view>

#include "common/ascii.h"
#include "common/file/atomic_file.h"
#include "localcluster/apiserver/secret_file.h"

namespace sluice::apiserver {
namespace {

constexpr size_t kTokenBytes = 32;

Result<std::string> ReadToken(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, "access token file"));
  std::string token(StripAsciiSpace(text));
  if (token.empty()) {
    return Status::InvalidArgument("access token file " + path +
                                   " is empty; delete it to generate a new token");
  }
  return token;
}

}  // namespace

Result<std::string> NewRandomSecret() {
  unsigned char bytes[kTokenBytes];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    char reason[256];
    ERR_error_string_n(ERR_get_error(), reason, sizeof(reason));
    return Status::Internal(std::string("cannot generate a random secret: RAND_bytes: ") + reason);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * kTokenBytes);
  for (unsigned char b : bytes) {
    token.push_back(kHex[b >> 4]);
    token.push_back(kHex[b & 0xf]);
  }
  return token;
}

Result<std::string> EnsureAccessToken(const std::string& path) {
  Result<std::string> existing = ReadToken(path);
  if (existing.ok() || existing.status().code() != StatusCode::kNotFound) return existing;
  SLUICE_ASSIGN_OR_RETURN(const std::string token, NewRandomSecret());
  SLUICE_ASSIGN_OR_RETURN(const bool created, file::WriteFileIfAbsent(path, token + "\n", 0600));
  if (!created) return ReadToken(path);  // Another process created it first; use theirs.
  return token;
}

}  // namespace sluice::apiserver
