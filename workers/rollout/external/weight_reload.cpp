#include "workers/rollout/external/weight_reload.h"

#include "common/json/json_depth.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

constexpr std::string_view kDirectory = "{directory}";
constexpr std::string_view kVersion = "{version}";

void ReplaceAll(std::string& text, std::string_view from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::vector<ReloadCall> DefaultReloadCalls(ServerFlavour flavour) {
  const std::string directory(kDirectory);
  if (flavour == ServerFlavour::kSglang) {
    json body = json::object();
    body["model_path"] = directory;
    return {{"/update_weights_from_disk", std::move(body)}};
  }
  json update_config = json::object();
  update_config["method"] = "update_config";
  update_config["args"] = json::array();
  update_config["args"].push_back(json::object());
  update_config["args"][0]["model_config"]["model"] = directory;
  json reload = json::object();
  reload["method"] = "reload_weights";
  return {
      {"/collective_rpc", std::move(update_config)},
      {"/collective_rpc", std::move(reload)},
      {"/reset_prefix_cache", nullptr},
  };
}

json ExpandReloadBody(const json& body, const std::string& directory, int64_t version) {
  if (body.is_string()) {
    std::string text = body.get<std::string>();
    if (text == kVersion) return version;
    ReplaceAll(text, kDirectory, directory);
    ReplaceAll(text, kVersion, std::to_string(version));
    return text;
  }
  if (body.is_array()) {
    json out = json::array();
    for (const json& item : body) out.push_back(ExpandReloadBody(item, directory, version));
    return out;
  }
  if (body.is_object()) {
    json out = json::object();
    for (auto it = body.begin(); it != body.end(); ++it) {
      out[it.key()] = ExpandReloadBody(it.value(), directory, version);
    }
    return out;
  }
  return body;
}

Status CheckReloadReply(int http_status, std::string_view body, std::string_view what) {
  if (http_status < 200 || http_status >= 300) return ServerErrorStatus(http_status, body, what);
  // Too deep to parse safely reads as no JSON at all (json_depth.h).
  const json value =
      FirstTooDeepJson(body) ? json() : json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_object()) {
    auto success = value.find("success");
    if (success != value.end() && success->is_boolean() && !success->get<bool>()) {
      auto m = value.find("message");
      std::string message = m == value.end() ? "no message"
                            : m->is_string() ? m->get<std::string>()
                                             : m->dump();
      return Status::Internal(std::string(what) + ": the server reports failure: " + message);
    }
  }
  return Status::Ok();
}

}  // namespace sluice::rollout
