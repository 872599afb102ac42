// ApiServer's non-resource paths: /version, legacy and aggregated discovery (/api, /apis and
// below), and the OpenAPI v2 and v3 documents kubectl reads for `explain` and validation.
#include <cstddef>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "localcluster/apiserver/aggregated_discovery.h"
#include "localcluster/apiserver/api_errors.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/discovery.h"
#include "localcluster/apiserver/openapi_docs.h"
#include "localcluster/apiserver/request_info.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

}  // namespace

void ApiServer::HandleNonResource(const RequestInfo& info, const httplib::Request& req,
                                  httplib::Response& res) {
  const std::string& path = info.path;
  auto reply = [&res](const json& body, const std::string& content_type = "application/json") {
    res.status = 200;
    res.set_content(body.dump(), content_type);
  };
  auto not_found = [&res] {
    const json body =
        StatusJson(404, "NotFound", "the server could not find the requested resource");
    res.status = 404;
    res.set_content(body.dump(), "application/json");
  };
  if (info.verb != "get" && !(req.method == "GET")) {
    not_found();
    return;
  }
  std::shared_lock lock(registry_mu_);
  const CrdLookup crd_lookup = [this](std::string_view name) -> const json* {
    auto it = crds_.find(std::string(name));
    return it == crds_.end() ? nullptr : &it->second;
  };
  const bool aggregated = WantsAggregatedDiscovery(req.get_header_value("Accept"));
  if (path == "/version" || path == "/version/") {
    reply({{"major", "1"},
           {"minor", "32"},
           {"gitVersion", options_.version},
           {"gitCommit", "sluice"},
           {"gitTreeState", "clean"},
           {"buildDate", "2026-01-01T00:00:00Z"},
           {"goVersion", "n/a"},
           {"compiler", "g++"},
           {"platform", "linux/amd64"}});
  } else if (path == "/api" || path == "/api/") {
    if (aggregated) {
      reply(AggregatedDiscovery(registry_, true), std::string(kAggregatedDiscoveryContentType));
    } else {
      reply(CoreApiVersions(req.local_addr + ":" + std::to_string(req.local_port)));
    }
  } else if (path == "/apis" || path == "/apis/") {
    if (aggregated) {
      reply(AggregatedDiscovery(registry_, false), std::string(kAggregatedDiscoveryContentType));
    } else {
      reply(ApiGroupList(registry_));
    }
  } else if (path == "/api/v1" || path == "/api/v1/") {
    std::optional<json> doc = ApiResourceList(registry_, "", "v1");
    doc ? reply(*doc) : not_found();
  } else if (path.rfind("/apis/", 0) == 0) {
    std::string rest = path.substr(6);
    if (!rest.empty() && rest.back() == '/') rest.pop_back();
    const size_t slash = rest.find('/');
    std::optional<json> doc =
        slash == std::string::npos
            ? ApiGroup(registry_, rest)
            : ApiResourceList(registry_, rest.substr(0, slash), rest.substr(slash + 1));
    doc ? reply(*doc) : not_found();
  } else if (path == "/openapi/v2" || path == "/swagger.json") {
    // kubectl asks for v2 as protobuf only; 406 makes it move on cleanly.
    const std::string accept = req.get_header_value("Accept");
    if (!accept.empty() && accept.find("application/json") == std::string::npos &&
        accept.find("*/*") == std::string::npos) {
      const json body =
          StatusJson(406, "NotAcceptable", "only application/json is served for /openapi/v2");
      res.status = 406;
      res.set_content(body.dump(), "application/json");
      return;
    }
    reply(OpenApiV2(registry_, crd_lookup));
  } else if (path == "/openapi/v3" || path == "/openapi/v3/") {
    reply(OpenApiV3Root(registry_, crd_lookup));
  } else if (path.rfind("/openapi/v3/", 0) == 0) {
    const std::string rest = path.substr(12);  // "api/v1" or "apis/<group>/<version>".
    std::string group, version;
    if (rest == "api/v1") {
      version = "v1";
    } else if (rest.rfind("apis/", 0) == 0 && rest.find('/', 5) != std::string::npos) {
      group = rest.substr(5, rest.find('/', 5) - 5);
      version = rest.substr(rest.find('/', 5) + 1);
    }
    std::optional<json> doc = version.empty()
                                  ? std::nullopt
                                  : OpenApiV3GroupVersion(registry_, crd_lookup, group, version);
    if (!doc) {
      not_found();
      return;
    }
    // kubectl caches these documents and revalidates them with If-None-Match.
    const std::string etag = "\"" + OpenApiHash(*doc) + "\"";
    res.set_header("ETag", etag);
    if (req.get_header_value("If-None-Match") == etag) {
      res.status = 304;
      return;
    }
    reply(*doc);
  } else {
    not_found();
  }
}

}  // namespace sluice::apiserver
