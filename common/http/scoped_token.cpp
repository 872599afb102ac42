#include "common/http/scoped_token.h"

#include <utility>

#include "common/http/json_body.h"
#include "common/http/server.h"

namespace sluice::http {

ScopedToken::ScopedToken(std::string role, std::shared_ptr<TokenSource> token,
                         std::vector<RouteScope> scope)
    : role_(std::move(role)), token_(std::move(token)) {
  scope_.reserve(scope.size());
  for (RouteScope& s : scope) scope_.emplace_back(std::move(s.method), std::regex(s.path_pattern));
}

bool ScopedToken::Admits(std::string_view method, const std::string& path) const {
  for (const auto& [m, pattern] : scope_) {
    if (m == method && std::regex_match(path, pattern)) return true;
  }
  return false;
}

std::function<bool(const httplib::Request&, httplib::Response&)> ScopedTokenHook(
    std::vector<ScopedToken> tokens) {
  return [tokens = std::move(tokens)](const httplib::Request& req, httplib::Response& res) {
    // Keep the header alive: the parsed token is a view into it.
    const std::string header = req.get_header_value("Authorization");
    const std::optional<std::string_view> presented = ParseBearerHeader(header);
    if (presented) {
      for (const ScopedToken& t : tokens) {
        if (!TokensEqual(*presented, t.token().Get())) continue;
        Server::AddAccessLogField("role", t.role());
        if (t.Admits(req.method, req.path)) return true;
        ReplyError(res, Status::PermissionDenied("the " + t.role() + " token may not " +
                                                 req.method + " " + req.path));
        return false;
      }
    }
    ReplyError(res,
               Status::Unauthenticated(
                   presented ? "the bearer token is not valid"
                             : "missing bearer token: send \"Authorization: Bearer <token>\""));
    return false;
  };
}

}  // namespace sluice::http
