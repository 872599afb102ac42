#include "localcluster/apiserver/jwt.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/base64.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr size_t kSha256Bytes = 32;

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const unsigned char* done =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &length);
  // HMAC-SHA256 fails only when OpenSSL itself is broken (no SHA-256, no memory).
  SLUICE_CHECK(done != nullptr && length == kSha256Bytes);
  return std::string(reinterpret_cast<const char*>(out), length);
}

// JSON text of `value`; invalid UTF-8 (which names never hold) is replaced rather than thrown.
std::string Compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status Malformed(const std::string& what) {
  return Status::Unauthenticated("malformed token: " + what);
}

// The JSON object in a base64url part; `what` names the part in errors.
Result<json> DecodeObject(std::string_view part, const char* what) {
  Result<std::string> text = Base64UrlDecode(part);
  if (!text.ok()) return Malformed(std::string(what) + " is not base64url");
  json value = json::parse(*text, nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    return Malformed(std::string(what) + " is not a JSON object");
  }
  return value;
}

}  // namespace

std::string Base64UrlEncode(std::string_view bytes) {
  std::string out = Base64Encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

Result<std::string> Base64UrlDecode(std::string_view text) {
  if (text.size() % 4 == 1) {
    return Status::InvalidArgument("base64url text of length " + std::to_string(text.size()) +
                                   " is truncated");
  }
  std::string standard(text);
  for (char& c : standard) {
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '-') {
      c = '+';
    } else if (c == '_') {
      c = '/';
    } else if (!alnum) {
      return Status::InvalidArgument("base64url text holds a character outside the alphabet");
    }
  }
  return Base64Decode(standard);
}

std::string EncodeJwtHs256(const json& payload, std::string_view key) {
  static const std::string kHeader = Base64UrlEncode(R"({"alg":"HS256","typ":"JWT"})");
  const std::string signed_part = kHeader + "." + Base64UrlEncode(Compact(payload));
  return signed_part + "." + Base64UrlEncode(HmacSha256(key, signed_part));
}

Result<json> DecodeJwtHs256(std::string_view token, std::string_view key) {
  if (token.size() > kMaxJwtBytes) {
    return Malformed("longer than " + std::to_string(kMaxJwtBytes) + " bytes");
  }
  const size_t first = token.find('.');
  const size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return Malformed("a JWT has three dot-separated parts");
  }
  const std::string_view header_part = token.substr(0, first);
  const std::string_view payload_part = token.substr(first + 1, second - first - 1);
  const std::string_view signature_part = token.substr(second + 1);

  SLUICE_ASSIGN_OR_RETURN(const json header, DecodeObject(header_part, "the header"));
  const json alg = header.value("alg", json());
  if (!alg.is_string() || alg.get<std::string>() != "HS256") {
    return Status::Unauthenticated("unsupported token algorithm " + Compact(alg) +
                                   ": only HS256 is accepted");
  }
  if (header.contains("typ") && header["typ"] != "JWT") {
    return Malformed("the header's typ is " + Compact(header["typ"]) + ", not \"JWT\"");
  }
  if (header.contains("crit")) return Malformed("critical header extensions are not supported");

  Result<std::string> signature = Base64UrlDecode(signature_part);
  if (!signature.ok()) return Malformed("the signature is not base64url");
  const std::string expected = HmacSha256(key, token.substr(0, second));
  if (signature->size() != expected.size() ||
      CRYPTO_memcmp(signature->data(), expected.data(), expected.size()) != 0) {
    return Status::Unauthenticated("token signature is invalid");
  }
  return DecodeObject(payload_part, "the payload");
}

}  // namespace sluice::apiserver
