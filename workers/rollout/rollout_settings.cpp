#include "workers/rollout/rollout_settings.h"

#include <nlohmann/json.hpp>

#include "api/generated/policy_types.h"
#include "api/validation.h"
#include "common/file/read_file.h"
#include "workers/weights/weight_sync.h"

namespace sluice::rollout {

using nlohmann::json;

Result<RolloutSettings> ParseRolloutConfig(std::string_view text,
                                           const std::vector<std::string>& hosted,
                                           std::string_view model_cache_root) {
  json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return Status::InvalidArgument("not a JSON object", "rollout.json");
  }
  RolloutSettings out;
  if (config.contains("pool") && config["pool"].is_object()) {
    const json& pool = config["pool"];
    if (pool.contains("metadata") && pool["metadata"].is_object() &&
        pool["metadata"].contains("name") && pool["metadata"]["name"].is_string()) {
      out.pool = pool["metadata"]["name"].get<std::string>();
    }
  }
  if (!config.contains("policies") || !config["policies"].is_array()) {
    return Status::InvalidArgument("must be a list of Policy objects", "policies");
  }
  json& policies = config["policies"];
  std::vector<api::Policy> parsed;
  for (size_t i = 0; i < policies.size(); ++i) {
    const std::string where = "policies[" + std::to_string(i) + "]";
    json& object = policies[i];
    if (!object.is_object()) return Status::InvalidArgument("must be a Policy object", where);
    if (object.value("kind", std::string("Policy")) != "Policy") {
      return Status::InvalidArgument("must be a Policy", where + ".kind");
    }
    object["kind"] = "Policy";
    if (!object.contains("apiVersion")) object["apiVersion"] = "sluice.dev/v1alpha1";
    if (Status st = api::DefaultAndValidate(object); !st.ok()) {
      return Status::InvalidArgument(st.message(),
                                     where + (st.field().empty() ? "" : ".") + st.field());
    }
    Result<api::Policy> p = api::PolicyFromJson(object);
    if (!p.ok()) return p.status().WithContext(where);
    parsed.push_back(std::move(*p));
  }
  for (const std::string& name : hosted) {
    const api::Policy* found = nullptr;
    size_t index = 0;
    for (size_t i = 0; i < parsed.size(); ++i) {
      if (parsed[i].metadata.name == name) {
        found = &parsed[i];
        index = i;
      }
    }
    if (found == nullptr) {
      return Status::InvalidArgument("has no Policy named '" + name + "' (flag --policies)",
                                     "policies");
    }
    const std::string where = "policies[" + std::to_string(index) + "]";
    HostedPolicy h;
    h.name = name;
    Result<model::ModelSource> model =
        model::ResolveModelSource(name, found->spec.model.source, model_cache_root);
    if (!model.ok()) {
      return Status::InvalidArgument(model.status().message(),
                                     where + "." + model.status().field());
    }
    h.model = *model;
    Result<model::TextSettings> text = model::ResolveTextSettings(h.model, found->spec.tokenizer);
    if (!text.ok()) {
      return Status::InvalidArgument(text.status().message(), where + "." + text.status().field());
    }
    h.tokenizer = text->tokenizer;
    h.tokenizer_file = text->tokenizer_file;
    h.chat_template = text->chat_template;
    h.dtype = found->spec.model.dtype;
    h.keep_versions = found->spec.weight_sync.keep_versions;
    h.chunk_bytes = weights::TransferChunkBytes(found->spec.weight_sync);
    out.policies.push_back(std::move(h));
  }
  return out;
}

Result<RolloutSettings> LoadRolloutConfigFile(const std::string& path,
                                              const std::vector<std::string>& hosted,
                                              std::string_view model_cache_root) {
  Result<std::string> text = file::ReadWholeFile(path);
  if (!text.ok()) return Status::InvalidArgument("cannot read " + path, "policy-config");
  Result<RolloutSettings> s = ParseRolloutConfig(*text, hosted, model_cache_root);
  if (!s.ok()) return s.status().WithContext(path);
  return s;
}

}  // namespace sluice::rollout
