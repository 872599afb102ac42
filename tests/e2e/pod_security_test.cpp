// End-to-end: Pod Security admission on a cluster from `sluice up`, driven by the real kubectl.
// A namespace labelled pod-security.kubernetes.io/enforce=restricted refuses a pod that breaks
// the restricted profile with kube's 403 message and admits one that follows it; warn=restricted
// admits with kube's warning, and so does a Deployment whose pods the namespace then refuses; an
// invalid label value is refused naming the label; tightening
// enforcement warns about the pods already there.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/e2e/sluice_session.h"

namespace sluice::e2e {
namespace {

// A pod that follows the restricted profile.
constexpr char kRestrictedPod[] = R"(apiVersion: v1
kind: Pod
metadata: {name: good, namespace: secure}
spec:
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: main
      image: sluice/testpod:dev
      args: [sleep]
      securityContext:
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
)";

constexpr char kViolations[] =
    "allowPrivilegeEscalation != false (container \"bad\" must set "
    "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
    "\"bad\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or "
    "container \"bad\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or "
    "container \"bad\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
    "\"Localhost\")";

TEST(PodSecurityE2eTest, RestrictedNamespacesRefuseNonCompliantPodsWithKubesMessages) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession session;
  ASSERT_TRUE(session.Up()) << session.up().output;
  auto kubectl = [&](const std::string& args) { return session.Kubectl(args); };
  ASSERT_EQ(kubectl("create namespace secure").exit_code, 0);
  CommandResult labelled =
      kubectl("label namespace secure pod-security.kubernetes.io/enforce=restricted");
  ASSERT_EQ(labelled.exit_code, 0) << labelled.output;

  CommandResult refused = kubectl("-n secure run bad --image=sluice/testpod:dev -- sleep");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("Error from server (Forbidden): pods \"bad\" is forbidden: "
                                "violates PodSecurity \"restricted:latest\": " +
                                std::string(kViolations)),
            std::string::npos)
      << refused.output;
  EXPECT_NE(kubectl("-n secure get pod bad").exit_code, 0);
  EXPECT_EQ(session.Apply(kRestrictedPod), 0);
  EXPECT_EQ(session.JsonPath("-n secure pod good", "{.metadata.name}"), "good");

  // A Deployment is admitted with a warning; its ReplicaSet's pods are refused, and the
  // ReplicaSet says so, as in kube.
  CommandResult deployed =
      kubectl("-n secure create deployment web --image=sluice/testpod:dev -- sluice-testpod sleep");
  EXPECT_EQ(deployed.exit_code, 0) << deployed.output;
  EXPECT_NE(deployed.output.find("Warning: would violate PodSecurity \"restricted:latest\""),
            std::string::npos)
      << deployed.output;
  EXPECT_TRUE(WaitUntil([&] {
    return kubectl("-n secure get events --field-selector reason=FailedCreate")
               .output.find("violates PodSecurity") != std::string::npos;
  })) << kubectl("-n secure get events").output;

  // A level that does not exist is refused, naming the label.
  CommandResult invalid = kubectl("label namespace secure pod-security.kubernetes.io/warn=strict");
  EXPECT_NE(invalid.exit_code, 0);
  EXPECT_NE(invalid.output.find("metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "
                                "\"strict\": must be one of privileged, baseline, restricted"),
            std::string::npos)
      << invalid.output;

  // warn admits, with kube's warning; enforcing afterwards warns about the pod already there.
  ASSERT_EQ(kubectl("create namespace loose").exit_code, 0);
  ASSERT_EQ(kubectl("label namespace loose pod-security.kubernetes.io/warn=restricted").exit_code,
            0);
  CommandResult warned = kubectl("-n loose run bad --image=sluice/testpod:dev -- sleep");
  EXPECT_EQ(warned.exit_code, 0) << warned.output;
  EXPECT_NE(warned.output.find("Warning: would violate PodSecurity \"restricted:latest\": " +
                               std::string(kViolations)),
            std::string::npos)
      << warned.output;
  CommandResult tightened =
      kubectl("label namespace loose pod-security.kubernetes.io/enforce=baseline");
  EXPECT_EQ(tightened.exit_code, 0) << tightened.output;  // The pod breaks no baseline check.
  tightened =
      kubectl("label --overwrite namespace loose pod-security.kubernetes.io/enforce=restricted");
  EXPECT_EQ(tightened.exit_code, 0) << tightened.output;
  EXPECT_NE(tightened.output.find("existing pods in namespace \"loose\" violate the new "
                                  "PodSecurity enforce level \"restricted:latest\""),
            std::string::npos)
      << tightened.output;
  EXPECT_EQ(session.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
