#include "workers/trainer/trainer_settings.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "api/validation.h"
#include "common/file/read_file.h"

namespace sluice::trainer {
namespace {

using nlohmann::json;

// Defaults and validates config[key] (an object of `kind`), prefixing error fields with key.
Status DefaultMember(json& config, const char* key, const char* kind) {
  if (!config.contains(key) || !config[key].is_object()) {
    return Status::InvalidArgument(std::string("missing the ") + kind + " object", key);
  }
  json& object = config[key];
  if (object.value("kind", std::string(kind)) != kind) {
    return Status::InvalidArgument(std::string("must be a ") + kind, std::string(key) + ".kind");
  }
  object["kind"] = kind;
  if (!object.contains("apiVersion")) object["apiVersion"] = "sluice.dev/v1alpha1";
  Status st = api::DefaultAndValidate(object);
  if (!st.ok()) {
    return Status::InvalidArgument(st.message(),
                                   std::string(key) + (st.field().empty() ? "" : ".") + st.field());
  }
  return Status::Ok();
}

constexpr char kWarmStartField[] = "trainerJob.spec.warmStart";
// The CRD's default of workflow.maxTurns for multi-turn (MakeWorkflow's too).
constexpr int64_t kDefaultMultiTurnMaxTurns = 8;

// Which supervised transcript the warm start builds for s.policy in `workflow`
// (WarmStartTranscript), with the role it plays and the markers; InvalidArgument naming
// trainerJob.spec.warmStart for a workflow or role it cannot shape.
Status ResolveWarmStartShape(const api::DataflowSpecWorkflow& workflow, TrainerSettings& s) {
  s.tool_call = workflow.tool_call.value_or(api::DataflowSpecWorkflowToolCall{});
  if (workflow.type == "single-turn") {
    s.warm_start_transcript = WarmStartTranscript::kAnswer;
    if (!workflow.roles.empty()) s.warm_start_role = workflow.roles.front().name;
    return Status::Ok();
  }
  if (workflow.type == "solve-and-verify") {
    std::vector<std::string> played;
    for (const api::DataflowSpecWorkflowRole& role : workflow.roles) {
      if (role.policy == s.policy) played.push_back(role.name);
    }
    if (played.empty()) {
      return Status::InvalidArgument("Policy " + s.policy +
                                         " plays no role of the Dataflow's workflow.roles, so "
                                         "there is no transcript to warm-start it on",
                                     kWarmStartField);
    }
    if (played.size() > 1) {
      // One policy, two roles: each supervised transcript would teach one role's turn only, and
      // nothing says how to mix them.
      return Status::InvalidArgument(
          "Policy " + s.policy + " plays more than one role (" + played[0] + ", " + played[1] +
              ") of the Dataflow's solve-and-verify workflow; a warm start trains one role",
          kWarmStartField);
    }
    s.warm_start_role = played.front();
    if (s.warm_start_role == "solver") {
      s.warm_start_transcript = WarmStartTranscript::kAnswer;
    } else if (s.warm_start_role == "verifier") {
      s.warm_start_transcript = WarmStartTranscript::kVerdict;
    } else {
      return Status::InvalidArgument(
          "cannot shape role " + s.warm_start_role +
              " of a solve-and-verify workflow (only solver and verifier)",
          kWarmStartField);
    }
    return Status::Ok();
  }
  if (workflow.type == "multi-turn") {
    const bool calculator = workflow.environment.has_value() &&
                            workflow.environment->builtin.value_or("") == "calculator";
    if (!calculator) {
      std::string environment = "no environment";
      if (workflow.environment && workflow.environment->builtin) {
        environment = "builtin " + *workflow.environment->builtin;
      } else if (workflow.environment && workflow.environment->url) {
        environment = "url " + *workflow.environment->url;
      }
      return Status::InvalidArgument(
          "needs the built-in calculator environment for a multi-turn workflow (the only one "
          "whose tool calls it can write), not " +
              environment,
          kWarmStartField);
    }
    // The transcript is a call and an answer: with one turn the workflow would end the episode
    // at the call, so the answer turn could never happen at rollout.
    const int64_t max_turns = workflow.max_turns.value_or(kDefaultMultiTurnMaxTurns);
    if (max_turns < 2) {
      return Status::InvalidArgument(
          "needs the Dataflow's workflow.maxTurns >= 2 for a multi-turn workflow (a calculator "
          "call and the answer), not " +
              std::to_string(max_turns),
          kWarmStartField);
    }
    s.warm_start_transcript = WarmStartTranscript::kCalculatorCall;
    if (!workflow.roles.empty()) s.warm_start_role = workflow.roles.front().name;
    return Status::Ok();
  }
  return Status::InvalidArgument(
      "needs a Dataflow with workflow type single-turn, solve-and-verify or multi-turn, not " +
          workflow.type,
      kWarmStartField);
}

}  // namespace

Result<TrainerSettings> ParseTrainerConfig(std::string_view text,
                                           std::string_view model_cache_root) {
  json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return Status::InvalidArgument("not a JSON object", "trainer.json");
  }
  SLUICE_RETURN_IF_ERROR(DefaultMember(config, "trainerJob", "TrainerJob"));
  SLUICE_RETURN_IF_ERROR(DefaultMember(config, "policy", "Policy"));
  SLUICE_RETURN_IF_ERROR(DefaultMember(config, "dataflow", "Dataflow"));
  Result<api::TrainerJob> job = api::TrainerJobFromJson(config["trainerJob"]);
  if (!job.ok()) return job.status().WithContext("trainerJob");
  Result<api::Policy> policy = api::PolicyFromJson(config["policy"]);
  if (!policy.ok()) return policy.status().WithContext("policy");
  Result<api::Dataflow> dataflow = api::DataflowFromJson(config["dataflow"]);
  if (!dataflow.ok()) return dataflow.status().WithContext("dataflow");

  TrainerSettings s;
  s.job = job->metadata.name;
  s.nspace = job->metadata.namespace_.empty() ? "default" : job->metadata.namespace_;
  s.policy = policy->metadata.name;
  s.dataflow = dataflow->metadata.name;
  if (job->spec.policy_ref.name != s.policy) {
    return Status::InvalidArgument("names Policy '" + job->spec.policy_ref.name +
                                       "' but the config holds Policy '" + s.policy + "'",
                                   "trainerJob.spec.policyRef.name");
  }
  if (job->spec.dataflow_ref.name != s.dataflow) {
    return Status::InvalidArgument("names Dataflow '" + job->spec.dataflow_ref.name +
                                       "' but the config holds Dataflow '" + s.dataflow + "'",
                                   "trainerJob.spec.dataflowRef.name");
  }
  s.spec = std::move(job->spec);
  s.policy_spec = std::move(policy->spec);
  Result<model::ModelSource> model =
      model::ResolveModelSource(s.policy, s.policy_spec.model.source, model_cache_root);
  if (!model.ok()) {
    return Status(model.status().code(), model.status().message(),
                  "policy." + model.status().field());
  }
  s.model = std::move(*model);
  const api::DataflowSpec& df = dataflow->spec;
  s.minibatches = df.batch.minibatches;
  if (df.batch.per_policy) {
    for (const auto& item : *df.batch.per_policy) {
      if (item.policy == s.policy && item.minibatches) s.minibatches = *item.minibatches;
    }
  }
  s.max_new_tokens = df.sampling.max_new_tokens;
  if (s.spec.warm_start) {
    SLUICE_RETURN_IF_ERROR(ResolveWarmStartShape(df.workflow, s));
    Result<model::TextSettings> text_settings =
        model::ResolveTextSettings(s.model, s.policy_spec.tokenizer);
    if (!text_settings.ok()) {
      return Status(text_settings.status().code(), text_settings.status().message(),
                    "policy." + text_settings.status().field());
    }
    s.text = std::move(*text_settings);
    s.system_prompt = df.workflow.system_prompt;
  }
  return s;
}

Result<TrainerSettings> LoadTrainerConfigFile(const std::string& path,
                                              std::string_view model_cache_root) {
  Result<std::string> text = file::ReadWholeFile(path);
  if (!text.ok()) return Status::NotFound(path + ": cannot open the trainer config");
  Result<TrainerSettings> s = ParseTrainerConfig(*text, model_cache_root);
  if (!s.ok()) return s.status().WithContext(path);
  return s;
}

}  // namespace sluice::trainer
