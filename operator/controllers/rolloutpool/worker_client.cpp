#include "operator/controllers/rolloutpool/worker_client.h"

#include <memory>

#include "common/http/bearer_token.h"
#include "common/http/client.h"

namespace sluice::controllers::rolloutpool {

using nlohmann::json;

Result<json> WorkerClient::Call(const std::string& url, const WorkerCredentials& creds,
                                const std::string& method, const std::string& path,
                                const std::string& body) const {
  if (url.empty()) return Status::Unavailable("the replica has no IP yet");
  http::ClientOptions options;
  options.base_url = url;
  options.connect_timeout = timeout_;
  options.read_timeout = timeout_;
  options.max_attempts = 1;
  options.tls.ca_pem = creds.ca_pem;
  options.tls.server_name = creds.server_name;
  if (!creds.token.empty()) options.token = http::TokenSource::FromValue(creds.token);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Client> client, http::Client::Create(options));
  SLUICE_ASSIGN_OR_RETURN(http::Response reply, method == "GET"
                                                    ? client->Get(path)
                                                    : client->Post(path, body, "application/json"));
  if (reply.status / 100 != 2) return reply.ToStatus();
  if (method != "GET") return json::object();
  json parsed = json::parse(reply.body, nullptr, false);
  if (!parsed.is_object()) return Status::Internal("GET " + path + " did not return a JSON object");
  return parsed;
}

Result<json> WorkerClient::GetStatus(const std::string& url, const WorkerCredentials& creds) const {
  return Call(url, creds, "GET", "/v1/status", "");
}

Status WorkerClient::Drain(const std::string& url, const WorkerCredentials& creds) const {
  return Call(url, creds, "POST", "/v1/drain", "{}").status();
}

Status WorkerClient::SetRelay(const std::string& url, const WorkerCredentials& creds,
                              const std::string& relay) const {
  return Call(url, creds, "POST", "/v1/relay", json{{"url", relay}}.dump()).status();
}

}  // namespace sluice::controllers::rolloutpool
