#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "workers/rollout/environments/calculator_environment.h"
#include "workers/rollout/environments/environment.h"
#include "workers/rollout/environments/http_environment.h"
#include "workers/rollout/environments/python_environment.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;
using std::chrono::seconds;

TEST(ParseEnvironmentSpec, Builtin) {
  Result<EnvironmentSpec> spec = ParseEnvironmentSpec({{"builtin", "calculator"}});
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->builtin, "calculator");
  EXPECT_EQ(spec->url, "");
  EXPECT_EQ(spec->timeout, seconds(30));  // The default.

  spec = ParseEnvironmentSpec({{"builtin", "python"}, {"timeoutSeconds", 3600}});
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->builtin, "python");
  EXPECT_EQ(spec->timeout, seconds(3600));
}

TEST(ParseEnvironmentSpec, UrlAndNullFields) {
  Result<EnvironmentSpec> spec = ParseEnvironmentSpec(
      {{"url", "https://env.example:8443/v1"}, {"timeoutSeconds", 1}, {"builtin", nullptr}});
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->builtin, "");
  EXPECT_EQ(spec->url, "https://env.example:8443/v1");
  EXPECT_EQ(spec->timeout, seconds(1));
  // The operator's business (it mounts the Secret and passes --environment-token-file): accepted,
  // not read here.
  spec = ParseEnvironmentSpec(
      {{"url", "http://env:8080"}, {"tokenSecretRef", {{"name", "env-creds"}, {"key", "t"}}}});
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->url, "http://env:8080");
}

TEST(ParseEnvironmentSpec, ErrorsNameTheField) {
  struct Case {
    json input;
    std::string field;
    std::string message_part;
  };
  const Case cases[] = {
      {json(), "workflow.environment", "must be an object"},
      {json("calculator"), "workflow.environment", "must be an object"},
      {json::object(), "workflow.environment.builtin", "neither is set"},
      {{{"timeoutSeconds", 5}}, "workflow.environment.builtin", "exactly one of builtin and url"},
      {{{"builtin", "calculator"}, {"url", "http://env"}},
       "workflow.environment.url",
       "both are set"},
      {{{"builtin", "bash"}}, "workflow.environment.builtin", "expected calculator or python"},
      {{{"builtin", ""}}, "workflow.environment.builtin", "neither is set"},
      {{{"builtin", 1}}, "workflow.environment.builtin", "must be a string"},
      {{{"url", "ftp://env"}}, "workflow.environment.url", ""},
      {{{"url", "env:8080"}}, "workflow.environment.url", ""},
      {{{"url", true}}, "workflow.environment.url", "must be a string"},
      {{{"builtin", "python"}, {"timeoutSeconds", 0}},
       "workflow.environment.timeoutSeconds",
       "between 1 and 3600, got 0"},
      {{{"builtin", "python"}, {"timeoutSeconds", 3601}},
       "workflow.environment.timeoutSeconds",
       "got 3601"},
      {{{"builtin", "python"}, {"timeoutSeconds", -5}},
       "workflow.environment.timeoutSeconds",
       "got -5"},
      {{{"builtin", "python"}, {"timeoutSeconds", 18446744073709551615u}},
       "workflow.environment.timeoutSeconds",
       "got 18446744073709551615"},
      {{{"builtin", "python"}, {"timeoutSeconds", 1.5}},
       "workflow.environment.timeoutSeconds",
       "must be an integer"},
      {{{"builtin", "python"}, {"timeoutSeconds", "30"}},
       "workflow.environment.timeoutSeconds",
       "must be an integer"},
      {{{"builtin", "python"}, {"timeout", 30}}, "workflow.environment.timeout", "unknown field"},
      {{{"url", "http://env:8080"}, {"tokenSecretRef", "env-creds"}},
       "workflow.environment.tokenSecretRef",
       "must be an object, got string"},
  };
  for (const Case& c : cases) {
    Result<EnvironmentSpec> spec = ParseEnvironmentSpec(c.input);
    ASSERT_FALSE(spec.ok()) << c.input.dump();
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << c.input.dump();
    EXPECT_EQ(spec.status().field(), c.field) << c.input.dump() << ": " << spec.status().ToString();
    EXPECT_NE(spec.status().message().find(c.message_part), std::string::npos)
        << c.input.dump() << ": " << spec.status().ToString();
  }
}

EnvironmentSpec Spec(std::string builtin, std::string url, seconds timeout = seconds(30)) {
  EnvironmentSpec spec;
  spec.builtin = std::move(builtin);
  spec.url = std::move(url);
  spec.timeout = timeout;
  return spec;
}

TEST(MakeEnvironment, Calculator) {
  Result<std::unique_ptr<Environment>> environment = MakeEnvironment(Spec("calculator", ""), "");
  ASSERT_TRUE(environment.ok()) << environment.status().ToString();
  ASSERT_NE(dynamic_cast<CalculatorEnvironment*>(environment->get()), nullptr);
  Result<StepResult> step = (*environment)->Step({"calculator", "6*7"}, "", {});
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(step->observation, "42");
}

TEST(MakeEnvironment, Python) {
  Result<std::unique_ptr<Environment>> environment =
      MakeEnvironment(Spec("python", "", seconds(5)), "");
  ASSERT_TRUE(environment.ok()) << environment.status().ToString();
  EXPECT_NE(dynamic_cast<PythonEnvironment*>(environment->get()), nullptr);
}

TEST(MakeEnvironment, Url) {
  // Creating one connects to nothing; the first call would.
  Result<std::unique_ptr<Environment>> environment =
      MakeEnvironment(Spec("", "http://127.0.0.1:9/env"), "token");
  ASSERT_TRUE(environment.ok()) << environment.status().ToString();
  EXPECT_NE(dynamic_cast<HttpEnvironment*>(environment->get()), nullptr);
}

TEST(MakeEnvironment, RejectsSpecsParseEnvironmentSpecWouldReject) {
  struct Case {
    EnvironmentSpec spec;
    std::string field;
  };
  const Case cases[] = {
      {Spec("", ""), "workflow.environment.builtin"},
      {Spec("calculator", "http://env"), "workflow.environment.url"},
      {Spec("bash", ""), "workflow.environment.builtin"},
      {Spec("calculator", "", seconds(0)), "workflow.environment.timeoutSeconds"},
      {Spec("", "not a url"), "workflow.environment.url"},
  };
  for (const Case& c : cases) {
    Result<std::unique_ptr<Environment>> environment = MakeEnvironment(c.spec, "");
    ASSERT_FALSE(environment.ok()) << c.field;
    EXPECT_EQ(environment.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(environment.status().field(), c.field) << environment.status().ToString();
  }
}

}  // namespace
}  // namespace sluice::rollout
