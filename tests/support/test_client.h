// Test helper: an HTTP client of a test's own server.
//
//   TestClient(server.BaseUrl(), "token")   bearer token "token", one attempt per request
//
// One attempt (no retries): a test sees each failure and each status as the server sent it.
// An empty token sends no Authorization header.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "common/http/bearer_token.h"
#include "common/http/client.h"
#include "tests/support/test_client.h"

namespace sluice::test_support {

inline std::unique_ptr<http::Client> TestClient(const std::string& base_url,
                                                const std::string& token = "") {
  http::ClientOptions co;
  co.base_url = base_url;
  if (!token.empty()) co.token = http::TokenSource::FromValue(token);
  co.max_attempts = 1;
  return std::move(http::Client::Create(co)).value();
}

}  // namespace sluice::test_support
