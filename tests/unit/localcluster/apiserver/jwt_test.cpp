// HS256 JWTs (jwt.h): base64url, signing, and every way a token from the network can be wrong.
#include "localcluster/apiserver/jwt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr char kKey[] = "0123456789abcdef0123456789abcdef";

TEST(JwtTest, Base64UrlRoundTripsWithoutPadding) {
  struct Case {
    std::string bytes;
    std::string encoded;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"f", "Zg"},
      {"fo", "Zm8"},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg"},
      {std::string("\xfb\xff\xfe", 3), "-__-"},  // The two characters that differ from base64.
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.encoded);
    EXPECT_EQ(Base64UrlEncode(c.bytes), c.encoded);
    Result<std::string> decoded = Base64UrlDecode(c.encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, c.bytes);
  }
  for (const char* bad : {"Zg==", "Zm9v+", "Zm9v/", "Zm 9v", "Zm9vY", "Z\n9v"}) {
    SCOPED_TRACE(bad);
    Result<std::string> decoded = Base64UrlDecode(bad);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(JwtTest, SignedTokensDecodeToTheirPayload) {
  const json payload = {{"sub", "system:serviceaccount:ml:robot"}, {"exp", 1767225600}};
  const std::string token = EncodeJwtHs256(payload, kKey);
  // header.payload.signature, the header being {"alg":"HS256","typ":"JWT"}.
  ASSERT_EQ(std::count(token.begin(), token.end(), '.'), 2);
  Result<std::string> header = Base64UrlDecode(token.substr(0, token.find('.')));
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(json::parse(*header), json::parse(R"({"alg":"HS256","typ":"JWT"})"));
  EXPECT_EQ(token.find('='), std::string::npos);

  Result<json> decoded = DecodeJwtHs256(token, kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, payload);
  // Deterministic: the same payload and key give the same token.
  EXPECT_EQ(EncodeJwtHs256(payload, kKey), token);
}

// Replaces part `index` (0 header, 1 payload, 2 signature) of a token.
std::string WithPart(const std::string& token, int index, const std::string& part) {
  const size_t first = token.find('.');
  const size_t second = token.find('.', first + 1);
  std::string parts[3] = {token.substr(0, first), token.substr(first + 1, second - first - 1),
                          token.substr(second + 1)};
  parts[index] = part;
  return parts[0] + "." + parts[1] + "." + parts[2];
}

// A token with header `header` (JSON text) and a made-up signature: the header is judged first,
// so its refusal is what such a token gets.
std::string WithHeader(const std::string& header, const json& payload) {
  return Base64UrlEncode(header) + "." + Base64UrlEncode(payload.dump()) + "." +
         Base64UrlEncode("signature");
}

TEST(JwtTest, MalformedForgedAndForeignTokensAreRefused) {
  const json payload = {{"sub", "system:serviceaccount:ml:robot"}};
  const std::string good = EncodeJwtHs256(payload, kKey);
  const std::string other_key = EncodeJwtHs256(payload, "another key");
  const std::string forged_payload =
      WithPart(good, 1, Base64UrlEncode(R"({"sub":"system:serviceaccount:kube-system:admin"})"));
  struct Case {
    const char* name;
    std::string token;
    std::string message;  // A fragment of the Unauthenticated message.
  };
  const std::vector<Case> cases = {
      {"empty", "", "three dot-separated parts"},
      {"not a jwt", "64-hex-digits-admin-token", "three dot-separated parts"},
      {"two parts", good.substr(0, good.rfind('.')), "three dot-separated parts"},
      {"four parts", good + ".x", "three dot-separated parts"},
      {"signed with another key", other_key, "token signature is invalid"},
      {"payload changed after signing", forged_payload, "token signature is invalid"},
      {"signature removed", WithPart(good, 2, ""), "token signature is invalid"},
      {"signature not base64url", WithPart(good, 2, "a+b/"), "the signature is not base64url"},
      {"header not base64url", WithPart(good, 0, "e30="), "the header is not base64url"},
      {"header not an object", WithPart(good, 0, Base64UrlEncode("[1]")),
       "the header is not a JSON object"},
      {"alg none", WithHeader(R"({"alg":"none","typ":"JWT"})", payload),
       "unsupported token algorithm \"none\""},
      {"alg RS256", WithHeader(R"({"alg":"RS256","kid":"k"})", payload),
       "unsupported token algorithm \"RS256\""},
      {"alg missing", WithHeader(R"({"typ":"JWT"})", payload), "unsupported token algorithm null"},
      {"typ not JWT", WithHeader(R"({"alg":"HS256","typ":"JOSE+JSON"})", payload),
       "the header's typ"},
      {"critical extensions", WithHeader(R"({"alg":"HS256","crit":["exp"]})", payload),
       "critical header extensions"},
      {"too long", good + std::string(kMaxJwtBytes, 'A'), "longer than"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<json> decoded = DecodeJwtHs256(c.token, kKey);
    ASSERT_FALSE(decoded.ok()) << decoded->dump();
    EXPECT_EQ(decoded.status().code(), StatusCode::kUnauthenticated);
    EXPECT_NE(decoded.status().message().find(c.message), std::string::npos)
        << decoded.status().message();
  }
}

TEST(JwtTest, APayloadThatIsNotAnObjectIsRefusedEvenWhenSigned) {
  const std::string token = EncodeJwtHs256(json::array({1, 2}), kKey);
  Result<json> decoded = DecodeJwtHs256(token, kKey);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("the payload is not a JSON object"), std::string::npos)
      << decoded.status().message();
}

}  // namespace
}  // namespace sluice::apiserver
