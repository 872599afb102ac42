// An informer over several namespaces (the operator's --namespace=a,b) against the real local API
// server: it lists and watches exactly those namespaces into one store, and objects elsewhere
// never reach it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/dynamic_client.h"
#include "kube/informer.h"
#include "tests/support/in_process_api_server.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
constexpr char kToken[] = "multi-namespace-token";

json ConfigMap(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"data", {{"k", "v"}}}};
}

class MultiNamespaceInformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test_support::InProcessApiServerOptions options;
    options.token = kToken;
    Result<std::unique_ptr<test_support::InProcessApiServer>> server =
        test_support::InProcessApiServer::Create(options);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    dynamic_ = &server_->dynamic();
    for (const char* ns : {"team-a", "team-b", "team-c"}) {
      json n = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
      ASSERT_TRUE(dynamic_->Resource({"", "v1", "namespaces", false}).Create(n).ok()) << ns;
    }
  }
  void TearDown() override {
    stop_.Cancel();
    if (thread_.joinable()) thread_.join();
    informer_.reset();
    server_.reset();
  }

  kube::ResourceClient ConfigMaps(const std::string& ns) {
    return dynamic_->Resource({"", "v1", "configmaps", true}, ns);
  }
  void Create(const std::string& ns, const std::string& name) {
    ASSERT_TRUE(ConfigMaps(ns).Create(ConfigMap(ns, name)).ok()) << ns << "/" << name;
  }
  // Waits (bounded) until the store's keys are `want`.
  std::set<std::string> WaitForKeys(const std::set<std::string>& want) {
    std::set<std::string> keys;
    for (int i = 0; i < 500; ++i) {
      const std::vector<std::string> list = informer_->store().ListKeys();
      keys = std::set<std::string>(list.begin(), list.end());
      if (keys == want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return keys;
  }

  std::unique_ptr<test_support::InProcessApiServer> server_;
  kube::DynamicClient* dynamic_ = nullptr;  // server_'s
  std::unique_ptr<kube::Informer> informer_;
  CancellationSource stop_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> events_;  // Guarded by mu_.
};

TEST_F(MultiNamespaceInformerTest, WatchesExactlyTheNamedNamespaces) {
  Create("team-a", "one");
  Create("team-b", "two");
  Create("team-c", "elsewhere");
  informer_ = std::make_unique<kube::Informer>(
      std::vector<kube::ResourceClient>{ConfigMaps("team-a"), ConfigMaps("team-b")});
  informer_->AddEventHandler({[this](const kube::ObjectPtr& o) {
                                std::lock_guard<std::mutex> lock(mu_);
                                events_.push_back("add " + kube::ObjectKey(*o));
                              },
                              nullptr,
                              [this](const kube::ObjectPtr& o) {
                                std::lock_guard<std::mutex> lock(mu_);
                                events_.push_back("delete " + kube::ObjectKey(*o));
                              }});
  thread_ = std::thread([this] { informer_->Run(stop_.Token()); });
  ASSERT_TRUE(informer_->WaitForSync(stop_.Token()));
  // Synced means both namespaces were listed.
  const std::vector<std::string> listed = informer_->store().ListKeys();
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()),
            (std::set<std::string>{"team-a/one", "team-b/two"}));

  // Watches: writes in team-b and team-a arrive, team-c's never do.
  Create("team-c", "still-elsewhere");
  Create("team-b", "three");
  ASSERT_TRUE(ConfigMaps("team-a").Delete("one").ok());
  EXPECT_EQ(WaitForKeys({"team-b/two", "team-b/three"}),
            (std::set<std::string>{"team-b/two", "team-b/three"}));
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(std::set<std::string>(events_.begin(), events_.end()),
            (std::set<std::string>{"add team-a/one", "add team-b/two", "add team-b/three",
                                   "delete team-a/one"}));
}

}  // namespace
}  // namespace sluice::apiserver
