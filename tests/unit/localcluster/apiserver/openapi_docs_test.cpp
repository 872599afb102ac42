// OpenAPI v3 and v2 documents: the shapes kubectl explain and kubectl's field-validation check
// read, checked against the repository's real CRDs.
#include "localcluster/apiserver/openapi_docs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/yaml/yaml_json.h"
#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

json LoadCrd(const char* file) {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  std::ifstream in((dir ? std::filesystem::path(dir) : std::filesystem::current_path()) / "crds" /
                   file);
  std::ostringstream text;
  text << in.rdbuf();
  return yaml::ParseDocuments(text.str()).value().at(0);
}

// A registry with the built-ins and the four Sluice CRDs, and the lookup the server would pass.
struct Cluster {
  Cluster() : registry(ResourceRegistry::WithBuiltins()) {
    for (const char* file :
         {"rolloutpools.yaml", "policies.yaml", "dataflows.yaml", "trainerjobs.yaml"}) {
      json crd = LoadCrd(file);
      const std::string name = crd["metadata"]["name"];
      EXPECT_TRUE(registry.AddCrd(crd).ok()) << file;
      crds[name] = std::move(crd);
    }
  }
  CrdLookup Lookup() {
    return [this](std::string_view name) -> const json* {
      auto it = crds.find(std::string(name));
      return it == crds.end() ? nullptr : &it->second;
    };
  }
  ResourceRegistry registry;
  std::map<std::string, json> crds;
};

json Gvk(const char* group, const char* version, const char* kind) {
  return {{"group", group}, {"version", version}, {"kind", kind}};
}

bool HasParam(const json& op, const std::string& name) {
  for (const json& p : op.value("parameters", json::array())) {
    if (p.value("name", "") == name) return true;
  }
  return false;
}

// Every "$ref" in node, collected.
void CollectRefs(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "$ref") out.push_back(value.get<std::string>());
      CollectRefs(value, out);
    }
  } else if (node.is_array()) {
    for (const json& item : node) CollectRefs(item, out);
  }
}

bool HasKey(const json& node, const std::string& key) {
  if (node.is_object()) {
    for (const auto& [k, value] : node.items()) {
      if (k == key || HasKey(value, key)) return true;
    }
  } else if (node.is_array()) {
    for (const json& item : node) {
      if (HasKey(item, key)) return true;
    }
  }
  return false;
}

// Follows a "#/components/schemas/X" reference (directly or as a lone allOf) to its schema.
const json& Resolve(const json& doc, const json& schema) {
  const json* s = &schema;
  if (s->contains("allOf") && (*s)["allOf"].size() == 1) s = &(*s)["allOf"][0];
  if (s->contains("$ref")) {
    const std::string ref = (*s)["$ref"];
    return doc["components"]["schemas"][ref.substr(std::string("#/components/schemas/").size())];
  }
  return *s;
}

// kubectl explain's lookup, as its template does it: the GVK from the operations at the
// resource's four possible paths, then the schema whose GVK list contains it, then the fields.
json Explain(const json& doc, const std::string& gv_path, const std::string& plural,
             const std::vector<std::string>& fields) {
  json gvk;
  for (const std::string& path : {gv_path + "/" + plural, gv_path + "/" + plural + "/{name}",
                                  gv_path + "/namespaces/{namespace}/" + plural,
                                  gv_path + "/namespaces/{namespace}/" + plural + "/{name}"}) {
    if (!doc["paths"].contains(path)) continue;
    for (const char* method : {"get", "post", "put", "patch", "delete"}) {
      if (doc["paths"][path].contains(method) && gvk.is_null()) {
        gvk = doc["paths"][path][method].value("x-kubernetes-group-version-kind", json());
      }
    }
  }
  if (gvk.is_null()) return json();
  for (const auto& [name, schema] : doc["components"]["schemas"].items()) {
    bool match = false;
    for (const json& g : schema.value("x-kubernetes-group-version-kind", json::array())) {
      match = match || g == gvk;
    }
    if (!match) continue;
    const json* s = &schema;
    for (const std::string& field : fields) {
      const json& resolved = Resolve(doc, *s);
      if (!resolved.contains("properties") || !resolved["properties"].contains(field)) {
        return json();
      }
      s = &resolved["properties"][field];
    }
    return Resolve(doc, *s);
  }
  return json();
}

TEST(OpenApiDocsTest, SchemaNamesFollowKube) {
  EXPECT_EQ(OpenApiSchemaName("sluice.dev", "v1alpha1", "RolloutPool"),
            "dev.sluice.v1alpha1.RolloutPool");
  EXPECT_EQ(OpenApiSchemaName("ml.example.com", "v1", "Job"), "com.example.ml.v1.Job");
  EXPECT_EQ(OpenApiSchemaName("", "v1", "Pod"), "io.k8s.api.core.v1.Pod");
  EXPECT_EQ(OpenApiSchemaName("coordination.k8s.io", "v1", "Lease"),
            "io.k8s.api.coordination.v1.Lease");
  EXPECT_EQ(OpenApiSchemaName("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition");
}

TEST(OpenApiDocsTest, CrdGroupVersionHasOperationsKubectlChecks) {
  Cluster c;
  const std::optional<json> doc =
      OpenApiV3GroupVersion(c.registry, c.Lookup(), "sluice.dev", "v1alpha1");
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ((*doc)["openapi"], "3.0.0");
  const json& paths = (*doc)["paths"];
  const std::string base = "/apis/sluice.dev/v1alpha1";
  ASSERT_TRUE(paths.contains(base + "/rolloutpools"));  // List across namespaces.
  ASSERT_TRUE(paths.contains(base + "/namespaces/{namespace}/rolloutpools"));
  ASSERT_TRUE(paths.contains(base + "/namespaces/{namespace}/rolloutpools/{name}"));
  ASSERT_TRUE(paths.contains(base + "/namespaces/{namespace}/rolloutpools/{name}/status"));
  ASSERT_TRUE(paths.contains(base + "/namespaces/{namespace}/rolloutpools/{name}/scale"));
  EXPECT_FALSE(paths.contains(base + "/rolloutpools/{name}"));  // Namespaced only.

  const json gvk = Gvk("sluice.dev", "v1alpha1", "RolloutPool");
  const json& item = paths[base + "/namespaces/{namespace}/rolloutpools/{name}"];
  const json& collection = paths[base + "/namespaces/{namespace}/rolloutpools"];
  for (const auto& [op, action] : std::map<std::string, std::string>{
           {"get", "get"}, {"put", "put"}, {"patch", "patch"}, {"delete", "delete"}}) {
    ASSERT_TRUE(item.contains(op)) << op;
    EXPECT_EQ(item[op]["x-kubernetes-group-version-kind"], gvk) << op;
    EXPECT_EQ(item[op]["x-kubernetes-action"], action) << op;
  }
  EXPECT_EQ(collection["get"]["x-kubernetes-action"], "list");
  EXPECT_EQ(collection["post"]["x-kubernetes-action"], "post");
  EXPECT_EQ(collection["delete"]["x-kubernetes-action"], "deletecollection");
  // kubectl sends fieldValidation=Strict only when the PATCH operation lists the parameter.
  EXPECT_TRUE(HasParam(item["patch"], "fieldValidation"));
  EXPECT_TRUE(HasParam(item["put"], "fieldValidation"));
  EXPECT_TRUE(HasParam(collection["post"], "fieldValidation"));
  EXPECT_FALSE(HasParam(item["get"], "fieldValidation"));
  EXPECT_TRUE(HasParam(collection["get"], "labelSelector"));
  EXPECT_TRUE(item["patch"]["requestBody"]["content"].contains("application/merge-patch+json"));
  // Custom resources take no strategic merge patch.
  EXPECT_FALSE(
      item["patch"]["requestBody"]["content"].contains("application/strategic-merge-patch+json"));
  EXPECT_EQ(paths[base + "/namespaces/{namespace}/rolloutpools/{name}/scale"]["patch"]
                 ["x-kubernetes-group-version-kind"],
            Gvk("autoscaling", "v1", "Scale"));

  const json& schemas = (*doc)["components"]["schemas"];
  ASSERT_TRUE(schemas.contains("dev.sluice.v1alpha1.RolloutPool"));
  const json& pool = schemas["dev.sluice.v1alpha1.RolloutPool"];
  EXPECT_EQ(pool["x-kubernetes-group-version-kind"], json::array({gvk}));
  EXPECT_EQ(pool["properties"]["apiVersion"]["type"], "string");
  EXPECT_EQ(pool["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  // The CRD's own schema is there, descriptions and all.
  const json& crd_schema =
      c.crds["rolloutpools.sluice.dev"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  EXPECT_EQ(pool["description"], crd_schema["description"]);
  EXPECT_EQ(pool["properties"]["spec"], crd_schema["properties"]["spec"]);
  EXPECT_TRUE(pool["properties"]["spec"]["properties"].contains("policies"));
  EXPECT_EQ(
      schemas["dev.sluice.v1alpha1.RolloutPoolList"]["x-kubernetes-group-version-kind"][0]["kind"],
      "RolloutPoolList");
  EXPECT_TRUE(schemas.contains("io.k8s.api.autoscaling.v1.Scale"));

  // Every reference resolves inside the document.
  std::vector<std::string> refs;
  CollectRefs(*doc, refs);
  EXPECT_FALSE(refs.empty());
  for (const std::string& ref : refs) {
    ASSERT_EQ(ref.rfind("#/components/schemas/", 0), 0u) << ref;
    EXPECT_TRUE(schemas.contains(ref.substr(21))) << ref;
  }
}

TEST(OpenApiDocsTest, ExplainFindsCrdFieldsAndMetadata) {
  Cluster c;
  const json doc = OpenApiV3GroupVersion(c.registry, c.Lookup(), "sluice.dev", "v1alpha1").value();
  const std::string base = "/apis/sluice.dev/v1alpha1";
  const json spec = Explain(doc, base, "rolloutpools", {"spec"});
  ASSERT_TRUE(spec.is_object());
  EXPECT_TRUE(spec["properties"].contains("replicas"));
  const json placement = Explain(doc, base, "rolloutpools", {"spec", "placement"});
  ASSERT_TRUE(placement.is_object());
  EXPECT_TRUE(placement["properties"].contains("regions"));
  const json metadata = Explain(doc, base, "rolloutpools", {"metadata"});
  ASSERT_TRUE(metadata.is_object());
  EXPECT_TRUE(metadata["properties"].contains("labels"));
  EXPECT_TRUE(metadata["properties"].contains("ownerReferences"));
  EXPECT_TRUE(Explain(doc, base, "rolloutpools", {"spec", "noSuchField"}).is_null());
  EXPECT_TRUE(Explain(doc, base, "trainerjobs", {"spec"}).is_object());
}

TEST(OpenApiDocsTest, BuiltinGroupVersions) {
  Cluster c;
  const json core = OpenApiV3GroupVersion(c.registry, c.Lookup(), "", "v1").value();
  const json& paths = core["paths"];
  EXPECT_TRUE(paths.contains("/api/v1/namespaces/{namespace}/pods/{name}/log"));
  EXPECT_TRUE(paths.contains("/api/v1/nodes/{name}"));  // Cluster-scoped.
  EXPECT_FALSE(paths.contains("/api/v1/namespaces/{namespace}/nodes"));
  const json& patch = paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"], Gvk("", "v1", "Pod"));
  EXPECT_TRUE(HasParam(patch, "fieldValidation"));
  // Not advertised in v3, so that kubectl apply builds strategic merge patches from its own
  // types rather than from the permissive schema.
  EXPECT_TRUE(patch["requestBody"]["content"].contains("application/merge-patch+json"));
  EXPECT_FALSE(patch["requestBody"]["content"].contains("application/strategic-merge-patch+json"));
  const json& pod = core["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
  EXPECT_EQ(pod["x-kubernetes-group-version-kind"], json::array({Gvk("", "v1", "Pod")}));
  EXPECT_EQ(pod["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"], true);
  EXPECT_EQ(
      core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]["properties"]["data"]["type"],
      "object");
  EXPECT_TRUE(Explain(core, "/api/v1", "namespaces", {"metadata"}).is_object());

  const json leases =
      OpenApiV3GroupVersion(c.registry, c.Lookup(), "coordination.k8s.io", "v1").value();
  EXPECT_TRUE(leases["components"]["schemas"].contains("io.k8s.api.coordination.v1.Lease"));
  EXPECT_FALSE(OpenApiV3GroupVersion(c.registry, c.Lookup(), "sluice.dev", "v9").has_value());
  EXPECT_FALSE(OpenApiV3GroupVersion(c.registry, c.Lookup(), "nope.dev", "v1").has_value());
}

TEST(OpenApiDocsTest, MissingCrdGivesPermissiveSchema) {
  Cluster c;
  const json doc = OpenApiV3GroupVersion(c.registry, nullptr, "sluice.dev", "v1alpha1").value();
  const json& pool = doc["components"]["schemas"]["dev.sluice.v1alpha1.RolloutPool"];
  EXPECT_EQ(pool["x-kubernetes-preserve-unknown-fields"], true);
  EXPECT_EQ(pool["x-kubernetes-group-version-kind"][0]["kind"], "RolloutPool");
  EXPECT_TRUE(pool["properties"].contains("metadata"));
}

TEST(OpenApiDocsTest, RootListsGroupVersionsWithContentHashes) {
  Cluster c;
  const json root = OpenApiV3Root(c.registry, c.Lookup());
  const json& paths = root["paths"];
  ASSERT_TRUE(paths.contains("api/v1"));
  ASSERT_TRUE(paths.contains("apis/sluice.dev/v1alpha1"));
  ASSERT_TRUE(paths.contains("apis/coordination.k8s.io/v1"));
  // v1, events, coordination, apps, networking, rbac, authorization, authentication,
  // apiextensions, sluice.dev.
  EXPECT_EQ(paths.size(), 10u);
  const std::string url = paths["apis/sluice.dev/v1alpha1"]["serverRelativeURL"];
  const std::string prefix = "/openapi/v3/apis/sluice.dev/v1alpha1?hash=";
  ASSERT_EQ(url.rfind(prefix, 0), 0u) << url;
  const json doc = OpenApiV3GroupVersion(c.registry, c.Lookup(), "sluice.dev", "v1alpha1").value();
  EXPECT_EQ(url.substr(prefix.size()), OpenApiHash(doc));
  EXPECT_EQ(OpenApiHash(doc).size(), 16u);
  EXPECT_EQ(OpenApiV3Root(c.registry, c.Lookup()), root);  // Stable.

  // Editing a CRD's schema changes its group-version's hash and no other.
  c.crds["policies.sluice.dev"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] =
      "edited";
  const json edited = OpenApiV3Root(c.registry, c.Lookup());
  EXPECT_NE(edited["paths"]["apis/sluice.dev/v1alpha1"], paths["apis/sluice.dev/v1alpha1"]);
  EXPECT_EQ(edited["paths"]["api/v1"], paths["api/v1"]);

  // Removing the CRDs removes their group-version.
  for (const auto& [name, crd] : c.crds) c.registry.RemoveCrd(name);
  EXPECT_FALSE(OpenApiV3Root(c.registry, c.Lookup())["paths"].contains("apis/sluice.dev/v1alpha1"));
}

TEST(OpenApiDocsTest, V2IsSwaggerWithConvertedSchemas) {
  Cluster c;
  const json doc = OpenApiV2(c.registry, c.Lookup());
  EXPECT_EQ(doc["swagger"], "2.0");
  const json& defs = doc["definitions"];
  ASSERT_TRUE(defs.contains("dev.sluice.v1alpha1.RolloutPool"));
  ASSERT_TRUE(defs.contains("io.k8s.api.core.v1.Pod"));
  const json& pool = defs["dev.sluice.v1alpha1.RolloutPool"];
  EXPECT_EQ(pool["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  EXPECT_EQ(pool["x-kubernetes-group-version-kind"][0]["kind"], "RolloutPool");
  EXPECT_TRUE(pool["properties"]["spec"]["properties"].contains("placement"));
  // No OpenAPI 3 constructs survive in the definitions.
  EXPECT_FALSE(HasKey(defs, "anyOf"));
  EXPECT_FALSE(HasKey(defs, "allOf"));
  EXPECT_FALSE(HasKey(defs, "nullable"));
  std::vector<std::string> refs;
  CollectRefs(doc, refs);
  for (const std::string& ref : refs) {
    ASSERT_EQ(ref.rfind("#/definitions/", 0), 0u) << ref;
    EXPECT_TRUE(defs.contains(ref.substr(14))) << ref;
  }

  const json& patch =
      doc["paths"]["/apis/sluice.dev/v1alpha1/namespaces/{namespace}/rolloutpools/{name}"]["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"], Gvk("sluice.dev", "v1alpha1", "RolloutPool"));
  EXPECT_TRUE(HasParam(patch, "fieldValidation"));
  EXPECT_TRUE(HasParam(patch, "body"));
  EXPECT_TRUE(doc["paths"].contains("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"));
  const json& pod_patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
  EXPECT_NE(std::find(pod_patch["consumes"].begin(), pod_patch["consumes"].end(),
                      "application/strategic-merge-patch+json"),
            pod_patch["consumes"].end());
  EXPECT_EQ(std::find(patch["consumes"].begin(), patch["consumes"].end(),
                      "application/strategic-merge-patch+json"),
            patch["consumes"].end());

  // Operation IDs are unique across the whole document (core and events.k8s.io both have Event).
  std::set<std::string> ids;
  for (const auto& [path, item] : doc["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "parameters") continue;
      EXPECT_TRUE(ids.insert(op["operationId"].get<std::string>()).second) << path << method;
    }
  }
}

}  // namespace
}  // namespace sluice::apiserver
