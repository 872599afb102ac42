#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/apiserver/json_patch.h"
#include "localcluster/apiserver/merge_patch.h"
#include "localcluster/apiserver/strategic_merge_patch.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

struct PatchCase {
  std::string name;
  std::string target;
  std::string patch;
  std::string want;
};

// ---- JSON merge patch (RFC 7386) ----

TEST(ApiserverMergePatchTest, Rfc7386AppendixExamples) {
  const std::vector<PatchCase> cases = {
      {"replace member", R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {"add member", R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {"delete member", R"({"a":"b"})", R"({"a":null})", R"({})"},
      {"delete one of two", R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {"array by string", R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {"string by array", R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {"nested merge", R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {"arrays replace", R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {"array doc", R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {"array patch", R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {"null patch", R"({"a":"foo"})", R"(null)", R"(null)"},
      {"string patch", R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {"target null kept", R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {"non-object target", R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {"nested nulls dropped", R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const PatchCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ApplyMergePatch(json::parse(c.target), json::parse(c.patch));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, json::parse(c.want)) << got->dump();
  }
}

TEST(ApiserverMergePatchTest, KubectlStyleLabelAndReplicaPatch) {
  const json obj = json::parse(R"({"metadata":{"name":"rp","labels":{"a":"1","b":"2"}},
                                   "spec":{"replicas":1,"pool":{"gpus":8}}})");
  auto got = ApplyMergePatch(
      obj, json::parse(R"({"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"replicas":3}})"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, json::parse(R"({"metadata":{"name":"rp","labels":{"b":"2","c":"3"}},
                                  "spec":{"replicas":3,"pool":{"gpus":8}}})"));
}

// ---- JSON Pointer (RFC 6901) ----

TEST(ApiserverJsonPointerTest, ParsesAndFormats) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"", {}},
      {"/", {""}},
      {"/a/0", {"a", "0"}},
      {"/a~1b", {"a/b"}},
      {"/m~0n", {"m~n"}},
      {"/~01", {"~1"}},  // ~0 is decoded after ~1: "~01" is "~1", not "/"
      {"/a//b", {"a", "", "b"}},
      {"/-", {"-"}},
  };
  for (const auto& [text, tokens] : cases) {
    SCOPED_TRACE(text);
    auto got = ParseJsonPointer(text);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, tokens);
    EXPECT_EQ(FormatJsonPointer(*got), text);
  }
  for (const std::string bad : {"a", "/a~", "/a~2"}) {
    SCOPED_TRACE(bad);
    auto got = ParseJsonPointer(bad);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  }
}

// ---- JSON patch (RFC 6902), appendix A equivalents ----

TEST(ApiserverJsonPatchTest, AppendixAEquivalents) {
  const std::vector<PatchCase> cases = {
      {"A.1 add object member", R"({"spec":{}})",
       R"([{"op":"add","path":"/spec/replicas","value":2}])", R"({"spec":{"replicas":2}})"},
      {"A.2 add array element", R"({"xs":["a","c"]})",
       R"([{"op":"add","path":"/xs/1","value":"b"}])", R"({"xs":["a","b","c"]})"},
      {"A.3 remove object member", R"({"a":1,"b":2})", R"([{"op":"remove","path":"/b"}])",
       R"({"a":1})"},
      {"A.4 remove array element", R"({"xs":["a","b","c"]})", R"([{"op":"remove","path":"/xs/1"}])",
       R"({"xs":["a","c"]})"},
      {"A.5 replace", R"({"a":1,"b":2})", R"([{"op":"replace","path":"/a","value":"x"}])",
       R"({"a":"x","b":2})"},
      {"A.6 move value", R"({"from":{"k":"v","o":1},"to":{"p":2}})",
       R"([{"op":"move","from":"/from/k","path":"/to/k"}])",
       R"({"from":{"o":1},"to":{"p":2,"k":"v"}})"},
      {"A.7 move array element", R"({"xs":[1,2,3,4]})",
       R"([{"op":"move","from":"/xs/1","path":"/xs/3"}])", R"({"xs":[1,3,4,2]})"},
      {"A.8 test success", R"({"s":"v","n":[1,"2",{"x":null}]})",
       R"([{"op":"test","path":"/s","value":"v"},
           {"op":"test","path":"/n","value":[1,"2",{"x":null}]}])",
       R"({"s":"v","n":[1,"2",{"x":null}]})"},
      {"A.10 add nested object", R"({"a":1})", R"([{"op":"add","path":"/b","value":{"c":[1]}}])",
       R"({"a":1,"b":{"c":[1]}})"},
      {"A.11 unknown members ignored", R"({"a":1})",
       R"([{"op":"add","path":"/b","value":2,"xyz":123}])", R"({"a":1,"b":2})"},
      {"A.14 escape order", R"({"/":9,"~1":10})", R"([{"op":"test","path":"/~01","value":10}])",
       R"({"/":9,"~1":10})"},
      {"A.16 add array value", R"({"xs":["a"]})",
       R"([{"op":"add","path":"/xs/-","value":["b","c"]}])", R"({"xs":["a",["b","c"]]})"},
      {"add replaces existing member", R"({"a":1})", R"([{"op":"add","path":"/a","value":2}])",
       R"({"a":2})"},
      {"add at array end index", R"({"xs":[1]})", R"([{"op":"add","path":"/xs/1","value":2}])",
       R"({"xs":[1,2]})"},
      {"add whole document", R"({"a":1})", R"([{"op":"add","path":"","value":{"b":2}}])",
       R"({"b":2})"},
      {"replace whole document", R"({"a":1})", R"([{"op":"replace","path":"","value":[1]}])",
       R"([1])"},
      {"copy", R"({"a":{"x":1},"b":{}})", R"([{"op":"copy","from":"/a/x","path":"/b/y"}])",
       R"({"a":{"x":1},"b":{"y":1}})"},
      {"copy to array end", R"({"xs":[1]})", R"([{"op":"copy","from":"/xs/0","path":"/xs/-"}])",
       R"({"xs":[1,1]})"},
      {"move onto itself", R"({"a":1})", R"([{"op":"move","from":"/a","path":"/a"}])",
       R"({"a":1})"},
      {"escaped keys", R"({"metadata":{"labels":{"app.kubernetes.io/name":"x","m~n":"y"}}})",
       R"([{"op":"replace","path":"/metadata/labels/app.kubernetes.io~1name","value":"z"},
           {"op":"remove","path":"/metadata/labels/m~0n"}])",
       R"({"metadata":{"labels":{"app.kubernetes.io/name":"z"}}})"},
      {"test numbers numerically", R"({"n":1})", R"([{"op":"test","path":"/n","value":1.0}])",
       R"({"n":1})"},
      {"sequence sees earlier ops", R"({})",
       R"([{"op":"add","path":"/a","value":[]},{"op":"add","path":"/a/-","value":1},
           {"op":"test","path":"/a/0","value":1}])",
       R"({"a":[1]})"},
  };
  for (const PatchCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ApplyJsonPatch(json::parse(c.target), json::parse(c.patch));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, json::parse(c.want)) << got->dump();
  }
}

struct ErrorCase {
  std::string name;
  std::string target;
  std::string patch;
  StatusCode code;
  std::string message;
};

// A copy into its own child doubles a document's depth per operation; an add or replace can
// hang a deep value from a deep path. Each is refused before the value is built once the result
// would nest deeper than kMaxJsonDepth, and a result within it is applied.
TEST(ApiserverJsonPatchTest, OperationsThatWouldNestTooDeepAreRefused) {
  auto nested = [](size_t levels) {
    return json::parse(std::string(levels, '[') + std::string(levels, ']'));
  };
  const json target = {{"metadata", {{"z", nested(600)}}}};  // Depth 602.
  std::string into_itself = "/metadata/z";
  for (int i = 0; i < 499; ++i) into_itself += "/0";
  Result<json> doubled = ApplyJsonPatch(
      target,
      json::array({{{"op", "copy"}, {"from", "/metadata/z"}, {"path", into_itself + "/-"}}}));
  ASSERT_FALSE(doubled.ok());
  EXPECT_EQ(doubled.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(doubled.status().message().find("would nest deeper than 1000 levels"),
            std::string::npos)
      << doubled.status().ToString();
  // Within the limit the same operation is fine: 3 tokens of path + 500 levels.
  const json shallow = {{"metadata", {{"z", nested(500)}}}};
  EXPECT_TRUE(ApplyJsonPatch(shallow, json::parse(R"([{"op": "copy", "from": "/metadata/z",
                                                       "path": "/metadata/y"}])"))
                  .ok());
  const json moved = json::array({{{"op", "move"}, {"from", "/metadata/z"}, {"path", "/a"}}});
  json deep_path = json::object();
  deep_path["metadata"] = {{"z", nested(998)}};
  EXPECT_TRUE(ApplyJsonPatch(deep_path, moved).ok());  // 1 token + 998 levels.
  std::string pointer = "/metadata/z";
  for (int i = 0; i < 990; ++i) pointer += "/0";
  Result<json> added = ApplyJsonPatch(
      deep_path, json::array({{{"op", "add"}, {"path", pointer + "/-"}, {"value", nested(20)}}}));
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.status().message().find("would nest deeper"), std::string::npos);
  Result<json> replaced = ApplyJsonPatch(
      deep_path, json::array({{{"op", "replace"}, {"path", pointer}, {"value", nested(20)}}}));
  ASSERT_FALSE(replaced.ok());
  EXPECT_NE(replaced.status().message().find("would nest deeper"), std::string::npos);
}

TEST(ApiserverJsonPatchTest, CopiesThatWouldExhaustMemoryAndHugePatchesAreRefused) {
  // Each copy of /a into itself doubles the document: 40 of them would need 2^40 times its size.
  json doubling = json::array();
  doubling.push_back(
      {{"op", "add"}, {"path", "/a"}, {"value", json::array({std::string(1000, 'x')})}});
  for (int i = 0; i < 40; ++i) {
    doubling.push_back({{"op", "copy"}, {"from", "/a"}, {"path", "/a/-"}});
  }
  const Result<json> grown = ApplyJsonPatch(json::object(), doubling);
  ASSERT_FALSE(grown.ok());
  EXPECT_EQ(grown.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(grown.status().message().find("copy operations add more than"), std::string::npos)
      << grown.status().message();
  // A few copies are fine.
  doubling.erase(doubling.begin() + 4, doubling.end());
  ASSERT_TRUE(ApplyJsonPatch(json::object(), doubling).ok());
  EXPECT_EQ(ApplyJsonPatch(json::object(), doubling)->at("a").size(),
            4u);  // One element more each.

  json many = json::array();
  for (size_t i = 0; i <= kMaxJsonPatchOperations; ++i) {
    many.push_back({{"op", "test"}, {"path", ""}, {"value", json::object()}});
  }
  const Result<json> refused = ApplyJsonPatch(json::object(), many);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  many.erase(many.begin());
  EXPECT_TRUE(ApplyJsonPatch(json::object(), many).ok());
}

TEST(ApiserverJsonPatchTest, ErrorsNameOperationAndPath) {
  const std::vector<ErrorCase> cases = {
      {"A.9 test failure", R"({"s":"v"})",
       R"([{"op":"test","path":"/s","value":"v"},{"op":"test","path":"/s","value":"w"}])",
       StatusCode::kUnprocessable,
       R"(operation 1 (test "/s"): test operation failed: value at "/s" is "v", expected "w")"},
      {"A.12 add to nonexistent target", R"({"a":1})", R"([{"op":"add","path":"/b/c","value":1}])",
       StatusCode::kUnprocessable, R"(operation 0 (add "/b/c"): unable to find key "b" in "")"},
      {"A.15 string is not a number", R"({"n":10})", R"([{"op":"test","path":"/n","value":"10"}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (test "/n"): test operation failed: value at "/n" is 10, expected "10")"},
      {"replace missing key", R"({"spec":{}})", R"([{"op":"replace","path":"/spec/x","value":1}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (replace "/spec/x"): unable to find key "x" in "/spec")"},
      {"remove missing key", R"({"spec":{}})", R"([{"op":"remove","path":"/spec/x"}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (remove "/spec/x"): unable to find key "x" in "/spec")"},
      {"remove out of bounds", R"({"xs":[1]})", R"([{"op":"remove","path":"/xs/1"}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (remove "/xs/1"): index 1 out of bounds for array of length 1 at "/xs")"},
      {"add past the end", R"({"xs":[1]})", R"([{"op":"add","path":"/xs/2","value":0}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (add "/xs/2"): index 2 out of bounds for array of length 1 at "/xs")"},
      {"leading zero index", R"({"xs":[1,2]})", R"([{"op":"replace","path":"/xs/01","value":0}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (replace "/xs/01"): invalid array index "01" in "/xs")"},
      {"dash outside add", R"({"xs":[1]})", R"([{"op":"remove","path":"/xs/-"}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (remove "/xs/-"): index "-" refers past the end of the array at "/xs")"},
      {"into a scalar", R"({"a":1})", R"([{"op":"add","path":"/a/b","value":1}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (add "/a/b"): unable to add key "b" to "/a": a number has no members)"},
      {"move into own child", R"({"a":{"b":1}})", R"([{"op":"move","from":"/a","path":"/a/c"}])",
       StatusCode::kUnprocessable,
       R"(operation 0 (move "/a/c"): unable to move "/a" into its own child "/a/c")"},
      {"move from missing", R"({"a":1})", R"([{"op":"move","from":"/x","path":"/y"}])",
       StatusCode::kUnprocessable, R"(operation 0 (move "/y"): unable to find key "x" in "")"},
      {"unknown op", R"({})", R"([{"op":"frob","path":"/a"}])", StatusCode::kInvalidArgument,
       R"(operation 0 (frob "/a"): unknown op "frob" )"
       R"((expected add, remove, replace, move, copy or test))"},
      {"missing value", R"({})", R"([{"op":"add","path":"/a"}])", StatusCode::kInvalidArgument,
       R"(operation 0 (add "/a"): missing member "value")"},
      {"missing path", R"({})", R"([{"op":"remove"}])", StatusCode::kInvalidArgument,
       R"(operation 0 (remove): missing string member "path")"},
      {"missing from", R"({})", R"([{"op":"copy","path":"/a"}])", StatusCode::kInvalidArgument,
       R"(operation 0 (copy "/a"): missing string member "from")"},
      {"bad pointer", R"({})", R"([{"op":"add","path":"a","value":1}])",
       StatusCode::kInvalidArgument,
       R"(operation 0 (add "a"): JSON pointer "a" must be empty or begin with '/')"},
      {"operation not an object", R"({})", R"([1])", StatusCode::kInvalidArgument,
       R"(operation 0: an operation must be a JSON object)"},
      {"patch not an array", R"({})", R"({"op":"add"})", StatusCode::kInvalidArgument,
       R"(a JSON patch must be a JSON array of operations, got object)"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ApplyJsonPatch(json::parse(c.target), json::parse(c.patch));
    ASSERT_FALSE(got.ok()) << got->dump();
    EXPECT_EQ(got.status().code(), c.code);
    EXPECT_EQ(got.status().message(), c.message);
  }
}

TEST(ApiserverJsonPatchTest, FailureLeavesTargetUnchanged) {
  const json original = json::parse(R"({"spec":{"replicas":1,"xs":[1,2]}})");
  json target = original;
  auto got = ApplyJsonPatch(target, json::parse(R"([
      {"op":"replace","path":"/spec/replicas","value":5},
      {"op":"remove","path":"/spec/xs/0"},
      {"op":"add","path":"/spec/new","value":true},
      {"op":"test","path":"/spec/replicas","value":1}])"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            R"(operation 3 (test "/spec/replicas"): test operation failed: value at )"
            R"("/spec/replicas" is 5, expected 1)");
  EXPECT_EQ(target, original);

  // The same patch without the failing test applies all three operations.
  auto ok = ApplyJsonPatch(target, json::parse(R"([
      {"op":"replace","path":"/spec/replicas","value":5},
      {"op":"remove","path":"/spec/xs/0"},
      {"op":"add","path":"/spec/new","value":true}])"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, json::parse(R"({"spec":{"replicas":5,"xs":[2],"new":true}})"));
  EXPECT_EQ(target, original);
}

// ---- Strategic merge patch ----

json PodJson() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "labels": {"app": "web"}, "finalizers": ["a"],
                 "ownerReferences": [{"uid": "u1", "name": "rs1", "kind": "ReplicaSet"}]},
    "spec": {
      "containers": [
        {"name": "app", "image": "app:1",
         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "ports": [{"containerPort": 80, "name": "http"}],
         "volumeMounts": [{"mountPath": "/data", "name": "data"}],
         "args": ["--x"]},
        {"name": "sidecar", "image": "side:1"}
      ],
      "volumes": [{"name": "data", "emptyDir": {}}],
      "tolerations": [{"key": "gpu", "operator": "Exists"}]
    }
  })");
}

TEST(ApiserverStrategicMergePatchTest, PodContainersMergeByName) {
  const PatchMeta meta = DefaultPatchMeta("Pod");
  struct Case {
    std::string name;
    std::string patch;
    std::string want_containers;
  };
  const std::vector<Case> cases = {
      {"change one image", R"({"spec":{"containers":[{"name":"sidecar","image":"side:2"}]}})",
       R"([{"name":"app","image":"app:1",
            "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
            "ports":[{"containerPort":80,"name":"http"}],
            "volumeMounts":[{"mountPath":"/data","name":"data"}],"args":["--x"]},
           {"name":"sidecar","image":"side:2"}])"},
      {"add a container", R"({"spec":{"containers":[{"name":"new","image":"new:1"}]}})",
       R"([{"name":"app","image":"app:1",
            "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
            "ports":[{"containerPort":80,"name":"http"}],
            "volumeMounts":[{"mountPath":"/data","name":"data"}],"args":["--x"]},
           {"name":"sidecar","image":"side:1"},{"name":"new","image":"new:1"}])"},
      {"delete a container", R"({"spec":{"containers":[{"name":"app","$patch":"delete"}]}})",
       R"([{"name":"sidecar","image":"side:1"}])"},
      {"env, ports and mounts merge by key; args replace",
       R"({"spec":{"containers":[{"name":"app",
            "env":[{"name":"B","value":"two"},{"name":"C","value":"3"},
                   {"name":"A","$patch":"delete"}],
            "ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}],
            "volumeMounts":[{"mountPath":"/cache","name":"cache"}],
            "args":["--y"]}]}})",
       R"([{"name":"app","image":"app:1",
            "env":[{"name":"B","value":"two"},{"name":"C","value":"3"}],
            "ports":[{"containerPort":80,"name":"http","protocol":"TCP"},{"containerPort":443}],
            "volumeMounts":[{"mountPath":"/data","name":"data"},
                            {"mountPath":"/cache","name":"cache"}],
            "args":["--y"]},
           {"name":"sidecar","image":"side:1"}])"},
      {"null deletes a field of one container",
       R"({"spec":{"containers":[{"name":"app","args":null,"env":null,"ports":null,
                                  "volumeMounts":null}]}})",
       R"([{"name":"app","image":"app:1"},{"name":"sidecar","image":"side:1"}])"},
      {"replace the whole list",
       R"({"spec":{"containers":[{"$patch":"replace"},{"name":"only","image":"o:1"}]}})",
       R"([{"name":"only","image":"o:1"}])"},
      {"replace one container",
       R"({"spec":{"containers":[{"name":"app","image":"app:2","$patch":"replace"}]}})",
       R"([{"name":"app","image":"app:2"},{"name":"sidecar","image":"side:1"}])"},
      {"set element order",
       R"({"spec":{"$setElementOrder/containers":[{"name":"sidecar"},{"name":"app"}],
                   "containers":[{"name":"sidecar","image":"side:3"}]}})",
       R"([{"name":"sidecar","image":"side:3"},
           {"name":"app","image":"app:1",
            "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
            "ports":[{"containerPort":80,"name":"http"}],
            "volumeMounts":[{"mountPath":"/data","name":"data"}],"args":["--x"]}])"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ApplyStrategicMergePatch(PodJson(), json::parse(c.patch), meta);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)["spec"]["containers"], json::parse(c.want_containers))
        << (*got)["spec"]["containers"].dump();
    // Everything else is untouched.
    json rest = *got;
    json want_rest = PodJson();
    rest["spec"].erase("containers");
    want_rest["spec"].erase("containers");
    EXPECT_EQ(rest, want_rest);
  }
}

TEST(ApiserverStrategicMergePatchTest, OtherPodListsAndMetadata) {
  const PatchMeta meta = DefaultPatchMeta("Pod");
  struct Case {
    std::string name;
    std::string patch;
    std::string pointer;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"volumes by name", R"({"spec":{"volumes":[{"name":"cfg","configMap":{"name":"c"}}]}})",
       "/spec/volumes",
       R"([{"name":"data","emptyDir":{}},{"name":"cfg","configMap":{"name":"c"}}])"},
      {"tolerations replace", R"({"spec":{"tolerations":[{"key":"x","operator":"Exists"}]}})",
       "/spec/tolerations", R"([{"key":"x","operator":"Exists"}])"},
      {"finalizers merge as a set", R"({"metadata":{"finalizers":["b","a"]}})",
       "/metadata/finalizers", R"(["a","b"])"},
      {"delete from primitive list",
       R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})", "/metadata/finalizers",
       R"([])"},
      {"delete then add", R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],
                                            "finalizers":["c"]}})",
       "/metadata/finalizers", R"(["c"])"},
      {"ownerReferences by uid",
       R"({"metadata":{"ownerReferences":[{"uid":"u1","controller":true},
                                          {"uid":"u2","name":"x"}]}})",
       "/metadata/ownerReferences",
       R"([{"uid":"u1","name":"rs1","kind":"ReplicaSet","controller":true},
           {"uid":"u2","name":"x"}])"},
      {"labels merge like a merge patch", R"({"metadata":{"labels":{"app":null,"tier":"fe"}}})",
       "/metadata/labels", R"({"tier":"fe"})"},
      {"delete a map", R"({"spec":{"containers":[{"name":"sidecar"}]},
                           "metadata":{"labels":{"$patch":"delete"}}})",
       "/metadata", R"({"name":"p","finalizers":["a"],
                        "ownerReferences":[{"uid":"u1","name":"rs1","kind":"ReplicaSet"}]})"},
      {"replace a map", R"({"metadata":{"labels":{"$patch":"replace","x":"y"}}})",
       "/metadata/labels", R"({"x":"y"})"},
      {"retainKeys drops other keys",
       R"({"spec":{"volumes":[{"name":"data","$retainKeys":["name","hostPath"],
                                "hostPath":{"path":"/d"}}]}})",
       "/spec/volumes", R"([{"name":"data","hostPath":{"path":"/d"}}])"},
      {"new list strips directives",
       R"({"status":{"conditions":[{"type":"Ready","status":"True"},
                                   {"type":"Gone","$patch":"delete"}]}})",
       "/status/conditions", R"([{"type":"Ready","status":"True"}])"},
      {"new map strips nulls", R"({"status":{"x":{"a":null,"b":1}}})", "/status",
       R"({"x":{"b":1}})"},
      {"type change replaces", R"({"spec":{"volumes":{"not":"a list"}}})", "/spec/volumes",
       R"({"not":"a list"})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ApplyStrategicMergePatch(PodJson(), json::parse(c.patch), meta);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->at(json::json_pointer(c.pointer)), json::parse(c.want)) << got->dump();
    EXPECT_EQ(got->dump().find('$'), std::string::npos) << got->dump();
  }
}

TEST(ApiserverStrategicMergePatchTest, ServicePortsMergeByPort) {
  const PatchMeta meta = DefaultPatchMeta("Service");
  const json svc = json::parse(R"({"kind":"Service","spec":{"selector":{"app":"web"},
      "ports":[{"port":80,"targetPort":8080,"name":"http"},{"port":443,"name":"https"}]}})");
  struct Case {
    std::string name;
    std::string patch;
    std::string want_spec;
  };
  const std::vector<Case> cases = {
      {"change a port", R"({"spec":{"ports":[{"port":80,"targetPort":9090}]}})",
       R"({"selector":{"app":"web"},"ports":[{"port":80,"targetPort":9090,"name":"http"},
                                              {"port":443,"name":"https"}]})"},
      {"add a port", R"({"spec":{"ports":[{"port":8443,"name":"alt"}]}})",
       R"({"selector":{"app":"web"},"ports":[{"port":80,"targetPort":8080,"name":"http"},
                                              {"port":443,"name":"https"},
                                              {"port":8443,"name":"alt"}]})"},
      {"delete a port", R"({"spec":{"ports":[{"port":443,"$patch":"delete"}]}})",
       R"({"selector":{"app":"web"},"ports":[{"port":80,"targetPort":8080,"name":"http"}]})"},
      {"selector is a map", R"({"spec":{"selector":{"app":null,"tier":"fe"}}})",
       R"({"selector":{"tier":"fe"},"ports":[{"port":80,"targetPort":8080,"name":"http"},
                                              {"port":443,"name":"https"}]})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ApplyStrategicMergePatch(svc, json::parse(c.patch), meta);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)["spec"], json::parse(c.want_spec)) << got->dump();
  }
  // Without the Service's meta the list is replaced, as in a merge patch.
  auto replaced = ApplyStrategicMergePatch(svc, json::parse(R"({"spec":{"ports":[{"port":81}]}})"),
                                           DefaultPatchMeta("ConfigMap"));
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ((*replaced)["spec"]["ports"], json::parse(R"([{"port":81}])"));
}

TEST(ApiserverStrategicMergePatchTest, TopLevelDirectivesAndErrors) {
  const PatchMeta meta = DefaultPatchMeta("Pod");
  auto deleted = ApplyStrategicMergePatch(PodJson(), json::parse(R"({"$patch":"delete"})"), meta);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, json::object());
  auto replaced = ApplyStrategicMergePatch(
      PodJson(), json::parse(R"({"$patch":"replace","kind":"Pod","spec":{"x":null}})"), meta);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(*replaced, json::parse(R"({"kind":"Pod","spec":{}})"));

  struct Case {
    std::string name;
    json target;
    std::string patch;
    StatusCode code;
    std::string message;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"patch not an object", PodJson(), R"([1])", StatusCode::kInvalidArgument,
       "invalid JSON document", ""},
      {"target not an object", json::array(), R"({})", StatusCode::kInvalidArgument,
       "invalid JSON document", ""},
      {"unknown $patch", PodJson(), R"({"spec":{"$patch":"frob"}})", StatusCode::kInvalidArgument,
       R"(unknown patch type: frob in map: {"$patch":"frob"})", "spec"},
      {"missing merge key", PodJson(), R"({"spec":{"containers":[{"image":"x"}]}})",
       StatusCode::kInvalidArgument,
       R"(map: {"image":"x"} does not contain declared merge key: name)", "spec.containers"},
      {"primitive in keyed list", PodJson(), R"({"spec":{"containers":["x"]}})",
       StatusCode::kInvalidArgument, R"(list items must be objects with merge key "name", got "x")",
       "spec.containers"},
      {"bad deleteFromPrimitiveList", PodJson(),
       R"({"metadata":{"$deleteFromPrimitiveList/finalizers":"a"}})", StatusCode::kInvalidArgument,
       "invalid patch format of primitive list", "metadata.finalizers"},
      {"bad setElementOrder", PodJson(), R"({"spec":{"$setElementOrder/containers":{}}})",
       StatusCode::kInvalidArgument, "invalid patch format of setElementOrder list",
       "spec.containers"},
      {"bad retainKeys", PodJson(), R"({"spec":{"$retainKeys":[1]}})", StatusCode::kInvalidArgument,
       "invalid patch format of retainKeys", "spec"},
      {"content outside retainKeys", PodJson(), R"({"spec":{"$retainKeys":["a"],"b":1}})",
       StatusCode::kUnprocessable,
       R"(patch content doesn't match retainKeys list: b is not in ["a"])", "spec"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ApplyStrategicMergePatch(c.target, json::parse(c.patch), meta);
    ASSERT_FALSE(got.ok()) << got->dump();
    EXPECT_EQ(got.status().code(), c.code);
    EXPECT_EQ(got.status().message(), c.message);
    EXPECT_EQ(got.status().field(), c.field);
  }
}

TEST(ApiserverStrategicMergePatchTest, SetElementOrderKeepsUnnamedItemsInPlace) {
  PatchMeta meta;
  meta.merge_keys["items"] = "k";
  meta.set_lists.insert("tags");
  const json target =
      json::parse(R"({"items":[{"k":1},{"k":2},{"k":3},{"k":4}],"tags":["a","b","c"]})");
  auto got =
      ApplyStrategicMergePatch(target, json::parse(R"({"$setElementOrder/items":[{"k":4},{"k":2}],
                      "$setElementOrder/tags":["c","b","a","zzz"],
                      "$setElementOrder/absent":[1]})"),
                               meta);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, json::parse(R"({"items":[{"k":1},{"k":4},{"k":3},{"k":2}],
                                  "tags":["c","b","a"]})"));
}

}  // namespace
}  // namespace sluice::apiserver

namespace sluice::apiserver {
namespace {

TEST(ApiserverStrategicMergePatchTest, WorkloadTemplatesMergeContainersByName) {
  // What `kubectl set image deployment/web main=v2` sends: the other fields of the container,
  // and the other container, stay.
  const json deployment = json::parse(R"({"kind":"Deployment","spec":{"template":{"spec":{
      "containers":[{"name":"main","image":"v1","command":["run"]},{"name":"log","image":"l"}]}}}})");
  const json patch = json::parse(
      R"({"spec":{"template":{"spec":{"containers":[{"name":"main","image":"v2"}]}}}})");
  for (const char* kind : {"Deployment", "ReplicaSet"}) {
    auto got = ApplyStrategicMergePatch(deployment, patch, DefaultPatchMeta(kind));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)["spec"]["template"]["spec"]["containers"], json::parse(R"([
        {"name":"main","image":"v2","command":["run"]},{"name":"log","image":"l"}])"))
        << kind;
  }
}

}  // namespace
}  // namespace sluice::apiserver
