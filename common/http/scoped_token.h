// ScopedToken: a bearer token that admits only some of a server's routes.
//
// A server's own token (ServerOptions::auth) admits every route. A component that serves several
// roles gives each narrower role a token of its own: the dataflow admits a rollout replica's
// token for leasing and submitting but not for acknowledging a batch or announcing a version,
// which only the trainer's token may. A request that carries a scoped token on a route outside
// its scope gets 403 naming the role and the request, before its body is read.
//
// Thread safety: immutable after construction; Admits from any thread.
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/bearer_token.h"

namespace sluice::http {

// One request shape a scoped token admits: a method and a path pattern that must match the
// whole path (cpp-httplib regular-expression syntax, as the routes use).
struct RouteScope {
  std::string method;        // "GET", "POST", ...
  std::string path_pattern;  // e.g. R"(/v1/leases/[^/]+/renew)"
};

class ScopedToken {
 public:
  // `role` names the token in logs and 403s ("rollout"). `token` must not be null.
  ScopedToken(std::string role, std::shared_ptr<TokenSource> token, std::vector<RouteScope> scope);

  const std::string& role() const { return role_; }
  TokenSource& token() const { return *token_; }
  // Whether a request of `method` on `path` (no query string) is within the scope.
  bool Admits(std::string_view method, const std::string& path) const;

 private:
  std::string role_;
  std::shared_ptr<TokenSource> token_;
  std::vector<std::pair<std::string, std::regex>> scope_;
};

// A ServerOptions::authenticate_other hook for `tokens` (the server's own token admits every
// route before the hook is asked): admits a request whose bearer token is one of `tokens` and
// whose method and path are in that token's scope, adding `role` to its access log line;
// answers 403 (Forbidden, naming the role and the request) when the token is one of them but
// the route is not in its scope, and 401 otherwise.
std::function<bool(const httplib::Request&, httplib::Response&)> ScopedTokenHook(
    std::vector<ScopedToken> tokens);

}  // namespace sluice::http
