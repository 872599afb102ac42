#include "operator/controllers/reference_indexes.h"

#include <algorithm>

namespace sluice::controllers {
namespace {

using nlohmann::json;

std::string NamespaceOf(const json& o) {
  const std::string ns = o.value("/metadata/namespace"_json_pointer, std::string());
  return ns.empty() ? "default" : ns;
}

// The reference at `pointer` (a string) as "<ns>/<name>", or nothing.
std::vector<std::string> RefAt(const json& o, const json::json_pointer& pointer) {
  if (!o.contains(pointer) || !o.at(pointer).is_string()) return {};
  const std::string name = o.at(pointer).get<std::string>();
  if (name.empty()) return {};
  return {NamespaceOf(o) + "/" + name};
}

}  // namespace

std::vector<std::string> PoolPolicyRefs(const json& pool) {
  std::vector<std::string> out;
  const json::json_pointer at("/spec/policies");
  if (!pool.contains(at) || !pool.at(at).is_array()) return out;
  const std::string ns = NamespaceOf(pool);
  for (const json& p : pool.at(at)) {
    if (!p.is_string() || p.get<std::string>().empty()) continue;
    std::string key = ns + "/" + p.get<std::string>();
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(std::move(key));
  }
  return out;
}

std::vector<std::string> JobPolicyRefs(const json& job) {
  return RefAt(job, json::json_pointer("/spec/policyRef/name"));
}

std::vector<std::string> DataflowRefs(const json& pool_or_job) {
  return RefAt(pool_or_job, json::json_pointer("/spec/dataflowRef/name"));
}

kube::Indexers PoolIndexers() {
  return {{kPolicyRefIndex, PoolPolicyRefs}, {kDataflowRefIndex, DataflowRefs}};
}

kube::Indexers TrainerJobIndexers() {
  return {{kPolicyRefIndex, JobPolicyRefs}, {kDataflowRefIndex, DataflowRefs}};
}

std::vector<kube::ObjectPtr> Referencing(const kube::Indexer& store, const std::string& index,
                                         const kube::IndexFunc& refs, const std::string& ns,
                                         const std::string& name) {
  const std::string key = ns + "/" + name;
  Result<std::vector<kube::ObjectPtr>> hits = store.ByIndex(index, key);
  if (hits.ok()) return std::move(hits).value();
  std::vector<kube::ObjectPtr> out;  // No such index on this store: scan.
  for (const kube::ObjectPtr& o : store.List()) {
    const std::vector<std::string> values = refs(*o);
    if (std::find(values.begin(), values.end(), key) != values.end()) out.push_back(o);
  }
  return out;
}

}  // namespace sluice::controllers
