// ApiServer's access reviews (`kubectl auth can-i`, `kubectl auth whoami`): answered from the
// RBAC policy, not stored.
#include <utility>

#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/rbac_authorizer.h"
#include "localcluster/apiserver/request_authorization.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

}  // namespace

void ApiServer::CreateReview(Request& r, httplib::Response& res) {
  Result<json> body = r.Body();
  if (!body.ok()) {
    ReplyStatus(body.status(), &r, res);
    return;
  }
  Result<RbacPolicy> policy = ReadRbacPolicy(*storage_);
  if (!policy.ok()) {
    ReplyStatus(policy.status(), &r, res);
    return;
  }
  Result<json> answer =
      AnswerReview(r.resource.plural, std::move(*body), r.user, r.info.namespace_, *policy);
  if (!answer.ok() && answer.status().code() == StatusCode::kUnprocessable) {
    const json invalid = InvalidStatusJson(r.QualifiedKind(), "", r.resource.group, r.resource.kind,
                                           {{answer.status().field(), answer.status().message()}});
    res.status = 422;
    res.set_content(invalid.dump(), "application/json");
    return;
  }
  if (!answer.ok()) {
    ReplyStatus(answer.status(), &r, res);
    return;
  }
  (*answer)["apiVersion"] = r.resource.ApiVersion();
  (*answer)["kind"] = r.resource.kind;
  res.status = 201;
  res.set_content(answer->dump(), "application/json");
}

}  // namespace sluice::apiserver
