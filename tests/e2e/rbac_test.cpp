// End-to-end: RBAC on a cluster from `sluice up`, driven by the real kubectl. A ServiceAccount
// starts with no access beyond discovery; Roles, ClusterRoles and their bindings made with
// `kubectl create role|rolebinding|clusterrole|clusterrolebinding` (sent as protobuf) grant it
// verbs on resources, in one namespace or cluster-wide, down to single objects
// (resourceNames); deleting a binding revokes at once; `kubectl auth can-i --as` (impersonation
// and a SelfSubjectAccessReview) answers for it; every refusal is kube's 403 message. The admin
// identity of `sluice up` keeps full access.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace {

constexpr char kRobot[] = "system:serviceaccount:default:robot";

// The last line of `s`, trimmed: what kubectl printed last.
std::string LastLine(const std::string& s) {
  const size_t last = s.find_last_not_of(" \t\r\n");
  if (last == std::string::npos) return "";
  const size_t newline = s.rfind('\n', last);
  const size_t first = newline == std::string::npos ? 0 : newline + 1;
  return s.substr(first, last - first + 1);
}

TEST(RbacE2eTest, RolesAndBindingsFromKubectlDecideWhatAServiceAccountMayDo) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession session;
  ASSERT_TRUE(session.Up()) << session.up().output;
  auto kubectl = [&](const std::string& args) { return session.Kubectl(args); };
  ASSERT_EQ(kubectl("create serviceaccount robot").exit_code, 0);
  CommandResult issued = kubectl("create token robot");
  ASSERT_EQ(issued.exit_code, 0) << issued.output;
  const std::string token = LastLine(issued.output);
  auto as_robot = [&](const std::string& args) { return kubectl("--token=" + token + " " + args); };
  auto can_robot = [&](const std::string& args) {
    return LastLine(kubectl("auth can-i " + args + " --as=" + kRobot).output);
  };

  // Nothing is granted yet: discovery works (system:discovery), listing pods does not.
  CommandResult listed = as_robot("get pods");
  EXPECT_NE(listed.exit_code, 0);
  EXPECT_NE(listed.output.find("Error from server (Forbidden): pods is forbidden: User \"" +
                               std::string(kRobot) +
                               "\" cannot list resource \"pods\" in API group \"\" in the "
                               "namespace \"default\""),
            std::string::npos)
      << listed.output;
  EXPECT_EQ(can_robot("list pods"), "no");

  // A Role and a RoleBinding grant reading pods in this namespace.
  CommandResult role = kubectl("create role pod-reader --verb=get,list,watch --resource=pods");
  ASSERT_EQ(role.exit_code, 0) << role.output;
  CommandResult binding = kubectl(
      "create rolebinding robot-reads-pods --role=pod-reader --serviceaccount=default:robot");
  ASSERT_EQ(binding.exit_code, 0) << binding.output;
  EXPECT_EQ(session.JsonPath("rolebinding robot-reads-pods", "{.roleRef.kind}/{.roleRef.name}"),
            "Role/pod-reader");
  EXPECT_EQ(can_robot("list pods"), "yes");
  EXPECT_EQ(can_robot("delete pods"), "no");
  listed = as_robot("get pods");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  // ... and nothing else: not another verb, namespace, resource or the cluster scope.
  CommandResult deleted = as_robot("delete pod web");
  EXPECT_NE(deleted.output.find("pods \"web\" is forbidden: User \"" + std::string(kRobot) +
                                "\" cannot delete resource \"pods\" in API group \"\" in the "
                                "namespace \"default\""),
            std::string::npos)
      << deleted.output;
  CommandResult elsewhere = as_robot("get pods -n kube-system");
  EXPECT_NE(elsewhere.output.find("in the namespace \"kube-system\""), std::string::npos)
      << elsewhere.output;
  CommandResult logs = as_robot("get --raw /api/v1/namespaces/default/pods/web/log");
  EXPECT_NE(logs.output.find("pods \"web\" is forbidden: User \"" + std::string(kRobot) +
                             "\" cannot get resource \"pods/log\""),
            std::string::npos)
      << logs.output;
  CommandResult nodes = as_robot("get nodes");
  EXPECT_NE(nodes.output.find("nodes is forbidden: User \"" + std::string(kRobot) +
                              "\" cannot list resource \"nodes\" in API group \"\" at the "
                              "cluster scope"),
            std::string::npos)
      << nodes.output;

  // A ClusterRole through a ClusterRoleBinding grants a cluster-scoped resource.
  ASSERT_EQ(kubectl("create clusterrole node-reader --verb=get,list --resource=nodes").exit_code,
            0);
  ASSERT_EQ(kubectl("create clusterrolebinding robot-reads-nodes --clusterrole=node-reader "
                    "--serviceaccount=default:robot")
                .exit_code,
            0);
  nodes = as_robot("get nodes");
  EXPECT_EQ(nodes.exit_code, 0) << nodes.output;

  // resourceNames: one ConfigMap, not its neighbour.
  ASSERT_EQ(kubectl("create configmap open --from-literal=k=v").exit_code, 0);
  ASSERT_EQ(kubectl("create configmap closed --from-literal=k=v").exit_code, 0);
  ASSERT_EQ(kubectl("create role open-only --verb=get --resource=configmaps --resource-name=open")
                .exit_code,
            0);
  ASSERT_EQ(kubectl("create rolebinding robot-open --role=open-only --serviceaccount=default:robot")
                .exit_code,
            0);
  EXPECT_EQ(as_robot("get configmap open").exit_code, 0);
  CommandResult closed = as_robot("get configmap closed");
  EXPECT_NE(closed.output.find("configmaps \"closed\" is forbidden"), std::string::npos)
      << closed.output;
  EXPECT_EQ(can_robot("get configmap/open"), "yes");
  EXPECT_EQ(can_robot("get configmap/closed"), "no");

  // `kubectl auth whoami` (a SelfSubjectReview) names the robot; the bindings read well.
  CommandResult whoami = as_robot("auth whoami");
  EXPECT_EQ(whoami.exit_code, 0) << whoami.output;
  EXPECT_NE(whoami.output.find(kRobot), std::string::npos) << whoami.output;
  CommandResult table = kubectl("get rolebinding robot-open -o wide");
  EXPECT_NE(table.output.find("Role/open-only"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("default/robot"), std::string::npos) << table.output;

  // Deleting the binding revokes at once.
  ASSERT_EQ(kubectl("delete rolebinding robot-reads-pods").exit_code, 0);
  listed = as_robot("get pods");
  EXPECT_NE(listed.output.find("pods is forbidden"), std::string::npos) << listed.output;

  // The admin keeps full access, through kube's default cluster-admin binding as well.
  EXPECT_EQ(kubectl("auth can-i '*' '*'").output.find("yes"), 0u);
  EXPECT_EQ(session.JsonPath("clusterrolebinding cluster-admin", "{.subjects[0].name}"),
            "system:masters");
  EXPECT_EQ(session.JsonPath("clusterrole system:discovery",
                             "{.metadata.labels.kubernetes\\.io/bootstrapping}"),
            "rbac-defaults");
  // The robot may not impersonate anyone.
  CommandResult impersonating = as_robot("get pods --as=sluice-admin");
  EXPECT_NE(impersonating.output.find("users \"sluice-admin\" is forbidden: User \"" +
                                      std::string(kRobot) +
                                      "\" cannot impersonate resource "
                                      "\"users\" in API group \"\" at the "
                                      "cluster scope"),
            std::string::npos)
      << impersonating.output;
  EXPECT_EQ(session.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
