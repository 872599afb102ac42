// ApiServer's pods/log subresource: a proxy to the node agent's /containerLogs endpoint, found
// from the Node's InternalIP and kubelet port; followed logs are streamed through.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/client.h"
#include "common/http/url.h"
#include "common/process/cancellation.h"
#include "localcluster/apiserver/api_server.h"
#include "localcluster/apiserver/api_server_request.h"
#include "localcluster/apiserver/storage.h"

namespace sluice::apiserver {
namespace {

using api_server_internal::DisableCompression;
using api_server_internal::Param;
using api_server_internal::TruthyParam;
using nlohmann::json;

}  // namespace

void ApiServer::PodLog(Request& r, httplib::Response& res) {
  Result<Stored> pod = storage_->Get(r.key);
  if (!pod.ok()) {
    ReplyStatus(pod.status(), &r, res);
    return;
  }
  const json& object = pod->object;
  std::string container = Param(r.http, "container");
  std::vector<std::string> names;
  for (const json& c : object.value("/spec/containers"_json_pointer, json::array())) {
    names.push_back(c.value("name", ""));
  }
  if (container.empty()) {
    if (names.size() != 1) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : " ") + n;
      ReplyStatus(Status::InvalidArgument("a container name must be specified for pod " +
                                          r.info.name + ", choose one of: [" + list + "]"),
                  &r, res);
      return;
    }
    container = names.front();
  } else if (std::find(names.begin(), names.end(), container) == names.end()) {
    ReplyStatus(
        Status::InvalidArgument("container " + container + " is not valid for pod " + r.info.name),
        &r, res);
    return;
  }
  const std::string node_name = object.value("/spec/nodeName"_json_pointer, "");
  if (node_name.empty()) {
    ReplyStatus(Status::InvalidArgument("pod " + r.info.name + " does not have a host assigned"),
                &r, res);
    return;
  }
  Result<Stored> node = storage_->Get(ObjectKey{"core/nodes", "", node_name});
  if (!node.ok()) {
    ReplyStatus(Status::NotFound("nodes \"" + node_name + "\" not found"), &r, res);
    return;
  }
  std::string address;
  for (const json& a : node->object.value("/status/addresses"_json_pointer, json::array())) {
    if (a.value("type", "") == "InternalIP") address = a.value("address", "");
  }
  const int port =
      node->object.value("/status/daemonEndpoints/kubeletEndpoint/Port"_json_pointer, 0);
  if (address.empty() || port <= 0) {
    ReplyStatus(Status::Unavailable("node " + node_name +
                                    " publishes no kubelet endpoint (status.addresses InternalIP "
                                    "and status.daemonEndpoints.kubeletEndpoint.Port)"),
                &r, res);
    return;
  }
  std::string query;
  for (const char* p : {"follow", "tailLines", "timestamps", "sinceSeconds", "sinceTime",
                        "limitBytes", "previous"}) {
    if (r.http.has_param(p)) {
      query += (query.empty() ? "?" : "&") + std::string(p) + "=" +
               http::PercentEncode(r.http.get_param_value(p));
    }
  }
  http::ClientOptions client_options;
  client_options.base_url = "http://" + address + ":" + std::to_string(port);
  client_options.connect_timeout = options_.log_connect_timeout;
  client_options.read_timeout = std::chrono::hours(24);
  client_options.max_attempts = 1;
  Result<std::unique_ptr<http::Client>> client = http::Client::Create(client_options);
  if (!client.ok()) {
    ReplyStatus(client.status(), &r, res);
    return;
  }
  const std::string path =
      "/containerLogs/" + r.info.namespace_ + "/" + r.info.name + "/" + container + query;
  std::shared_ptr<http::Client> shared(std::move(*client));
  CancellationToken shutdown = http_->shutdown_token();
  if (!TruthyParam(r.http, "follow")) {
    Result<http::Response> reply = shared->Get(path);
    if (!reply.ok()) {
      ReplyStatus(Status::Unavailable("fetching the log from node " + node_name + ": " +
                                      reply.status().message()),
                  &r, res);
      return;
    }
    if (reply->status != 200) {
      ReplyStatus(reply->ToStatus(), &r, res);
      return;
    }
    res.set_content(reply->body, "text/plain");
    return;
  }
  DisableCompression(r.http);
  res.set_chunked_content_provider(
      "text/plain", [shared, path, shutdown](size_t, httplib::DataSink& sink) -> bool {
        http::Request request;
        request.path = path;
        request.cancel = shutdown;
        Result<http::Response> head = shared->Stream(
            std::move(request), [](const http::Response& h) { return h.status == 200; },
            [&sink](std::string_view data) {
              return sink.is_writable() && sink.write(data.data(), data.size());
            });
        if (head.ok() && head->status != 200) {
          const std::string message = "error: " + head->ToStatus().message() + "\n";
          sink.write(message.data(), message.size());
        }
        sink.done();
        return true;
      });
}

}  // namespace sluice::apiserver
