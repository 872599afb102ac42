// OpenAiBackend against a scripted stand-in for vLLM and SGLang: an http::Server on a free
// loopback port that implements just enough of /v1/completions, /generate, /collective_rpc,
// /reset_prefix_cache and /update_weights_from_disk, records every request, and answers what
// each test scripts.
#include "workers/rollout/external/openai_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http/server.h"
#include "common/logging/logger.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using OnWeightSwap = engine::SamplingParams::OnWeightSwap;

constexpr char kPolicy[] = "actor";
constexpr char kModel[] = "qwen-actor";
constexpr char kApiKey[] = "sk-test";

struct Recorded {
  std::string path;
  json body;
  std::string authorization;  // The header's value; "" when absent.
};

// One vLLM completion choice with return_tokens_as_token_ids token strings.
json VllmChoice(int index, const std::vector<int>& ids, const std::vector<double>& logprobs,
                const std::string& text, const std::string& finish) {
  json tokens = json::array();
  for (int id : ids) tokens.push_back("token_id:" + std::to_string(id));
  return {{"index", index},
          {"text", text},
          {"finish_reason", finish},
          {"stop_reason", nullptr},
          {"logprobs",
           {{"tokens", tokens},
            {"token_logprobs", logprobs},
            {"text_offset", json::array()},
            {"top_logprobs", json::array()}}}};
}

json VllmReply(json choices) {
  return {{"id", "cmpl-1"},
          {"object", "text_completion"},
          {"model", kModel},
          {"choices", std::move(choices)},
          {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 2}}}};
}

// One SGLang /generate result.
json SglangOutput(const std::vector<int>& ids, const std::vector<double>& logprobs,
                  const std::string& text, const std::string& finish) {
  json entries = json::array();
  for (size_t i = 0; i < ids.size(); ++i) entries.push_back({logprobs[i], ids[i], nullptr});
  return {{"text", text},
          {"meta_info",
           {{"id", "rid"},
            {"finish_reason", {{"type", finish}}},
            {"completion_tokens", ids.size()},
            {"output_token_logprobs", entries}}}};
}

class OpenAiBackendTest : public ::testing::Test {
 protected:
  using Script = std::function<void(const json& body, httplib::Response& res)>;

  void SetUp() override {
    http::ServerOptions so;
    so.name = "fake-inference-server";
    so.access_log = false;
    so.worker_threads = 8;
    so.shutdown_grace = milliseconds(2000);
    server_ = std::make_unique<http::Server>(so, nullptr, logger_);
    for (const char* path : {"/v1/completions", "/generate", "/collective_rpc",
                             "/reset_prefix_cache", "/update_weights_from_disk", "/custom"}) {
      server_->Post(path, [this, path](const httplib::Request& req, httplib::Response& res) {
        Handle(path, req, res);
      });
    }
    // Defaults: a one-choice completion, and reloads that succeed.
    SetScript("/v1/completions", [](const json& body, httplib::Response& res) {
      json choices = json::array();
      for (int i = 0; i < body.value("n", 1); ++i) {
        choices.push_back(VllmChoice(i, {7, 8}, {-0.5, -0.25}, "ab", "length"));
      }
      res.set_content(VllmReply(choices).dump(), "application/json");
    });
    SetScript("/generate", [](const json&, httplib::Response& res) {
      res.set_content(SglangOutput({7, 8}, {-0.5, -0.25}, "ab", "length").dump(),
                      "application/json");
    });
    SetScript("/collective_rpc", [](const json&, httplib::Response& res) {
      res.set_content(R"({"results": [null]})", "application/json");
    });
    SetScript("/reset_prefix_cache", [](const json&, httplib::Response& res) { res.status = 200; });
    SetScript("/update_weights_from_disk", [](const json&, httplib::Response& res) {
      res.set_content(R"({"success": true, "message": "Succeeded to update model weights."})",
                      "application/json");
    });
    SetScript("/custom", [](const json&, httplib::Response& res) { res.status = 200; });
    ASSERT_TRUE(server_->Start().ok());
  }

  void TearDown() override {
    OpenGate();
    server_->Shutdown();
  }

  void SetScript(const std::string& path, Script script) {
    std::lock_guard<std::mutex> lock(mu_);
    scripts_[path] = std::move(script);
  }

  void Handle(const std::string& path, const httplib::Request& req, httplib::Response& res) {
    Recorded r;
    r.path = path;
    r.body = req.body.empty() ? json() : json::parse(req.body, nullptr, false);
    r.authorization = req.get_header_value("Authorization");
    Script script;
    {
      std::lock_guard<std::mutex> lock(mu_);
      recorded_.push_back(r);
      ++in_flight_;
      max_in_flight_ = std::max(max_in_flight_, in_flight_);
      script = scripts_[path];
    }
    script(r.body, res);
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
  }

  // Scripts a handler that blocks until OpenGate (or shutdown), then answers with `inner`.
  Script Gated(Script inner) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gate_closed_ = true;
    }
    return [this, inner](const json& body, httplib::Response& res) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++gate_waiting_;
        cv_.notify_all();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (gate_closed_ && !server_->shutting_down() &&
               std::chrono::steady_clock::now() < deadline) {
          cv_.wait_for(lock, milliseconds(20));
        }
      }
      inner(body, res);
    };
  }

  void OpenGate() {
    std::lock_guard<std::mutex> lock(mu_);
    gate_closed_ = false;
    cv_.notify_all();
  }

  // Waits until `count` requests are blocked at the gate.
  bool WaitAtGate(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return gate_waiting_ >= count; });
  }

  std::vector<Recorded> RecordedRequests() {
    std::lock_guard<std::mutex> lock(mu_);
    return recorded_;
  }

  OpenAiBackendOptions Options(ServerFlavour flavour) {
    OpenAiBackendOptions o;
    o.base_url = server_->BaseUrl();
    o.flavour = flavour;
    o.served_models = {{kPolicy, kModel}};
    o.api_key = kApiKey;
    o.request_timeout = milliseconds(15000);
    o.reload_timeout = milliseconds(15000);
    return o;
  }

  std::unique_ptr<OpenAiBackend> Make(OpenAiBackendOptions o) {
    Result<std::unique_ptr<OpenAiBackend>> backend = OpenAiBackend::Create(std::move(o));
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    return backend.ok() ? std::move(backend).value() : nullptr;
  }

  std::unique_ptr<OpenAiBackend> Make(ServerFlavour flavour) { return Make(Options(flavour)); }

  static GenerateRequest Request(int32_t n = 1) {
    GenerateRequest r;
    r.policy = kPolicy;
    r.prompt = {101, 102, 103};
    r.sampling.n = n;
    r.sampling.max_new_tokens = 16;
    return r;
  }

  // Generate's error when the fake server answers `reply` to a vLLM request for n samples.
  Status VllmReplyError(const json& reply, int32_t n = 1) {
    SetScript("/v1/completions", [reply](const json&, httplib::Response& res) {
      res.set_content(reply.dump(), "application/json");
    });
    auto backend = Make(ServerFlavour::kVllm);
    Result<std::vector<Completion>> r = backend->Generate(Request(n), {});
    return r.status();
  }

  Status SglangReplyError(const json& reply, int32_t n = 1) {
    SetScript("/generate", [reply](const json&, httplib::Response& res) {
      res.set_content(reply.dump(), "application/json");
    });
    auto backend = Make(ServerFlavour::kSglang);
    Result<std::vector<Completion>> r = backend->Generate(Request(n), {});
    return r.status();
  }

  log::Logger logger_{"openai-backend-test"};
  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::function<void(const json&, httplib::Response&)>> scripts_;
  std::vector<Recorded> recorded_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  bool gate_closed_ = false;
  int gate_waiting_ = 0;
};

TEST_F(OpenAiBackendTest, VllmRequestCarriesTokenPromptSamplingAndLogprobFlags) {
  auto backend = Make(ServerFlavour::kVllm);
  GenerateRequest request = Request();
  request.sampling.temperature = 0.7;
  request.sampling.top_p = 0.9;
  request.sampling.top_k = 20;
  request.sampling.seed = 1234;
  request.sampling.stop = {"</answer>", "\n\n"};
  request.sampling.stop_token_ids = {2, 151645};
  request.sampling.ignore_eos = true;
  Result<std::vector<Completion>> r = backend->Generate(request, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  std::vector<Recorded> seen = RecordedRequests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/completions");
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kApiKey);
  const json& body = seen[0].body;
  EXPECT_EQ(body["model"], kModel);
  EXPECT_EQ(body["prompt"], json({101, 102, 103}));
  EXPECT_EQ(body["n"], 1);
  EXPECT_EQ(body["max_tokens"], 16);
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(body["top_p"].get<double>(), 0.9);
  EXPECT_EQ(body["top_k"], 20);
  EXPECT_EQ(body["seed"], 1234);
  EXPECT_EQ(body["stop"], json({"</answer>", "\n\n"}));
  EXPECT_EQ(body["stop_token_ids"], json({2, 151645}));
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["logprobs"], 1);
  EXPECT_EQ(body["return_tokens_as_token_ids"], true);
  EXPECT_EQ(body["skip_special_tokens"], false);
  EXPECT_EQ(body["stream"], false);

  ASSERT_EQ(r->size(), 1u);
  const Completion& c = (*r)[0];
  EXPECT_EQ(c.tokens, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(c.logprobs, (std::vector<float>{-0.5f, -0.25f}));
  EXPECT_EQ(c.versions, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(c.text, "ab");
  EXPECT_EQ(c.finish_reason, "length");
  EXPECT_GT(c.seconds, 0.0);
}

TEST_F(OpenAiBackendTest, VllmOmitsTopKWhenOffAndSeedWhenUnsetAndAuthWithoutKey) {
  OpenAiBackendOptions o = Options(ServerFlavour::kVllm);
  o.api_key.clear();
  auto backend = Make(o);
  GenerateRequest request = Request();
  ASSERT_TRUE(backend->Generate(request, {}).ok());
  // A seed above 2^63 - 1 is folded into vLLM's signed 64-bit range.
  request.sampling.seed = (uint64_t{1} << 63) + 5;
  ASSERT_TRUE(backend->Generate(request, {}).ok());

  std::vector<Recorded> seen = RecordedRequests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_FALSE(seen[0].body.contains("top_k")) << seen[0].body.dump();
  EXPECT_FALSE(seen[0].body.contains("seed"));
  EXPECT_FALSE(seen[0].body.contains("ignore_eos"));
  EXPECT_EQ(seen[0].authorization, "");
  EXPECT_EQ(seen[1].body["seed"], 5);
}

TEST_F(OpenAiBackendTest, VllmChoicesOutOfOrderAreReturnedInSampleOrder) {
  SetScript("/v1/completions", [](const json&, httplib::Response& res) {
    json choices = {VllmChoice(2, {30}, {-3.0}, "c", "abort"),
                    VllmChoice(0, {10, 11, 2}, {-1.0, -1.5, -0.1}, "a", "stop"),
                    VllmChoice(1, {20, 21}, {-2.0, -2.5}, "b", "length"),
                    VllmChoice(3, {}, {}, "", "cancelled")};
    res.set_content(VllmReply(choices).dump(), "application/json");
  });
  auto backend = Make(ServerFlavour::kVllm);
  Result<std::vector<Completion>> r = backend->Generate(Request(4), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].tokens, (std::vector<int32_t>{10, 11, 2}));
  EXPECT_EQ((*r)[0].logprobs, (std::vector<float>{-1.0f, -1.5f, -0.1f}));
  EXPECT_EQ((*r)[0].versions.size(), 3u);
  EXPECT_EQ((*r)[0].text, "a");
  EXPECT_EQ((*r)[0].finish_reason, "stop");
  EXPECT_EQ((*r)[1].tokens, (std::vector<int32_t>{20, 21}));
  EXPECT_EQ((*r)[1].finish_reason, "length");
  EXPECT_EQ((*r)[2].tokens, (std::vector<int32_t>{30}));
  EXPECT_EQ((*r)[2].finish_reason, "abort");
  EXPECT_TRUE((*r)[3].tokens.empty());
  EXPECT_EQ((*r)[3].finish_reason, "abort");  // Unknown reasons become "abort".
  EXPECT_EQ(RecordedRequests()[0].body["n"], 4);
}

TEST_F(OpenAiBackendTest, VllmReloadCallsAndVersionTagging) {
  OpenAiBackendOptions o = Options(ServerFlavour::kVllm);
  o.initial_version = 3;
  auto backend = Make(o);
  EXPECT_EQ(backend->served_version(kPolicy), 3);
  EXPECT_EQ(backend->served_version("critic"), -1);

  Result<std::vector<Completion>> before = backend->Generate(Request(), {});
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ((*before)[0].versions, (std::vector<int64_t>{3, 3}));

  ASSERT_TRUE(backend->ReloadWeights(kPolicy, "/shared/weights/v7", 7).ok());
  EXPECT_EQ(backend->served_version(kPolicy), 7);

  std::vector<Recorded> seen = RecordedRequests();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1].path, "/collective_rpc");
  EXPECT_EQ(seen[1].body, json::parse(R"({"method": "update_config",
      "args": [{"model_config": {"model": "/shared/weights/v7"}}]})"));
  EXPECT_EQ(seen[1].authorization, std::string("Bearer ") + kApiKey);
  EXPECT_EQ(seen[2].path, "/collective_rpc");
  EXPECT_EQ(seen[2].body, json::parse(R"({"method": "reload_weights"})"));
  EXPECT_EQ(seen[3].path, "/reset_prefix_cache");

  Result<std::vector<Completion>> after = backend->Generate(Request(), {});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ((*after)[0].versions, (std::vector<int64_t>{7, 7}));
}

TEST_F(OpenAiBackendTest, VllmReloadStopsAtTheFirstFailingCall) {
  SetScript("/collective_rpc", [](const json& body, httplib::Response& res) {
    if (body.value("method", "") == "reload_weights") {
      res.status = 500;
      res.set_content(R"({"detail": "safetensors header is corrupt"})", "application/json");
      return;
    }
    res.set_content(R"({"results": [null]})", "application/json");
  });
  auto backend = Make(ServerFlavour::kVllm);
  Status s = backend->ReloadWeights(kPolicy, "/shared/weights/v1", 1);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("safetensors header is corrupt"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("reload call 2 of 3"), std::string::npos) << s.ToString();
  EXPECT_EQ(backend->served_version(kPolicy), 0);
  for (const Recorded& r : RecordedRequests()) EXPECT_NE(r.path, "/reset_prefix_cache");
}

TEST_F(OpenAiBackendTest, SglangGenerateRequestAndReply) {
  auto backend = Make(ServerFlavour::kSglang);
  GenerateRequest request = Request();
  request.sampling.temperature = 0.0;
  request.sampling.stop = {"###"};
  request.sampling.stop_token_ids = {2};
  Result<std::vector<Completion>> r = backend->Generate(request, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  std::vector<Recorded> seen = RecordedRequests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/generate");
  EXPECT_EQ(seen[0].authorization, std::string("Bearer ") + kApiKey);
  const json& body = seen[0].body;
  EXPECT_EQ(body["input_ids"], json({101, 102, 103}));
  EXPECT_EQ(body["return_logprob"], true);
  EXPECT_FALSE(body.contains("model"));
  const json& sp = body["sampling_params"];
  EXPECT_EQ(sp["max_new_tokens"], 16);
  EXPECT_EQ(sp["temperature"], 0.0);
  EXPECT_EQ(sp["top_p"], 1.0);
  EXPECT_EQ(sp["top_k"], -1);
  EXPECT_EQ(sp["stop"], json({"###"}));
  EXPECT_EQ(sp["stop_token_ids"], json({2}));
  EXPECT_EQ(sp["n"], 1);
  EXPECT_EQ(sp["skip_special_tokens"], false);

  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].tokens, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ((*r)[0].logprobs, (std::vector<float>{-0.5f, -0.25f}));
  EXPECT_EQ((*r)[0].versions, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ((*r)[0].text, "ab");
  EXPECT_EQ((*r)[0].finish_reason, "length");
}

TEST_F(OpenAiBackendTest, SglangParallelSamplesComeAsAnArray) {
  SetScript("/generate", [](const json&, httplib::Response& res) {
    json out = {SglangOutput({5, 2}, {-0.1, -0.2}, "x", "stop"),
                SglangOutput({6}, {-0.3}, "y", "length"), SglangOutput({}, {}, "", "abort")};
    res.set_content(out.dump(), "application/json");
  });
  auto backend = Make(ServerFlavour::kSglang);
  GenerateRequest request = Request(3);
  request.sampling.top_k = 50;
  Result<std::vector<Completion>> r = backend->Generate(request, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].tokens, (std::vector<int32_t>{5, 2}));
  EXPECT_EQ((*r)[0].finish_reason, "stop");
  EXPECT_EQ((*r)[1].tokens, (std::vector<int32_t>{6}));
  EXPECT_EQ((*r)[1].finish_reason, "length");
  EXPECT_EQ((*r)[2].finish_reason, "abort");
  EXPECT_EQ(RecordedRequests()[0].body["sampling_params"]["n"], 3);
  EXPECT_EQ(RecordedRequests()[0].body["sampling_params"]["top_k"], 50);
}

TEST_F(OpenAiBackendTest, SglangReloadSuccessAndFailure) {
  auto backend = Make(ServerFlavour::kSglang);
  ASSERT_TRUE(backend->ReloadWeights(kPolicy, "/shared/weights/v2", 2).ok());
  EXPECT_EQ(backend->served_version(kPolicy), 2);
  std::vector<Recorded> seen = RecordedRequests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/update_weights_from_disk");
  EXPECT_EQ(seen[0].body, json({{"model_path", "/shared/weights/v2"}}));

  // SGLang answers a failed update with 400 and success false...
  SetScript("/update_weights_from_disk", [](const json&, httplib::Response& res) {
    res.status = 400;
    res.set_content(R"({"success": false, "message": "Failed to get weights iterator: no file"})",
                    "application/json");
  });
  Status s = backend->ReloadWeights(kPolicy, "/shared/weights/v3", 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Failed to get weights iterator: no file"), std::string::npos)
      << s.ToString();
  EXPECT_EQ(backend->served_version(kPolicy), 2);

  // ...and success false is a failure whatever the HTTP status.
  SetScript("/update_weights_from_disk", [](const json&, httplib::Response& res) {
    res.set_content(R"({"success": false, "message": "model architecture differs"})",
                    "application/json");
  });
  s = backend->ReloadWeights(kPolicy, "/shared/weights/v3", 3);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model architecture differs"), std::string::npos) << s.ToString();
  EXPECT_EQ(backend->served_version(kPolicy), 2);

  Result<std::vector<Completion>> r = backend->Generate(Request(), {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].versions, (std::vector<int64_t>{2, 2}));
}

TEST_F(OpenAiBackendTest, ConfiguredReloadCallsSubstituteDirectoryAndVersion) {
  OpenAiBackendOptions o = Options(ServerFlavour::kVllm);
  o.reload_calls = {{"/custom",
                     {{"weights_path", "{directory}"},
                      {"version", "{version}"},
                      {"tag", "step-{version}"},
                      {"nested", {{"paths", {"{directory}/model.safetensors"}}}}}}};
  auto backend = Make(o);
  ASSERT_TRUE(backend->ReloadWeights(kPolicy, "/w/9", 9).ok());
  std::vector<Recorded> seen = RecordedRequests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/custom");
  EXPECT_EQ(seen[0].body, json::parse(R"({"weights_path": "/w/9", "version": 9,
      "tag": "step-9", "nested": {"paths": ["/w/9/model.safetensors"]}})"));
  EXPECT_EQ(backend->served_version(kPolicy), 9);
}

TEST_F(OpenAiBackendTest, MalformedVllmRepliesNameTheField) {
  const json good = VllmChoice(0, {1, 2}, {-1.0, -2.0}, "t", "stop");
  struct Case {
    const char* name;
    json reply;
    int32_t n;
    std::string field;
  };
  json no_logprobs = good;
  no_logprobs.erase("logprobs");
  json null_logprobs = good;
  null_logprobs["logprobs"] = nullptr;
  json short_logprobs = good;
  short_logprobs["logprobs"]["token_logprobs"] = {-1.0};
  json bad_token = good;
  bad_token["logprobs"]["tokens"][1] = "hello";
  json negative_token = good;
  negative_token["logprobs"]["tokens"][0] = "token_id:-4";
  json null_logprob = good;
  null_logprob["logprobs"]["token_logprobs"][0] = nullptr;
  json no_finish = good;
  no_finish.erase("finish_reason");
  json second = good;
  second["index"] = 1;
  json second_bad_token = second;
  second_bad_token["logprobs"]["tokens"][1] = "token_id:12x";
  const std::vector<Case> cases = {
      {"missing logprobs", VllmReply(json::array({no_logprobs})), 1, "choices[0].logprobs"},
      {"null logprobs", VllmReply(json::array({null_logprobs})), 1, "choices[0].logprobs"},
      {"lengths differ", VllmReply(json::array({short_logprobs})), 1,
       "choices[0].logprobs.token_logprobs"},
      {"text token", VllmReply(json::array({bad_token})), 1, "choices[0].logprobs.tokens[1]"},
      {"negative id", VllmReply(json::array({negative_token})), 1, "choices[0].logprobs.tokens[0]"},
      {"null logprob", VllmReply(json::array({null_logprob})), 1,
       "choices[0].logprobs.token_logprobs[0]"},
      {"no finish", VllmReply(json::array({no_finish})), 1, "choices[0].finish_reason"},
      {"second choice", VllmReply(json::array({good, second_bad_token})), 2,
       "choices[1].logprobs.tokens[1]"},
      {"too few choices", VllmReply(json::array({good})), 2, "choices"},
      {"repeated index", VllmReply(json::array({good, good})), 2, "choices[1].index"},
      {"index out of range", VllmReply(json::array({second})), 1, "choices[0].index"},
      {"no choices", json{{"id", "x"}}, 1, "choices"},
  };
  for (const Case& c : cases) {
    Status s = VllmReplyError(c.reply, c.n);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name << ": " << s.ToString();
    EXPECT_EQ(s.field(), c.field) << c.name << ": " << s.ToString();
  }
}

TEST_F(OpenAiBackendTest, MalformedSglangRepliesNameTheField) {
  const json good = SglangOutput({1, 2}, {-1.0, -2.0}, "t", "stop");
  json no_logprobs = good;
  no_logprobs["meta_info"].erase("output_token_logprobs");
  json bad_entry = good;
  bad_entry["meta_info"]["output_token_logprobs"][1] = {-1.0, "two", nullptr};
  json null_logprob = good;
  null_logprob["meta_info"]["output_token_logprobs"][0][0] = nullptr;
  json finish_string = good;
  finish_string["meta_info"]["finish_reason"] = "stop";

  Status s = SglangReplyError(no_logprobs);
  EXPECT_EQ(s.field(), "meta_info.output_token_logprobs") << s.ToString();
  s = SglangReplyError(bad_entry);
  EXPECT_EQ(s.field(), "meta_info.output_token_logprobs[1][1]") << s.ToString();
  s = SglangReplyError(null_logprob);
  EXPECT_EQ(s.field(), "meta_info.output_token_logprobs[0][0]") << s.ToString();
  s = SglangReplyError(finish_string);
  EXPECT_EQ(s.field(), "meta_info.finish_reason") << s.ToString();
  s = SglangReplyError(json::array({good, bad_entry}), 2);
  EXPECT_EQ(s.field(), "[1].meta_info.output_token_logprobs[1][1]") << s.ToString();
  s = SglangReplyError(good, 2);  // One object where two samples were asked for.
  EXPECT_EQ(s.field(), "reply") << s.ToString();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST_F(OpenAiBackendTest, ServerErrorsCarryTheServersMessage) {
  SetScript("/v1/completions", [](const json&, httplib::Response& res) {
    res.status = 500;
    res.set_content(R"({"error": {"message": "CUDA out of memory", "type": "InternalServerError",
                        "code": 500}})",
                    "application/json");
  });
  auto backend = Make(ServerFlavour::kVllm);
  Result<std::vector<Completion>> r = backend->Generate(Request(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("CUDA out of memory"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("HTTP 500"), std::string::npos);

  // vLLM's older top-level ErrorResponse.
  SetScript("/v1/completions", [](const json&, httplib::Response& res) {
    res.status = 400;
    res.set_content(R"({"object": "error", "message": "max_tokens is too large",
                        "type": "BadRequestError", "param": null, "code": 400})",
                    "application/json");
  });
  r = backend->Generate(Request(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max_tokens is too large"), std::string::npos);

  // A 2xx whose body is not JSON.
  SetScript("/v1/completions", [](const json&, httplib::Response& res) {
    res.set_content("<html>proxy</html>", "text/html");
  });
  r = backend->Generate(Request(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not valid JSON"), std::string::npos)
      << r.status().ToString();
}

TEST_F(OpenAiBackendTest, BadRequestsAreRefusedBeforeSending) {
  auto backend = Make(ServerFlavour::kVllm);
  GenerateRequest request = Request();
  request.policy = "critic";
  EXPECT_EQ(backend->Generate(request, {}).status().field(), "policy");
  request = Request();
  request.prompt.clear();
  EXPECT_EQ(backend->Generate(request, {}).status().field(), "prompt");
  request = Request();
  request.sampling.top_p = 0;
  EXPECT_EQ(backend->Generate(request, {}).status().field(), "sampling.top_p");
  EXPECT_EQ(backend->ReloadWeights("critic", "/w", 1).field(), "policy");
  EXPECT_EQ(backend->ReloadWeights(kPolicy, "", 1).field(), "directory");
  EXPECT_EQ(backend->ReloadWeights(kPolicy, "/w", -1).field(), "version");
  EXPECT_TRUE(RecordedRequests().empty());
}

TEST_F(OpenAiBackendTest, CreateValidatesOptions) {
  OpenAiBackendOptions o = Options(ServerFlavour::kVllm);
  o.served_models = {{"actor", "a"}, {"critic", "c"}};
  EXPECT_EQ(OpenAiBackend::Create(o).status().field(), "served_models");
  o.served_models.clear();
  EXPECT_EQ(OpenAiBackend::Create(o).status().field(), "served_models");
  o = Options(ServerFlavour::kVllm);
  o.served_models = {{"actor", ""}};
  EXPECT_EQ(OpenAiBackend::Create(o).status().field(), "served_models[actor]");
  o.flavour = ServerFlavour::kSglang;  // SGLang's /generate takes no model name.
  EXPECT_TRUE(OpenAiBackend::Create(o).ok());
  o = Options(ServerFlavour::kVllm);
  o.max_concurrent_requests = 0;
  EXPECT_EQ(OpenAiBackend::Create(o).status().field(), "max_concurrent_requests");
  o = Options(ServerFlavour::kVllm);
  o.reload_calls = {{"collective_rpc", nullptr}};
  EXPECT_EQ(OpenAiBackend::Create(o).status().field(), "reload_calls[0].path");
  o = Options(ServerFlavour::kVllm);
  o.base_url = "";
  EXPECT_EQ(OpenAiBackend::Create(o).status().field(), "base_url");

  EXPECT_EQ(*ParseServerFlavour("sglang"), ServerFlavour::kSglang);
  EXPECT_EQ(*ParseServerFlavour("vllm"), ServerFlavour::kVllm);
  EXPECT_EQ(ParseServerFlavour("tgi").status().field(), "flavour");
}

TEST_F(OpenAiBackendTest, CancellingASlowRequestReturnsAtOnce) {
  SetScript("/v1/completions", Gated([](const json&, httplib::Response& res) {
              res.set_content(
                  VllmReply(json::array({VllmChoice(0, {1}, {-1.0}, "x", "stop")})).dump(),
                  "application/json");
            }));
  auto backend = Make(ServerFlavour::kVllm);
  CancellationSource cancel;
  Result<std::vector<Completion>> result = Status::Internal("not run");
  std::thread caller([&] { result = backend->Generate(Request(), cancel.Token()); });
  ASSERT_TRUE(WaitAtGate(1));
  const auto start = std::chrono::steady_clock::now();
  cancel.Cancel();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled) << result.status().ToString();
}

TEST_F(OpenAiBackendTest, ConcurrentRequestsAreCappedAndWaitersCanBeCancelled) {
  SetScript("/v1/completions", Gated([](const json&, httplib::Response& res) {
              res.set_content(
                  VllmReply(json::array({VllmChoice(0, {1}, {-1.0}, "x", "stop")})).dump(),
                  "application/json");
            }));
  OpenAiBackendOptions o = Options(ServerFlavour::kVllm);
  o.max_concurrent_requests = 2;
  auto backend = Make(o);

  std::atomic<int> ok{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&] {
      if (backend->Generate(Request(), {}).ok()) ++ok;
    });
  }
  ASSERT_TRUE(WaitAtGate(2));
  // A fifth caller waits for a slot and gives up.
  CancellationSource cancel;
  Result<std::vector<Completion>> waiter = Status::Internal("not run");
  std::thread waiting([&] { waiter = backend->Generate(Request(), cancel.Token()); });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(RecordedRequests().size(), 2u);
  cancel.Cancel();
  waiting.join();
  EXPECT_EQ(waiter.status().code(), StatusCode::kCancelled);

  OpenGate();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(RecordedRequests().size(), 4u);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(max_in_flight_, 2);
}

TEST_F(OpenAiBackendTest, AbortOnWeightSwapEndsInFlightRequestsWithAbort) {
  SetScript("/v1/completions", Gated([](const json&, httplib::Response& res) {
              res.set_content(VllmReply(json::array({VllmChoice(0, {1}, {-1.0}, "x", "stop"),
                                                     VllmChoice(1, {2}, {-1.0}, "y", "stop")}))
                                  .dump(),
                              "application/json");
            }));
  auto backend = Make(ServerFlavour::kVllm);
  GenerateRequest abortable = Request(2);
  abortable.sampling.on_weight_swap = OnWeightSwap::kAbort;
  GenerateRequest continuing = Request(2);

  Result<std::vector<Completion>> aborted = Status::Internal("not run");
  Result<std::vector<Completion>> continued = Status::Internal("not run");
  std::thread a([&] { aborted = backend->Generate(abortable, {}); });
  std::thread b([&] { continued = backend->Generate(continuing, {}); });
  ASSERT_TRUE(WaitAtGate(2));
  ASSERT_TRUE(backend->ReloadWeights(kPolicy, "/shared/weights/v4", 4).ok());
  a.join();  // Aborted by the reload while the server still holds it.
  ASSERT_TRUE(aborted.ok()) << aborted.status().ToString();
  ASSERT_EQ(aborted->size(), 2u);
  for (const Completion& c : *aborted) {
    EXPECT_EQ(c.finish_reason, "abort");
    EXPECT_TRUE(c.tokens.empty());
  }
  OpenGate();
  b.join();
  ASSERT_TRUE(continued.ok()) << continued.status().ToString();
  // Tagged with the version served when it was sent.
  EXPECT_EQ((*continued)[0].versions, (std::vector<int64_t>{0}));
  EXPECT_EQ(backend->served_version(kPolicy), 4);
}

TEST_F(OpenAiBackendTest, ASilentServerFailsAfterTheRequestTimeout) {
  SetScript("/v1/completions",
            Gated([](const json&, httplib::Response& res) { res.status = 200; }));
  OpenAiBackendOptions o = Options(ServerFlavour::kVllm);
  o.request_timeout = milliseconds(300);
  auto backend = Make(o);
  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<Completion>> r = backend->Generate(Request(), {});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_EQ(RecordedRequests().size(), 1u);  // Not retried.
}

TEST_F(OpenAiBackendTest, UnreachableServerIsUnavailable) {
  OpenAiBackendOptions o = Options(ServerFlavour::kVllm);
  const int port = server_->port();
  server_->Shutdown();
  o.base_url = "http://127.0.0.1:" + std::to_string(port);
  o.connect_timeout = milliseconds(500);
  auto backend = Make(o);
  Result<std::vector<Completion>> r = backend->Generate(Request(), {});
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

}  // namespace
}  // namespace sluice::rollout
