// ApiServer's ServiceAccount pieces: the serviceaccounts/token subresource (TokenRequest) and
// the `default` ServiceAccount a namespace gets (kube's serviceaccounts controller, run inline).
#include <optional>
#include <string>

#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/authenticator.h"
#include "localcluster/apiserver/resource_registry.h"
#include "localcluster/apiserver/service_accounts.h"
#include "localcluster/apiserver/token_request.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

}  // namespace

void ApiServer::CreateToken(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  const TokenRequestReply reply =
      ServeTokenRequest(*storage_, authenticator_->settings(), r.info.namespace_, r.info.name,
                        *body, clock_->WallNow());
  res.status = reply.code;
  res.set_content(reply.body.dump(), "application/json");
}

void ApiServer::AddDefaultServiceAccount(const std::string& namespace_) {
  std::optional<ResourceInfo> accounts = FindResource("", "v1", "serviceaccounts");
  if (!accounts) return;
  const Status s = EnsureDefaultServiceAccount(*storage_, *accounts, namespace_, clock_->WallNow());
  if (!s.ok()) {
    logger_.Warn("cannot create the default ServiceAccount",
                 {{"namespace", namespace_}, {"error", s.message()}});
  }
}

}  // namespace sluice::apiserver
