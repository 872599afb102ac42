#include "workers/dataflow/algorithms/eval_episodes.h"

#include <map>
#include <utility>

namespace sluice::dataflow {

bool IsFullReward(double reward) { return reward >= 1.0 - 1e-9; }

EvalEpisode EvalEpisodeOf(const Sample& sample, std::string_view primary, bool correct) {
  EvalEpisode e;
  e.correct = correct;
  for (size_t i = 0; i < sample.policies.size() && i < sample.policy_rewards.size(); ++i) {
    if (sample.policies[i] != primary) {
      e.others.push_back({sample.policies[i], sample.policy_rewards[i]});
    }
  }
  e.tool_calls = sample.tool_calls;
  return e;
}

EvalEpisodeFigures AggregateEvalEpisodes(std::span<const EvalEpisode> episodes) {
  struct Sums {
    int64_t n[2] = {0, 0};  // [wrong, correct]
    double sum[2] = {0.0, 0.0};
  };
  std::map<std::string, Sums> by_policy;
  EvalEpisodeFigures out;
  for (const EvalEpisode& e : episodes) {
    const int side = e.correct ? 1 : 0;
    for (const PolicyReward& r : e.others) {
      Sums& s = by_policy[r.policy];
      ++s.n[side];
      s.sum[side] += r.reward;
    }
    if (e.tool_calls) {
      ++out.tool_call_episodes;
      if (*e.tool_calls > 0) ++out.episodes_calling_tools;
    }
  }
  for (const auto& [policy, s] : by_policy) {
    PolicyEvalFigures f;
    f.policy = policy;
    f.episodes = s.n[0] + s.n[1];
    f.correct_episodes = s.n[1];
    f.mean_reward = (s.sum[0] + s.sum[1]) / static_cast<double>(f.episodes);  // episodes >= 1.
    if (s.n[1] > 0) f.mean_reward_when_correct = s.sum[1] / static_cast<double>(s.n[1]);
    if (s.n[0] > 0) f.mean_reward_when_wrong = s.sum[0] / static_cast<double>(s.n[0]);
    out.policies.push_back(std::move(f));
  }
  if (out.tool_call_episodes > 0) {
    out.tool_call_share = static_cast<double>(out.episodes_calling_tools) /
                          static_cast<double>(out.tool_call_episodes);
  }
  return out;
}

void AddEvalEpisodeFigures(const EvalEpisodeFigures& figures, nlohmann::json* report) {
  if (!figures.policies.empty()) {
    nlohmann::json policies = nlohmann::json::array();
    for (const PolicyEvalFigures& f : figures.policies) {
      nlohmann::json p = {{"policy", f.policy},
                          {"episodes", f.episodes},
                          {"correct_episodes", f.correct_episodes},
                          {"mean_reward", f.mean_reward}};
      if (f.mean_reward_when_correct) p["mean_reward_when_correct"] = *f.mean_reward_when_correct;
      if (f.mean_reward_when_wrong) p["mean_reward_when_wrong"] = *f.mean_reward_when_wrong;
      policies.push_back(std::move(p));
    }
    (*report)["policies"] = std::move(policies);
  }
  if (figures.tool_call_share) {
    (*report)["tool_call_share"] = *figures.tool_call_share;
    (*report)["tool_call_episodes"] = figures.tool_call_episodes;
    (*report)["episodes_calling_tools"] = figures.episodes_calling_tools;
  }
}

nlohmann::json EvalEpisodesToJson(std::span<const EvalEpisode> episodes) {
  nlohmann::json out = nlohmann::json::array();
  for (const EvalEpisode& e : episodes) {
    nlohmann::json others = nlohmann::json::array();
    for (const PolicyReward& r : e.others) others.push_back({r.policy, r.reward});
    nlohmann::json j = {{"correct", e.correct}, {"others", std::move(others)}};
    if (e.tool_calls) j["tool_calls"] = *e.tool_calls;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<EvalEpisode> EvalEpisodesFromJson(const nlohmann::json& j) {
  std::vector<EvalEpisode> out;
  // at() rather than a range-for: it throws on a value that is no array instead of iterating it.
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& ej = j.at(i);
    EvalEpisode e;
    e.correct = ej.at("correct").get<bool>();
    for (const nlohmann::json& r : ej.at("others")) {
      e.others.push_back({r.at(0).get<std::string>(), r.at(1).get<double>()});
    }
    if (auto it = ej.find("tool_calls"); it != ej.end()) e.tool_calls = it->get<uint32_t>();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace sluice::dataflow
