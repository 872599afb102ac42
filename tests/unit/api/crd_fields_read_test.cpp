// "No CRD field that is accepted and ignored": every leaf field of the four CRDs' spec schemas
// must be read by the code that acts on the objects (workers/, the operator's controllers,
// autoscaler and placement, localcluster/), typed or as JSON (crd_field_walk.h). A field that
// is only passed through whole (copied into a Pod, handed to a plugin as JSON) is listed in
// kReadGenerically with the reason. The walk and the matching are tested on synthetic input
// first.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/crds/codegen.h"
#include "api/crds/crds.h"
#include "tests/unit/api/crd_field_walk.h"
#include "tests/unit/api/test_files.h"

namespace sluice::testing_crd_fields {
namespace {

using nlohmann::json;

// Fields read as a whole rather than member by member: each entry covers the path and everything
// below it. An entry is a decision, not a silencing: say why nothing needs to read the members.
struct AllowedField {
  std::string_view path;
  std::string_view reason;
};
constexpr AllowedField kReadGenerically[] = {
    {"RolloutPool.spec.template.env",
     "each entry is appended unexamined to the rollout container's env "
     "(operator/controllers/rolloutpool/desired_pods.cpp); value/valueFrom are Kubernetes' to "
     "resolve"},
    {"TrainerJob.spec.template.env",
     "each entry is appended unexamined to the trainer container's env "
     "(operator/controllers/trainerjob/desired_pods.cpp)"},
    {"RolloutPool.spec.template.tolerations",
     "copied verbatim into the replica Pods' spec.tolerations (rolloutpool/desired_pods.cpp); the "
     "scheduler interprets key/operator/value/effect/tolerationSeconds"},
    {"TrainerJob.spec.template.tolerations",
     "copied verbatim into the rank Pods' spec.tolerations (trainerjob/desired_pods.cpp)"},
    {"RolloutPool.spec.template.securityContext",
     "copied verbatim into the replica Pods' spec.securityContext (ApplyTemplateSecurityContexts, "
     "operator/controllers/pod_hardening.cpp), where HardenPodSpec defaults only the fields it "
     "leaves unset; the kubelet and the container runtime interpret the members"},
    {"RolloutPool.spec.template.containerSecurityContext",
     "copied verbatim into the rollout container's securityContext (ApplyTemplateSecurityContexts, "
     "pod_hardening.cpp), then defaulted field by field by HardenPodSpec"},
    {"TrainerJob.spec.template.securityContext",
     "copied verbatim into the rank Pods' spec.securityContext (ApplyTemplateSecurityContexts, "
     "pod_hardening.cpp)"},
    {"TrainerJob.spec.template.containerSecurityContext",
     "copied verbatim into the trainer container's securityContext (ApplyTemplateSecurityContexts, "
     "pod_hardening.cpp)"},
    {"Dataflow.spec.reward.options",
     "free-form options handed as a JSON object to the reward function, which defines its keys"},
    {"Dataflow.spec.buffer.filters[].options",
     "free-form options handed as a JSON object to the group filter, which defines its keys"},
};

bool Allowed(std::string_view path) {
  return std::any_of(std::begin(kReadGenerically), std::end(kReadGenerically),
                     [&](const AllowedField& a) { return PathWithin(path, a.path); });
}

std::vector<std::string> Paths(const std::vector<SchemaLeaf>& leaves) {
  std::vector<std::string> out;
  for (const SchemaLeaf& l : leaves) out.push_back(l.path);
  return out;
}

// ---- The walk and the matching, on synthetic input.

TEST(CrdFieldWalkTest, WalksObjectsListsAndMapsToTheirLeaves) {
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "chunkSizeMiB": {"type": "integer", "default": 64},
      "tokenizer": {"type": "object", "properties": {
        "type": {"type": "string"},
        "chatTemplate": {"type": "string"}}},
      "args": {"type": "array", "items": {"type": "string"}},
      "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
      "options": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
      "maxUnavailable": {"x-kubernetes-int-or-string": true},
      "tolerations": {"type": "array", "items": {"type": "object", "properties": {
        "operator": {"type": "string"},
        "tolerationSeconds": {"type": "integer"}}}},
      "regions": {"type": "object", "additionalProperties": {"type": "object", "properties": {
        "gpuType": {"type": "string"}}}},
      "empty": {"type": "object", "properties": {}}
    }})");
  const std::vector<SchemaLeaf> leaves = LeafFields(schema, "Kind.spec", "spec");
  EXPECT_EQ(
      Paths(leaves),
      (std::vector<std::string>{
          "Kind.spec.args", "Kind.spec.chunkSizeMiB", "Kind.spec.empty", "Kind.spec.maxUnavailable",
          "Kind.spec.nodeSelector", "Kind.spec.options", "Kind.spec.regions{}.gpuType",
          "Kind.spec.tokenizer.chatTemplate", "Kind.spec.tokenizer.type",
          "Kind.spec.tolerations[].operator", "Kind.spec.tolerations[].tolerationSeconds"}));
  auto find = [&](std::string_view path) {
    for (const SchemaLeaf& l : leaves) {
      if (l.path == path) return l;
    }
    return SchemaLeaf{};
  };
  EXPECT_EQ(find("Kind.spec.chunkSizeMiB").json_name, "chunkSizeMiB");
  EXPECT_EQ(find("Kind.spec.chunkSizeMiB").member, "chunk_size_mi_b");
  EXPECT_EQ(find("Kind.spec.tolerations[].operator").member, "operator_");
  EXPECT_EQ(find("Kind.spec.tolerations[].tolerationSeconds").member, "toleration_seconds");
  EXPECT_EQ(find("Kind.spec.regions{}.gpuType").json_name, "gpuType");
  EXPECT_EQ(find("Kind.spec.nodeSelector").member, "node_selector");

  // A schema without properties is its own leaf.
  EXPECT_EQ(Paths(LeafFields(json{{"type", "string"}}, "X.spec", "spec")),
            std::vector<std::string>{"X.spec"});
}

TEST(CrdFieldWalkTest, MemberNamesFollowTheCodegen) {
  EXPECT_EQ(api::CppMemberName("maxBatchTokens"), "max_batch_tokens");
  EXPECT_EQ(api::CppMemberName("chunkSizeMiB"), "chunk_size_mi_b");
  EXPECT_EQ(api::CppMemberName("fullSyncEveryVersions"), "full_sync_every_versions");
  EXPECT_EQ(api::CppMemberName("URL"), "url");
  EXPECT_EQ(api::CppMemberName("template"), "template_");
  EXPECT_EQ(api::CppMemberName("keep"), "keep");
}

TEST(CrdFieldWalkTest, StripsCommentsButNotLiterals) {
  const std::string code =
      "int a = 1; // spec.chunk_size_mi_b is read\n"
      "/* x.keep_versions\n */ int b;\n"
      "auto url = \"http://host/path\"; // gone\n"
      "auto r = R\"j({\"a\": \"/* kept */\"})j\";\n"
      "char q = '\"'; int n = 1'000; // gone\n"
      "auto s = \"esc \\\" // still a string\";\n";
  const std::string stripped = StripComments(code);
  EXPECT_EQ(stripped.find("chunk_size_mi_b"), std::string::npos) << stripped;
  EXPECT_EQ(stripped.find("keep_versions"), std::string::npos) << stripped;
  EXPECT_EQ(stripped.find("gone"), std::string::npos) << stripped;
  EXPECT_NE(stripped.find("\"http://host/path\""), std::string::npos) << stripped;
  EXPECT_NE(stripped.find("/* kept */"), std::string::npos) << stripped;
  EXPECT_NE(stripped.find("1'000;"), std::string::npos) << stripped;
  EXPECT_NE(stripped.find("// still a string"), std::string::npos) << stripped;
  EXPECT_EQ(std::count(stripped.begin(), stripped.end(), '\n'),
            std::count(code.begin(), code.end(), '\n'));
}

TEST(CrdFieldWalkTest, ReadsFieldTypedOrAsJson) {
  const SchemaLeaf chunk{"Policy.spec.weightSync.chunkSizeMiB", "chunkSizeMiB", "chunk_size_mi_b"};
  EXPECT_TRUE(ReadsField("x = sync.chunk_size_mi_b * 2;", chunk));
  EXPECT_TRUE(ReadsField("x = sync->chunk_size_mi_b;", chunk));
  EXPECT_TRUE(ReadsField("j.value(\"chunkSizeMiB\", 64)", chunk));
  EXPECT_TRUE(ReadsField("j.value(\"/spec/weightSync/chunkSizeMiB\"_json_pointer, 64)", chunk));
  EXPECT_TRUE(ReadsField("at(\"/spec/weightSync/chunkSizeMiB/x\")", chunk));
  // Not a read: a longer member, a local of the same name, a mention in another word.
  EXPECT_FALSE(ReadsField("x = sync.chunk_size_mi_bytes;", chunk));
  EXPECT_FALSE(ReadsField("int64_t chunk_size_mi_b = 4;", chunk));
  EXPECT_FALSE(ReadsField("\"the chunkSizeMiB field\"", chunk));
  EXPECT_FALSE(ReadsField("\"/spec/weightSync/chunkSizeMiBytes\"", chunk));
  // Comments are stripped before matching, so a comment never counts.
  EXPECT_FALSE(ReadsField(StripComments("// sync.chunk_size_mi_b and \"chunkSizeMiB\"\n"), chunk));
}

TEST(CrdFieldWalkTest, PathWithin) {
  EXPECT_TRUE(PathWithin("A.spec.template.env", "A.spec.template.env"));
  EXPECT_TRUE(PathWithin("A.spec.template.env[].name", "A.spec.template.env"));
  EXPECT_TRUE(PathWithin("A.spec.m{}.x", "A.spec.m"));
  EXPECT_TRUE(PathWithin("A.spec.t.x", "A.spec.t"));
  EXPECT_FALSE(PathWithin("A.spec.template.envFrom", "A.spec.template.env"));
  EXPECT_FALSE(PathWithin("A.spec", "A.spec.template"));
}

// ---- The real CRDs against the real sources.

// The sources that act on the objects, comments stripped, concatenated; generated code (the
// typed structs' own FromJson/ToJson) excluded.
std::string LoadSources() {
  namespace fs = std::filesystem;
  const fs::path root = testing_files::SourceDir();
  std::string out;
  for (const char* dir : {"workers", "operator/controllers", "operator/autoscale",
                          "operator/placement", "localcluster"}) {
    if (!fs::is_directory(root / dir)) continue;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file()) continue;
      const fs::path& p = e.path();
      const std::string ext = p.extension().string();
      if (ext != ".h" && ext != ".hpp" && ext != ".cc" && ext != ".cpp" && ext != ".cu" &&
          ext != ".cuh") {
        continue;
      }
      if (p.string().find("/generated/") != std::string::npos) continue;
      out += StripComments(testing_files::ReadFile(p));
      out += '\n';
    }
  }
  return out;
}

std::vector<SchemaLeaf> AllSpecLeaves() {
  std::vector<SchemaLeaf> out;
  for (const api::ResourceKind& kind : api::Kinds()) {
    const json& props = kind.schema.at("properties");
    if (!props.contains("spec")) continue;
    for (SchemaLeaf& l : LeafFields(props.at("spec"), kind.kind + ".spec", "spec")) {
      out.push_back(std::move(l));
    }
  }
  return out;
}

TEST(CrdFieldsReadTest, EverySpecFieldIsReadSomewhere) {
  const std::string code = LoadSources();
  ASSERT_GT(code.size(), 100000u) << "no sources found under " << testing_files::SourceDir()
                                  << " (set SLUICE_SOURCE_DIR to the repository root)";
  const std::vector<SchemaLeaf> leaves = AllSpecLeaves();
  ASSERT_GT(leaves.size(), 100u);
  std::string unread;
  for (const SchemaLeaf& leaf : leaves) {
    if (Allowed(leaf.path) || ReadsField(code, leaf)) continue;
    unread +=
        "\n  " + leaf.path + " (member ." + leaf.member + ", JSON key \"" + leaf.json_name + "\")";
  }
  EXPECT_TRUE(unread.empty())
      << "CRD fields that are accepted but read nowhere in workers/, operator/controllers/, "
         "operator/autoscale/, operator/placement/ or localcluster/. Make the code honour them, "
         "remove them from the CRD, or (only for a field passed through whole) add them to "
         "kReadGenerically with the reason:"
      << unread;
}

TEST(CrdFieldsReadTest, TheAllowListNamesRealFields) {
  // An entry whose field was renamed or removed would silently cover nothing (or a new field).
  const std::vector<SchemaLeaf> leaves = AllSpecLeaves();
  for (const AllowedField& a : kReadGenerically) {
    EXPECT_TRUE(std::any_of(leaves.begin(), leaves.end(),
                            [&](const SchemaLeaf& l) { return PathWithin(l.path, a.path); }))
        << a.path << " is in kReadGenerically but no spec field lies there";
    EXPECT_FALSE(a.reason.empty()) << a.path;
  }
}

}  // namespace
}  // namespace sluice::testing_crd_fields
