#include "tests/e2e/testpod/stand_in_engine.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/http/server.h"
#include "common/logging/logger.h"

namespace sluice::testpod {
namespace {

using nlohmann::json;

std::string Flag(const std::map<std::string, std::string>& f, const std::string& k,
                 const std::string& d = "") {
  auto it = f.find(k);
  return it == f.end() ? d : it->second;
}

void Say(const std::string& line) { std::cout << line << std::endl; }

void Error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", {{"message", message}}}}.dump(), "application/json");
}

// One vLLM choice: the last (up to 3) prompt tokens reversed, then the stop token.
json Choice(int index, const std::vector<int32_t>& prompt, int32_t stop_token) {
  json tokens = json::array();
  json logprobs = json::array();
  for (size_t i = 0; i < 3 && i < prompt.size(); ++i) {
    tokens.push_back("token_id:" + std::to_string(prompt[prompt.size() - 1 - i]));
    logprobs.push_back(-0.5);
  }
  tokens.push_back("token_id:" + std::to_string(stop_token));
  logprobs.push_back(-0.5);
  return {{"index", index},
          {"text", ""},
          {"finish_reason", "stop"},
          {"logprobs", {{"tokens", tokens}, {"token_logprobs", logprobs}}}};
}

}  // namespace

int RunStandInEngine(const std::map<std::string, std::string>& f, const std::atomic<bool>& term) {
  http::ServerOptions options;
  options.address = Flag(f, "host", "127.0.0.1");
  options.port = std::stoi(Flag(f, "port", "8000"));
  options.access_log = false;
  options.shutdown_grace = std::chrono::milliseconds(200);
  static const log::Logger logger("testpod-engine");
  http::Server server(options, nullptr, logger);
  const std::string model = Flag(f, "model");
  const std::string served = Flag(f, "served-model-name", model);

  server.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    std::error_code ec;
    if (model.empty() || !std::filesystem::is_directory(model, ec)) {
      Error(res, 503, "model directory \"" + model + "\" is not readable");
      return;
    }
    res.set_content("", "text/plain");
  });
  server.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("prompt") || !body["prompt"].is_array()) {
      Error(res, 400, "the body must be an object with a token-id prompt");
      return;
    }
    if (body.value("model", std::string()) != served) {
      Error(res, 404, "The model `" + body.value("model", std::string()) + "` does not exist.");
      return;
    }
    const std::vector<int32_t> prompt = body["prompt"].get<std::vector<int32_t>>();
    const json stops = body.value("stop_token_ids", json::array());
    const int32_t stop = stops.empty() ? 0 : stops[0].get<int32_t>();
    const int n = body.value("n", 1);
    json choices = json::array();
    for (int i = 0; i < n; ++i) choices.push_back(Choice(i, prompt, stop));
    Say("completion n=" + std::to_string(n) + " prompt=" + std::to_string(prompt.size()) +
        " tokens");
    res.set_content(
        json{{"object", "text_completion"}, {"model", served}, {"choices", choices}}.dump(),
        "application/json");
  });
  // update_config names the version's directory, which the worker wrote on the volume both
  // containers mount: it must be there, complete, as vLLM would read it.
  server.Post("/collective_rpc", [&](const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body, nullptr, false);
    const std::string method = body.is_object() ? body.value("method", std::string()) : "";
    if (method == "update_config") {
      const json dir = body.value("/args/0/model_config/model"_json_pointer, json());
      std::error_code ec;
      if (!dir.is_string() ||
          !std::filesystem::is_regular_file(dir.get<std::string>() + "/model.safetensors", ec) ||
          !std::filesystem::is_regular_file(dir.get<std::string>() + "/config.json", ec)) {
        Error(res, 500, "update_config: no model.safetensors and config.json in " + dir.dump());
        return;
      }
      Say("reload update_config " + dir.get<std::string>());
    } else {
      Say("reload " + method);
    }
    res.set_content("{}", "application/json");
  });
  server.Post("/reset_prefix_cache", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  if (Status s = server.Start(); !s.ok()) {
    std::cerr << "engine: " << s.ToString() << std::endl;
    return 1;
  }
  Say("engine serving " + served + " from " + model + " on " + options.address + ":" +
      std::to_string(server.port()));
  while (!term) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Say("got SIGTERM");
  server.Shutdown();
  return 0;
}

}  // namespace sluice::testpod
