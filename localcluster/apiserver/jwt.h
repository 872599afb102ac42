// Compact JSON Web Tokens signed with HMAC-SHA256 (RFC 7519; JWS, RFC 7515, alg "HS256"): the
// envelope of the local API server's service-account tokens (service_account_token.h).
//
// A token is base64url(header) "." base64url(payload) "." base64url(signature), each without
// padding; the header is {"alg":"HS256","typ":"JWT"} and the signature is HMAC-SHA256 of the first
// two parts (as sent, dot included) under the server's key. Kube signs with RS256 or ES256 so that
// other parties can verify with the public key; nothing outside one machine verifies these
// tokens, so a shared secret keeps the format standard without a key pair to manage.
//
// Decoding is strict because tokens come from the network: exactly three parts, the base64url
// alphabet only (no padding, no whitespace), a JSON object header whose alg is exactly "HS256" (a
// token claiming "none" or any other algorithm is refused, never checked another way), the
// signature compared in constant time before the payload is parsed, a JSON object payload, and at
// most kMaxJwtBytes in all.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::apiserver {

// Longer bearer tokens are refused unread (ours are well under 2 KiB).
inline constexpr size_t kMaxJwtBytes = 16 * 1024;

// Base64url (RFC 4648 section 5) without padding.
std::string Base64UrlEncode(std::string_view bytes);
// The inverse of Base64UrlEncode. InvalidArgument for a character outside [A-Za-z0-9_-] ('='
// included) or a length no encoding produces (4n + 1).
Result<std::string> Base64UrlDecode(std::string_view text);

// The token carrying `payload` (a JSON object), signed with `key` (any non-empty byte string).
std::string EncodeJwtHs256(const nlohmann::json& payload, std::string_view key);

// The payload of `token` when it is a well-formed HS256 JWT whose signature `key` produced;
// otherwise Unauthenticated saying what is wrong ("malformed token: ...", "unsupported token
// algorithm \"RS256\"", "token signature is invalid"). Claims are not looked at here.
Result<nlohmann::json> DecodeJwtHs256(std::string_view token, std::string_view key);

}  // namespace sluice::apiserver
