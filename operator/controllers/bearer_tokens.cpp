#include "operator/controllers/bearer_tokens.h"

#include <random>

namespace sluice::controllers {

std::string RandomBearerToken() {
  std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i) {
    const unsigned v = rd() & 0xff;
    token += kHex[v >> 4];
    token += kHex[v & 15];
  }
  return token;
}

nlohmann::json BearerTokenSecret(const nlohmann::json& metadata, const std::string& token) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", metadata},
          {"type", "Opaque"},
          {"stringData", {{"token", token}}}};
}

}  // namespace sluice::controllers
