// MakeWorkflow (workflow.h): validates a task's `workflow` object (the Dataflow's spec.workflow
// plus "reward" and optional "toolCall") and builds the workflow it names. The CRD's rules are
// checked again here because a worker must not trust that every dataflow validated its input.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workers/rollout/environments/environment.h"
#include "workers/rollout/environments/tool_call_format.h"
#include "workers/rollout/rewards/reward.h"
#include "workers/rollout/workflows/multi_turn_workflow.h"
#include "workers/rollout/workflows/single_turn_workflow.h"
#include "workers/rollout/workflows/solve_and_verify_workflow.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {
namespace {

using nlohmann::json;

constexpr int64_t kMaxTurnsLimit = 256;           // The CRD's maximum of maxTurns.
constexpr int32_t kDefaultMultiTurnMaxTurns = 8;  // The CRD's documented defaults.
constexpr int32_t kDefaultSolveAndVerifyAttempts = 2;
constexpr size_t kMaxRoles = 8;
constexpr size_t kMaxNameLength = 63;
constexpr size_t kMaxSystemPromptLength = 32768;

Status BadWorkflow(std::string field, std::string message) {
  return Status::InvalidArgument(std::move(message), std::move(field));
}

// Errors of the reward factory name "reward.*"; here they are inside "workflow".
Status InWorkflow(const Status& status) {
  if (status.ok() || status.field().starts_with("workflow.")) return status;
  return Status(status.code(), status.message(),
                status.field().empty() ? "workflow.reward" : "workflow." + status.field());
}

struct Role {
  std::string name;
  std::string policy;
};

Result<std::vector<Role>> ParseRoles(const json& w) {
  auto it = w.find("roles");
  if (it == w.end() || it->is_null()) return BadWorkflow("workflow.roles", "is required");
  if (!it->is_array()) return BadWorkflow("workflow.roles", "must be a list of {name, policy}");
  if (it->empty() || it->size() > kMaxRoles) {
    return BadWorkflow("workflow.roles", "must have 1 to " + std::to_string(kMaxRoles) + " roles");
  }
  std::vector<Role> roles;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& r = (*it)[i];
    const std::string where = "workflow.roles[" + std::to_string(i) + "]";
    if (!r.is_object()) return BadWorkflow(where, "must be an object {name, policy}");
    Role role;
    for (auto [key, out] : {std::pair<const char*, std::string*>{"name", &role.name},
                            std::pair<const char*, std::string*>{"policy", &role.policy}}) {
      auto f = r.find(key);
      if (f == r.end() || !f->is_string() || f->get_ref<const std::string&>().empty()) {
        return BadWorkflow(where + "." + key, "must be a non-empty string");
      }
      *out = f->get<std::string>();
      if (out->size() > kMaxNameLength) {
        return BadWorkflow(where + "." + key,
                           "must be at most " + std::to_string(kMaxNameLength) + " characters");
      }
    }
    for (const Role& earlier : roles) {
      if (earlier.name == role.name) {
        return BadWorkflow(where + ".name", "role \"" + role.name + "\" is listed twice");
      }
    }
    roles.push_back(std::move(role));
  }
  return roles;
}

// maxTurns: nullopt when unset.
Result<std::optional<int32_t>> ParseMaxTurns(const json& w) {
  auto it = w.find("maxTurns");
  if (it == w.end() || it->is_null()) return std::optional<int32_t>();
  if (!it->is_number_integer()) return BadWorkflow("workflow.maxTurns", "must be an integer");
  const int64_t v = it->get<int64_t>();
  if (v < 1 || v > kMaxTurnsLimit) {
    return BadWorkflow("workflow.maxTurns", "must be in [1, " + std::to_string(kMaxTurnsLimit) +
                                                "], got " + std::to_string(v));
  }
  return std::optional<int32_t>(static_cast<int32_t>(v));
}

Result<std::optional<std::string>> ParseSystemPrompt(const json& w) {
  auto it = w.find("systemPrompt");
  if (it == w.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return BadWorkflow("workflow.systemPrompt", "must be a string");
  if (it->get_ref<const std::string&>().size() > kMaxSystemPromptLength) {
    return BadWorkflow("workflow.systemPrompt",
                       "must be at most " + std::to_string(kMaxSystemPromptLength) + " characters");
  }
  return std::optional<std::string>(it->get<std::string>());
}

// The reward spec with its type defaulted to exact-match (the CRD default).
Result<json> ParseRewardSpec(const json& w) {
  json spec = json::object();
  auto it = w.find("reward");
  if (it != w.end() && !it->is_null()) {
    if (!it->is_object())
      return BadWorkflow("workflow.reward", "must be an object {type, options}");
    spec = *it;
  }
  auto type = spec.find("type");
  if (type == spec.end() || type->is_null()) {
    spec["type"] = "exact-match";
  } else if (!type->is_string()) {
    return BadWorkflow("workflow.reward.type", "must be a string");
  }
  auto options = spec.find("options");
  if (options != spec.end() && !options->is_null() && !options->is_object()) {
    return BadWorkflow("workflow.reward.options", "must be an object");
  }
  return spec;
}

// For reward type "verifier": the reward that judges the solver's correctness (for the verifier's
// own reward), reward.options.check (default exact-match) with the remaining options.
Result<std::unique_ptr<Reward>> MakeCheckReward(const json& reward_spec) {
  json options = json::object();
  if (auto it = reward_spec.find("options"); it != reward_spec.end() && it->is_object()) {
    options = *it;
  }
  std::string check = "exact-match";
  if (auto it = options.find("check"); it != options.end() && !it->is_null()) {
    if (!it->is_string()) return BadWorkflow("workflow.reward.options.check", "must be a string");
    check = it->get<std::string>();
    options.erase("check");
  }
  if (check == "verifier") {
    return BadWorkflow("workflow.reward.options.check",
                       "must name a reward that checks answers (exact-match, digit-match, math, "
                       "code-exec)");
  }
  Result<std::unique_ptr<Reward>> reward = MakeReward(json{{"type", check}, {"options", options}});
  if (!reward.ok()) {
    const Status& s = reward.status();
    return Status(
        s.code(), s.message(),
        s.field() == "reward.type" ? "workflow.reward.options.check" : "workflow." + s.field());
  }
  return reward;
}

}  // namespace

Result<std::unique_ptr<Workflow>> MakeWorkflow(const json& w) {
  if (!w.is_object()) return BadWorkflow("workflow", "must be an object");

  std::string type = "single-turn";
  if (auto it = w.find("type"); it != w.end() && !it->is_null()) {
    if (!it->is_string()) return BadWorkflow("workflow.type", "must be a string");
    type = it->get<std::string>();
  }
  const bool single_turn = type == "single-turn";
  const bool multi_turn = type == "multi-turn";
  const bool solve_and_verify = type == "solve-and-verify";
  if (!single_turn && !multi_turn && !solve_and_verify) {
    return BadWorkflow("workflow.type", "unknown workflow \"" + type +
                                            "\"; known: single-turn, multi-turn, solve-and-verify");
  }

  SLUICE_ASSIGN_OR_RETURN(const std::vector<Role> roles, ParseRoles(w));
  if (solve_and_verify) {
    const bool has_solver =
        roles.size() == 2 && (roles[0].name == "solver" || roles[1].name == "solver");
    const bool has_verifier =
        roles.size() == 2 && (roles[0].name == "verifier" || roles[1].name == "verifier");
    if (!has_solver || !has_verifier) {
      return BadWorkflow("workflow.roles",
                         "must be exactly the roles solver and verifier for "
                         "solve-and-verify");
    }
  } else if (roles.size() != 1) {
    return BadWorkflow("workflow.roles", "must have exactly one role for " + type);
  }

  SLUICE_ASSIGN_OR_RETURN(const std::optional<int32_t> max_turns, ParseMaxTurns(w));
  if (single_turn && max_turns)
    return BadWorkflow("workflow.maxTurns", "is not valid for single-turn");
  SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> system_prompt, ParseSystemPrompt(w));

  const auto environment = w.find("environment");
  const bool has_environment = environment != w.end() && !environment->is_null();
  if (multi_turn && !has_environment) {
    return BadWorkflow("workflow.environment", "is required for multi-turn");
  }
  if (!multi_turn && has_environment) {
    return BadWorkflow("workflow.environment", "is only valid for multi-turn");
  }

  ToolCallFormat format;
  if (auto it = w.find("toolCall"); it != w.end() && !it->is_null()) {
    SLUICE_ASSIGN_OR_RETURN(format, ParseToolCallFormat(*it));
  }

  SLUICE_ASSIGN_OR_RETURN(const json reward_spec, ParseRewardSpec(w));
  const bool verdict_reward = reward_spec["type"] == "verifier";
  if (verdict_reward && !solve_and_verify) {
    return BadWorkflow("workflow.reward.type", "verifier is only valid for solve-and-verify");
  }
  std::shared_ptr<const Reward> reward;
  if (verdict_reward) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Reward> check, MakeCheckReward(reward_spec));
    reward = std::move(check);
  } else {
    Result<std::unique_ptr<Reward>> made = MakeReward(reward_spec);
    if (!made.ok()) return InWorkflow(made.status());
    reward = std::move(made).value();
  }

  if (single_turn) {
    return std::unique_ptr<Workflow>(std::make_unique<SingleTurnWorkflow>(
        SingleTurnWorkflow::Options{roles[0].policy, std::move(system_prompt), reward}));
  }
  if (multi_turn) {
    MultiTurnWorkflow::Options options;
    options.policy = roles[0].policy;
    options.system_prompt = std::move(system_prompt);
    options.max_turns = max_turns.value_or(kDefaultMultiTurnMaxTurns);
    SLUICE_ASSIGN_OR_RETURN(options.environment, ParseEnvironmentSpec(*environment));
    options.tool_call = std::move(format);
    options.reward = reward;
    return std::unique_ptr<Workflow>(std::make_unique<MultiTurnWorkflow>(std::move(options)));
  }
  SolveAndVerifyWorkflow::Options options;
  for (const Role& role : roles) {
    (role.name == "solver" ? options.solver_policy : options.verifier_policy) = role.policy;
  }
  options.system_prompt = std::move(system_prompt);
  options.max_attempts = max_turns.value_or(kDefaultSolveAndVerifyAttempts);
  options.format = std::move(format);
  options.check = reward;
  options.reward_is_verdict = verdict_reward;
  return std::unique_ptr<Workflow>(std::make_unique<SolveAndVerifyWorkflow>(std::move(options)));
}

}  // namespace sluice::rollout
