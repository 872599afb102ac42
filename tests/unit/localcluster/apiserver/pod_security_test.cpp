// Pod Security admission (pod_security.h): each check's failures in kube's exact words and
// order, the three levels, container kinds, and the admission messages. Namespace labels,
// workloads and namespace updates are in pod_security_namespace_test.cpp.
#include "localcluster/apiserver/pod_security.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/apiserver/pod_security_checks.h"

namespace sluice::apiserver {
namespace pod_security_test {

using nlohmann::json;
using Strings = std::vector<std::string>;
constexpr PodSecurityLevel kPrivileged = PodSecurityLevel::kPrivileged;
constexpr PodSecurityLevel kBaseline = PodSecurityLevel::kBaseline;
constexpr PodSecurityLevel kRestricted = PodSecurityLevel::kRestricted;

// A container that meets restricted by itself (the pod supplies runAsNonRoot and seccomp).
json Restricted(const std::string& name) {
  return {{"name", name},
          {"image", "busybox"},
          {"securityContext",
           {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}}}};
}

json Bare(const std::string& name) { return {{"name", name}, {"image", "busybox"}}; }

// A restricted-compliant pod spec, with `patch` merged in (RFC 7386: lists are replaced).
json Spec(const json& patch = json::object()) {
  json spec = {{"securityContext",
                {{"runAsNonRoot", true}, {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
               {"containers", {Restricted("main")}}};
  spec.merge_patch(patch);
  return spec;
}

// A compliant container with `patch` merged into its securityContext.
json With(const std::string& name, const json& security_context_patch) {
  json c = Restricted(name);
  c["securityContext"].merge_patch(security_context_patch);
  return c;
}

// The compliant pod whose one container "main" has `patch` merged into its securityContext.
json MainWith(const json& security_context_patch) {
  return Spec({{"containers", {With("main", security_context_patch)}}});
}

struct Case {
  std::string name;
  json spec;
  PodSecurityLevel level;
  Strings want;
  json metadata = json::object();
};

void ExpectViolations(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PodSecurityViolations(c.metadata, c.spec, c.level), c.want);
  }
}

const std::string kApe =
    R"(allowPrivilegeEscalation != false (container "main" must set securityContext.allowPrivilegeEscalation=false))";
const std::string kDropAll =
    R"(unrestricted capabilities (container "main" must set securityContext.capabilities.drop=["ALL"]))";
const std::string kNonRoot =
    R"(runAsNonRoot != true (pod or container "main" must set securityContext.runAsNonRoot=true))";
const std::string kSeccomp =
    R"(seccompProfile (pod or container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"))";

TEST(PodSecurityTest, CompliantPodPassesEveryLevel) {
  for (PodSecurityLevel level : {kPrivileged, kBaseline, kRestricted}) {
    EXPECT_EQ(PodSecurityViolations(json::object(), Spec(), level), Strings{});
  }
  // Null and missing metadata or spec are an empty pod, which breaks nothing.
  EXPECT_EQ(PodSecurityViolations(nullptr, nullptr, kRestricted), Strings{});
}

TEST(PodSecurityTest, BarePodBreaksRestrictedOnly) {
  const json spec = {{"containers", {Bare("main")}}};
  ExpectViolations({
      {"restricted", spec, kRestricted, {kApe, kDropAll, kNonRoot, kSeccomp}},
      {"baseline", spec, kBaseline, {}},
      {"privileged", spec, kPrivileged, {}},
  });
}

TEST(PodSecurityTest, ContainerKindsAndPlurals) {
  const json all_bare = {{"initContainers", {Bare("init")}},
                         {"containers", {Bare("a"), Bare("b")}},
                         {"ephemeralContainers", {Bare("debug")}}};
  ExpectViolations({
      {"init, regular and ephemeral containers, in kube's order",
       all_bare,
       kRestricted,
       {R"(allowPrivilegeEscalation != false (containers "init", "a", "b", "debug" must set securityContext.allowPrivilegeEscalation=false))",
        R"(unrestricted capabilities (containers "init", "a", "b", "debug" must set securityContext.capabilities.drop=["ALL"]))",
        R"(runAsNonRoot != true (pod or containers "init", "a", "b", "debug" must set securityContext.runAsNonRoot=true))",
        R"(seccompProfile (pod or containers "init", "a", "b", "debug" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"))"}},
      {"an init container alone",
       Spec({{"initContainers", {Bare("setup")}}}),
       kRestricted,
       {R"(allowPrivilegeEscalation != false (container "setup" must set securityContext.allowPrivilegeEscalation=false))",
        R"(unrestricted capabilities (container "setup" must set securityContext.capabilities.drop=["ALL"]))"}},
      {"an ephemeral container alone",
       Spec({{"ephemeralContainers",
              {{{"name", "dbg"}, {"securityContext", {{"privileged", true}}}}}}}),
       kBaseline,
       {R"(privileged (container "dbg" must not set securityContext.privileged=true))"}},
  });
}

TEST(PodSecurityTest, RestrictedChecks) {
  ExpectViolations({
      {"allowPrivilegeEscalation true",
       MainWith({{"allowPrivilegeEscalation", true}}),
       kRestricted,
       {kApe}},
      {"no securityContext on the container",
       {{"securityContext", Spec()["securityContext"]}, {"containers", {Bare("main")}}},
       kRestricted,
       {kApe, kDropAll}},
      {"drop without ALL",
       MainWith({{"capabilities", {{"drop", {"NET_RAW"}}}}}),
       kRestricted,
       {kDropAll}},
      {"add beyond NET_BIND_SERVICE",
       MainWith({{"capabilities", {{"add", {"SYS_ADMIN", "NET_BIND_SERVICE", "CHOWN"}}}}}),
       kRestricted,
       {R"(unrestricted capabilities (container "main" must not include "CHOWN", "SYS_ADMIN" in securityContext.capabilities.add))"}},
      {"no drop and an add",
       Spec({{"containers",
              {{{"name", "a"},
                {"securityContext",
                 {{"allowPrivilegeEscalation", false},
                  {"capabilities", {{"add", {"NET_RAW"}}}}}}}}}}),
       kRestricted,
       {R"(unrestricted capabilities (container "a" must set securityContext.capabilities.drop=["ALL"]; container "a" must not include "NET_RAW" in securityContext.capabilities.add))"}},
      {"pod runAsNonRoot false",
       Spec({{"securityContext", {{"runAsNonRoot", false}}}}),
       kRestricted,
       {R"(runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false))"}},
      {"pod and container runAsNonRoot false",
       Spec({{"securityContext", {{"runAsNonRoot", false}}},
             {"containers", {With("main", {{"runAsNonRoot", false}})}}}),
       kRestricted,
       {R"(runAsNonRoot != true (pod and container "main" must not set securityContext.runAsNonRoot=false))"}},
      {"runAsNonRoot on the containers instead of the pod",
       Spec({{"securityContext", {{"runAsNonRoot", nullptr}}},
             {"containers", {With("main", {{"runAsNonRoot", true}}), Restricted("side")}}}),
       kRestricted,
       {R"(runAsNonRoot != true (pod or container "side" must set securityContext.runAsNonRoot=true))"}},
      {"runAsUser 0 on the pod and two containers",
       Spec({{"securityContext", {{"runAsUser", 0}}},
             {"containers", {With("a", {{"runAsUser", 0}}), With("b", {{"runAsUser", 0}})}}}),
       kRestricted,
       {R"(runAsUser=0 (pod and containers "a", "b" must not set runAsUser=0))"}},
      {"runAsUser 1000", Spec({{"securityContext", {{"runAsUser", 1000}}}}), kRestricted, {}},
      {"pod seccomp Unconfined",
       Spec({{"securityContext", {{"seccompProfile", {{"type", "Unconfined"}}}}}}),
       kRestricted,
       {R"(seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined"))"}},
      {"seccomp on one container only",
       Spec({{"securityContext", {{"seccompProfile", nullptr}}},
             {"containers",
              {With("main", {{"seccompProfile", {{"type", "Localhost"}}}}), Restricted("side")}}}),
       kRestricted,
       {R"(seccompProfile (pod or container "side" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"))"}},
      {"Windows pods need no Linux-only fields",
       {{"os", {{"name", "windows"}}}, {"containers", {Bare("main")}}},
       kRestricted,
       {kNonRoot}},
  });
}

TEST(PodSecurityTest, RestrictedVolumeTypes) {
  const json config = {{"name", "cfg"}, {"configMap", {{"name", "c"}}}};
  ExpectViolations({
      {"allowed types",
       Spec({{"volumes",
              {config,
               {{"name", "e"}, {"emptyDir", json::object()}},
               {{"name", "s"}, {"secret", {{"secretName", "s"}}}},
               {{"name", "p"}, {"projected", {{"sources", json::array()}}}},
               {{"name", "d"}, {"downwardAPI", json::object()}},
               {{"name", "pvc"}, {"persistentVolumeClaim", {{"claimName", "x"}}}},
               {{"name", "eph"}, {"ephemeral", json::object()}},
               {{"name", "c"}, {"csi", {{"driver", "d"}}}}}}}),
       kRestricted,
       {}},
      {"one hostPath",
       Spec({{"volumes", {config, {{"name", "root"}, {"hostPath", {{"path", "/"}}}}}}}),
       kRestricted,
       {R"(restricted volume types (volume "root" uses restricted volume type "hostPath"))"}},
      {"several, sorted types",
       Spec({{"volumes",
              {{{"name", "share"}, {"nfs", {{"server", "s"}, {"path", "/"}}}},
               {{"name", "root"}, {"hostPath", {{"path", "/"}}}},
               {{"name", "git"}, {"gitRepo", {{"repository", "r"}}}}}}}),
       kRestricted,
       {R"(restricted volume types (volumes "share", "root", "git" use restricted volume types "gitRepo", "hostPath", "nfs"))"}},
      {"no known source",
       Spec({{"volumes", {{{"name", "x"}, {"image", {{"reference", "r"}}}}}}}),
       kRestricted,
       {R"(restricted volume types (volume "x" uses restricted volume type "unknown"))"}},
      {"baseline: hostPath only",
       Spec({{"volumes",
              {{{"name", "root"}, {"hostPath", {{"path", "/"}}}},
               {{"name", "share"}, {"nfs", {{"server", "s"}, {"path", "/"}}}}}}}),
       kBaseline,
       {R"(hostPath volumes (volume "root"))"}},
      {"baseline: several hostPaths",
       Spec({{"volumes",
              {{{"name", "a"}, {"hostPath", {{"path", "/a"}}}},
               {{"name", "b"}, {"hostPath", {{"path", "/b"}}}}}}}),
       kBaseline,
       {R"(hostPath volumes (volumes "a", "b"))"}},
  });
}

TEST(PodSecurityTest, BaselineChecks) {
  const json privileged = MainWith({{"privileged", true}});
  ExpectViolations({
      {"host namespaces",
       Spec({{"hostNetwork", true}, {"hostPID", true}, {"hostIPC", false}}),
       kBaseline,
       {"host namespaces (hostNetwork=true, hostPID=true)"}},
      {"hostIPC", Spec({{"hostIPC", true}}), kRestricted, {"host namespaces (hostIPC=true)"}},
      {"privileged",
       privileged,
       kBaseline,
       {R"(privileged (container "main" must not set securityContext.privileged=true))"}},
      {"privileged false", MainWith({{"privileged", false}}), kBaseline, {}},
      {"non-default capabilities",
       MainWith({{"capabilities", {{"add", {"CHOWN", "SYS_ADMIN", "NET_RAW", "SYS_ADMIN"}}}}}),
       kBaseline,
       {R"(non-default capabilities (container "main" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add))"}},
      {"default capabilities",
       MainWith({{"capabilities", {{"add", {"CHOWN", "KILL"}}}}}),
       kBaseline,
       {}},
      {"host ports, sorted as text",
       Spec({{"containers",
              {{{"name", "a"}, {"ports", {{{"containerPort", 80}, {"hostPort", 9}}}}},
               {{"name", "b"},
                {"ports",
                 {{{"containerPort", 80}, {"hostPort", 10}},
                  {{"containerPort", 81}, {"hostPort", 0}}}}}}}}),
       kBaseline,
       {R"(hostPort (containers "a", "b" use hostPorts 10, 9))"}},
      {"one host port",
       Spec({{"containers", {{{"name", "a"}, {"ports", {{{"hostPort", 8080}}}}}}}}),
       kBaseline,
       {R"(hostPort (container "a" uses hostPort 8080))"}},
      {"AppArmor field",
       MainWith({{"appArmorProfile", {{"type", "Unconfined"}}}}),
       kBaseline,
       {R"(forbidden AppArmor profile (container "main" must not set AppArmor profile type to "Unconfined"))"}},
      {"AppArmor allowed", MainWith({{"appArmorProfile", {{"type", "Localhost"}}}}), kBaseline, {}},
      {"AppArmor pod field and annotation",
       Spec({{"securityContext", {{"appArmorProfile", {{"type", "Unconfined"}}}}}}),
       kBaseline,
       {R"(forbidden AppArmor profiles (pod and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/main="unconfined""))"},
       {{"annotations",
         {{"container.apparmor.security.beta.kubernetes.io/main", "unconfined"},
          {"container.apparmor.security.beta.kubernetes.io/side", "localhost/prof"},
          {"container.apparmor.security.beta.kubernetes.io/init", "runtime/default"}}}}},
      {"AppArmor annotations, sorted",
       Spec(),
       kBaseline,
       {R"(forbidden AppArmor profiles (annotations must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/="bogus"", "container.apparmor.security.beta.kubernetes.io/e="unconfined"", "container.apparmor.security.beta.kubernetes.io/f="un\"known""))"},
       {{"annotations",
         {{"container.apparmor.security.beta.kubernetes.io/f", "un\"known"},
          {"container.apparmor.security.beta.kubernetes.io/", "bogus"},
          {"container.apparmor.security.beta.kubernetes.io/a", ""},
          {"container.apparmor.security.beta.kubernetes.io/c", "localhost/"},
          {"container.apparmor.security.beta.kubernetes.io/e", "unconfined"},
          {"seccomp.security.alpha.kubernetes.io/pod", "unconfined"}}}}},
      {"SELinux",
       MainWith({{"seLinuxOptions", {{"type", "spc_t"}, {"user", "root"}, {"role", "r"}}}}),
       kBaseline,
       {R"(seLinuxOptions (container "main" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; role may not be set))"}},
      {"SELinux allowed types",
       Spec({{"securityContext", {{"seLinuxOptions", {{"type", "container_engine_t"}}}}},
             {"containers",
              {With("main", {{"seLinuxOptions", {{"type", "container_t"}, {"level", "s0"}}}})}}}),
       kBaseline,
       {}},
      {"SELinux on pod and containers",
       Spec({{"securityContext", {{"seLinuxOptions", {{"type", "a_t"}}}}},
             {"containers",
              {With("a", {{"seLinuxOptions", {{"type", "b_t"}}}}),
               With("b", {{"seLinuxOptions", {{"type", "b_t"}}}})}}}),
       kBaseline,
       {R"(seLinuxOptions (pod and containers "a", "b" set forbidden securityContext.seLinuxOptions: types "a_t", "b_t"))"}},
      {"procMount",
       MainWith({{"procMount", "Unmasked"}}),
       kRestricted,
       {R"(procMount (container "main" must not set securityContext.procMount to "Unmasked"))"}},
      {"procMount Default", MainWith({{"procMount", "Default"}}), kRestricted, {}},
      {"seccomp Unconfined on a container",
       Spec({{"securityContext", nullptr},
             {"containers", {With("main", {{"seccompProfile", {{"type", "Unconfined"}}}})}}}),
       kBaseline,
       {R"(seccompProfile (container "main" must not set securityContext.seccompProfile.type to "Unconfined"))"}},
      {"sysctls",
       Spec({{"securityContext",
              {{"sysctls",
                {{{"name", "net.core.somaxconn"}, {"value", "1"}},
                 {{"name", "net.ipv4.tcp_rmem"}, {"value", "4096 87380 6291456"}},
                 {{"name", "kernel.msgmax"}, {"value", "1"}}}}}}}),
       kBaseline,
       {"forbidden sysctls (net.core.somaxconn, kernel.msgmax)"}},
      {"Windows hostProcess",
       Spec({{"securityContext", {{"windowsOptions", {{"hostProcess", true}}}}},
             {"containers", {With("main", {{"windowsOptions", {{"hostProcess", true}}}})}}}),
       kBaseline,
       {R"(hostProcess (pod and container "main" must not set securityContext.windowsOptions.hostProcess=true))"}},
  });
}

TEST(PodSecurityTest, BaselineAllowsWhatOnlyRestrictedForbids) {
  const json spec = {{"containers",
                      {{{"name", "main"},
                        {"securityContext",
                         {{"allowPrivilegeEscalation", true},
                          {"runAsUser", 0},
                          {"capabilities", {{"add", {"CHOWN"}}}}}}}}},
                     {"volumes", {{{"name", "n"}, {"nfs", {{"server", "s"}, {"path", "/"}}}}}}};
  EXPECT_EQ(PodSecurityViolations(json::object(), spec, kBaseline), Strings{});
  EXPECT_EQ(PodSecurityViolations(json::object(), spec, kRestricted).size(), 6u);
}

TEST(PodSecurityTest, PrivilegedAllowsEverything) {
  const json spec = {{"hostNetwork", true},
                     {"containers",
                      {{{"name", "main"},
                        {"securityContext", {{"privileged", true}, {"procMount", "Unmasked"}}}}}},
                     {"volumes", {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}}}};
  EXPECT_EQ(PodSecurityViolations(json::object(), spec, kPrivileged), Strings{});
  EXPECT_EQ(
      PodSecurityViolations(json::object(), spec, kBaseline),
      (Strings{
          "host namespaces (hostNetwork=true)", R"(hostPath volumes (volume "root"))",
          R"(privileged (container "main" must not set securityContext.privileged=true))",
          R"(procMount (container "main" must not set securityContext.procMount to "Unmasked"))"}));
}

TEST(PodSecurityTest, BaselineChecksComeFirstUnderRestricted) {
  const json spec = {
      {"hostNetwork", true},
      {"containers", {{{"name", "main"}, {"securityContext", {{"privileged", true}}}}}}};
  EXPECT_EQ(
      PodSecurityViolations(json::object(), spec, kRestricted),
      (Strings{"host namespaces (hostNetwork=true)",
               R"(privileged (container "main" must not set securityContext.privileged=true))",
               kApe, kDropAll, kNonRoot, kSeccomp}));
  // The reasons and details apart, as kube's CheckResult has them.
  const std::vector<PodSecurityFailure> failures =
      EvaluatePodSecurity(json::object(), spec, kBaseline);
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0], (PodSecurityFailure{"host namespaces", "hostNetwork=true"}));
  EXPECT_EQ(failures[1].reason, "privileged");
}

TEST(PodSecurityTest, MessagesAsKubeWritesThem) {
  const Strings violations = {"host namespaces (hostNetwork=true)", kApe};
  EXPECT_EQ(
      PodSecurityForbiddenMessage("web", kRestricted, "latest", violations),
      R"(pods "web" is forbidden: violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), )" +
          kApe);
  EXPECT_EQ(PodSecurityForbiddenMessage("", kBaseline, "v1.30", {"x"}),
            R"(pods is forbidden: violates PodSecurity "baseline:v1.30": x)");
  EXPECT_EQ(
      PodSecurityWarning(kRestricted, "v1.29", violations),
      R"(would violate PodSecurity "restricted:v1.29": host namespaces (hostNetwork=true), )" +
          kApe);
  EXPECT_EQ(PodSecurityLevelName(kPrivileged), "privileged");
  EXPECT_EQ(PodSecurityLevelName(kBaseline), "baseline");
  EXPECT_EQ(PodSecurityLevelName(kRestricted), "restricted");
}

TEST(PodSecurityTest, AdmitEnforcesThenWarns) {
  const json bare = {{"metadata", {{"name", "web"}}}, {"spec", {{"containers", {Bare("main")}}}}};
  const json host = {{"metadata", {{"name", "web"}}},
                     {"spec", {{"hostPID", true}, {"containers", {Bare("main")}}}}};
  NamespacePodSecurity enforce_restricted;
  enforce_restricted.enforce = kRestricted;
  enforce_restricted.warn = kRestricted;

  PodSecurityDecision denied = AdmitPodSecurity(enforce_restricted, bare);
  EXPECT_EQ(denied.status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.status.message(),
            R"(pods "web" is forbidden: violates PodSecurity "restricted:latest": )" + kApe + ", " +
                kDropAll + ", " + kNonRoot + ", " + kSeccomp);
  EXPECT_TRUE(denied.warnings.empty());  // A rejected pod gets no warnings, as in kube.

  NamespacePodSecurity warn_restricted;
  warn_restricted.enforce = kBaseline;
  warn_restricted.warn = kRestricted;
  warn_restricted.warn_version = "v1.30";
  PodSecurityDecision warned = AdmitPodSecurity(warn_restricted, bare);
  EXPECT_TRUE(warned.status.ok());
  EXPECT_EQ(warned.warnings, Strings{R"(would violate PodSecurity "restricted:v1.30": )" + kApe +
                                     ", " + kDropAll + ", " + kNonRoot + ", " + kSeccomp});

  PodSecurityDecision baseline_denied = AdmitPodSecurity(warn_restricted, host);
  EXPECT_EQ(
      baseline_denied.status.message(),
      R"(pods "web" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true))");

  const PodSecurityDecision open = AdmitPodSecurity(NamespacePodSecurity{}, host);
  EXPECT_TRUE(open.status.ok());
  EXPECT_TRUE(open.warnings.empty());
}

TEST(PodSecurityTest, PodUpdatesAndSubresources) {
  const json pod = {{"spec", {{"containers", {Bare("main")}}}}};
  json relabelled = pod;
  relabelled["metadata"] = {{"labels", {{"a", "b"}}}};
  json new_image = pod;
  new_image["spec"]["containers"][0]["image"] = "busybox:2";
  json added = pod;
  // json::array: a one-element braced list is the element itself under clang, an array under GCC.
  added["spec"]["initContainers"] = json::array({Bare("init")});
  json debug = pod;
  debug["spec"]["ephemeralContainers"] = json::array({Bare("debug")});
  EXPECT_FALSE(PodSecurityUpdateMatters(relabelled, pod));
  EXPECT_TRUE(PodSecurityUpdateMatters(new_image, pod));
  EXPECT_TRUE(PodSecurityUpdateMatters(added, pod));
  EXPECT_TRUE(PodSecurityUpdateMatters(debug, pod));
  EXPECT_FALSE(PodSecurityUpdateMatters(debug, debug));
  EXPECT_FALSE(PodSecurityUpdateMatters(pod, debug));  // Removing one is not checked.

  for (const char* ignored :
       {"exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"}) {
    EXPECT_TRUE(PodSecurityIgnoresSubresource(ignored)) << ignored;
  }
  EXPECT_FALSE(PodSecurityIgnoresSubresource(""));
  EXPECT_FALSE(PodSecurityIgnoresSubresource("ephemeralcontainers"));
}

}  // namespace pod_security_test
}  // namespace sluice::apiserver
