// End-to-end: ServiceAccounts and their tokens on a cluster from `sluice up`, driven by the real
// kubectl: `kubectl create serviceaccount` and `kubectl create token` (both sent as protobuf),
// requests authenticated with the token (RBAC names its user; a tampered token is refused with
// 401), the admission
// of a pod whose ServiceAccount is missing, and a pod (sluice/testpod) that reads the token,
// namespace and CA the node agent mounts at /var/run/secrets/kubernetes.io/serviceaccount.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/base64.h"
#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

constexpr char kTokenDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// The last line of `s`, trimmed: what kubectl printed last (after any warning on stderr).
std::string LastLine(const std::string& s) {
  const size_t last = s.find_last_not_of(" \t\r\n");
  if (last == std::string::npos) return "";
  const size_t newline = s.rfind('\n', last);
  const size_t first = newline == std::string::npos ? 0 : newline + 1;
  return s.substr(first, last - first + 1);
}

// The claims of a JWT (its middle part, base64url), or null.
json JwtClaims(const std::string& token) {
  const size_t first = token.find('.');
  const size_t second = token.find('.', first + 1);
  if (first == std::string::npos || second == std::string::npos) return json();
  std::string part = token.substr(first + 1, second - first - 1);
  std::replace(part.begin(), part.end(), '-', '+');
  std::replace(part.begin(), part.end(), '_', '/');
  Result<std::string> text = Base64Decode(part);
  return text.ok() ? json::parse(*text, nullptr, false) : json();
}

// The line after "== <path ending in `file`> ==" in a testpod `cat` log; "" when absent.
std::string FileLine(const std::string& log, const std::string& file) {
  const std::string marker = std::string(kTokenDir).substr(1) + "/" + file + " ==\n";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  return log.substr(start, log.find('\n', start) - start);
}

TEST(ServiceAccountE2eTest, TokensFromKubectlAndMountedInPodsAuthenticate) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession session;
  ASSERT_TRUE(session.Up()) << session.up().output;

  // Every namespace has its default ServiceAccount.
  CommandResult default_account = session.Kubectl("get serviceaccount default");
  EXPECT_EQ(default_account.exit_code, 0) << default_account.output;

  CommandResult created = session.Kubectl("create serviceaccount robot");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  CommandResult issued = session.Kubectl("create token robot --duration 15m");
  ASSERT_EQ(issued.exit_code, 0) << issued.output;
  const std::string token = LastLine(issued.output);
  const json claims = JwtClaims(token);
  ASSERT_TRUE(claims.is_object()) << token;
  EXPECT_EQ(claims.value("sub", ""), "system:serviceaccount:default:robot");
  EXPECT_EQ(claims.value("exp", int64_t{0}) - claims.value("iat", int64_t{0}), 900);

  // The token authenticates: RBAC refuses the robot by name (it has no binding; rbac_test.cpp
  // grants it some) ...
  CommandResult as_robot = session.Kubectl("--token=" + token + " get pods");
  EXPECT_NE(as_robot.output.find("User \"system:serviceaccount:default:robot\" cannot list"),
            std::string::npos)
      << as_robot.output;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return session.Log("apiserver", 1 << 24)
                   .find("\"user\":\"system:serviceaccount:default:robot\"") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << session.Log("apiserver");
  // ... and a tampered one is refused with kube's 401.
  CommandResult tampered = session.Kubectl("--token=" + token + "x get pods");
  EXPECT_NE(tampered.exit_code, 0);
  EXPECT_NE(tampered.output.find("You must be logged in to the server"), std::string::npos)
      << tampered.output;
  EXPECT_NE(tampered.output.find("Unauthorized"), std::string::npos) << tampered.output;

  // A pod needs its ServiceAccount to exist.
  const std::string ghost = session.dir() + "/ghost.yaml";
  std::ofstream(ghost) << "apiVersion: v1\nkind: Pod\nmetadata: {name: ghost}\nspec:\n"
                          "  serviceAccountName: ghost\n  containers:\n    - name: main\n"
                          "      image: sluice/testpod:dev\n      args: [sleep]\n";
  CommandResult refused = session.Kubectl("apply -f " + ghost);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("error looking up service account default/ghost: serviceaccount "
                                "\"ghost\" not found"),
            std::string::npos)
      << refused.output;

  // A pod of the default ServiceAccount finds its token, namespace and CA at kube's path.
  const std::string dir = kTokenDir;
  ASSERT_EQ(session.Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: reader}\nspec:\n"
                          "  containers:\n    - name: main\n      image: sluice/testpod:dev\n"
                          "      args: [cat, " +
                          dir + "/namespace, " + dir + "/token, " + dir + "/ca.crt]\n"),
            0);
  std::string log;
  ASSERT_TRUE(WaitUntil([&] {
    log = session.Kubectl("logs reader").output;
    return log.find("-----END CERTIFICATE-----") != std::string::npos;
  })) << log
      << session.Kubectl("describe pod reader").output;
  EXPECT_EQ(log.find("cannot read"), std::string::npos) << log;
  EXPECT_NE(log.find(session.state()), std::string::npos) << log;  // The path was remapped.
  EXPECT_EQ(FileLine(log, "namespace"), "default") << log;
  EXPECT_EQ(FileLine(log, "ca.crt"), "-----BEGIN CERTIFICATE-----") << log;
  const std::string pod_token = FileLine(log, "token");
  const json pod_claims = JwtClaims(pod_token);
  ASSERT_TRUE(pod_claims.is_object()) << log;
  EXPECT_EQ(pod_claims.value("sub", ""), "system:serviceaccount:default:default");
  EXPECT_EQ(pod_claims.value("/kubernetes.io/pod/name"_json_pointer, ""), "reader");
  EXPECT_EQ(pod_claims.value("exp", int64_t{0}) - pod_claims.value("iat", int64_t{0}), 3607);
  EXPECT_EQ(pod_claims.value("/kubernetes.io/pod/uid"_json_pointer, ""),
            session.JsonPath("pod reader", "{.metadata.uid}"));
  // The pod's token is its ServiceAccount's, with what RBAC grants that: here the view role.
  CommandResult bound = session.Kubectl(
      "create rolebinding default-view --clusterrole=view --serviceaccount=default:default");
  ASSERT_EQ(bound.exit_code, 0) << bound.output;
  CommandResult as_pod = session.Kubectl("--token=" + pod_token + " get pod reader");
  EXPECT_EQ(as_pod.exit_code, 0) << as_pod.output;
  CommandResult deleting = session.Kubectl("--token=" + pod_token + " delete pod reader");
  EXPECT_NE(deleting.output.find("User \"system:serviceaccount:default:default\" cannot delete"),
            std::string::npos)
      << deleting.output;
}

}  // namespace
}  // namespace sluice::e2e
