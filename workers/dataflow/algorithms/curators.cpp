#include "workers/dataflow/algorithms/curators.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/json/options_reader.h"

namespace sluice::dataflow {

namespace {

Status CheckRewards(std::span<const double> rewards) {
  if (rewards.empty()) return Status::InvalidArgument("empty group", "rewards");
  for (double r : rewards) {
    if (!std::isfinite(r)) return Status::InvalidArgument("reward is not finite", "rewards");
  }
  return Status::Ok();
}

Status CheckType(const nlohmann::json& state, std::string_view type) {
  if (!state.is_object()) return Status::InvalidArgument("state must be an object", "state");
  auto it = state.find("type");
  if (it == state.end() || !it->is_string() || it->get<std::string>() != type) {
    return Status::InvalidArgument("state is not of a " + std::string(type) + " curator",
                                   "state.type");
  }
  return Status::Ok();
}

// Reads a number member; InvalidArgument naming "state.<key>" when absent or not a number.
Status ReadNumber(const nlohmann::json& obj, const std::string& key, const std::string& where,
                  double& out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) {
    return Status::InvalidArgument("must be a number", where + "." + key);
  }
  out = it->get<double>();
  return Status::Ok();
}

Status ReadCount(const nlohmann::json& obj, const std::string& key, const std::string& where,
                 int64_t& out) {
  auto it = obj.find(key);
  if (it == obj.end() || !(it->is_number_integer()) || it->get<int64_t>() < 0) {
    return Status::InvalidArgument("must be an integer >= 0", where + "." + key);
  }
  out = it->get<int64_t>();
  return Status::Ok();
}

Result<const nlohmann::json*> ReadPrompts(const nlohmann::json& state) {
  auto it = state.find("prompts");
  if (it == state.end() || !it->is_object()) {
    return Status::InvalidArgument("must be an object", "state.prompts");
  }
  return &*it;
}

bool InUnit(double x) { return x >= 0.0 && x <= 1.0; }

}  // namespace

// --- accept-all

Status AcceptAllCurator::Update(std::string_view, std::span<const double> rewards) {
  return CheckRewards(rewards);
}

nlohmann::json AcceptAllCurator::Serialize() const { return {{"type", "accept-all"}}; }

Status AcceptAllCurator::Deserialize(const nlohmann::json& state) {
  return CheckType(state, "accept-all");
}

// --- filter-solved

Status ValidateFilterSolvedOptions(const FilterSolvedOptions& o) {
  if (!(o.threshold > 0.0 && o.threshold <= 1.0)) {
    return Status::InvalidArgument("must be in (0, 1]", "threshold");
  }
  if (!(o.decay >= 0.0 && o.decay < 1.0))
    return Status::InvalidArgument("must be in [0, 1)", "decay");
  if (!InUnit(o.prior)) return Status::InvalidArgument("must be in [0, 1]", "prior");
  if (o.min_attempts < 0) return Status::InvalidArgument("must be >= 0", "minAttempts");
  if (!std::isfinite(o.success_threshold)) {
    return Status::InvalidArgument("must be finite", "successThreshold");
  }
  return Status::Ok();
}

const FilterSolvedCurator::PromptState* FilterSolvedCurator::Find(
    std::string_view prompt_id) const {
  auto it = prompts_.find(prompt_id);
  return it == prompts_.end() ? nullptr : &it->second;
}

CuratorDecision FilterSolvedCurator::ShouldLease(std::string_view prompt_id, double) const {
  CuratorDecision d;
  const PromptState* s = Find(prompt_id);
  if (s == nullptr || s->attempts < options_.min_attempts || s->ewma < options_.threshold) {
    return d;
  }
  d.lease = false;
  d.probability = 0.0;
  d.reason = "solved: success ewma " + std::to_string(s->ewma) + " >= threshold " +
             std::to_string(options_.threshold);
  return d;
}

Status FilterSolvedCurator::Update(std::string_view prompt_id, std::span<const double> rewards) {
  SLUICE_RETURN_IF_ERROR(CheckRewards(rewards));
  const auto successes = std::count_if(rewards.begin(), rewards.end(),
                                       [this](double r) { return r > options_.success_threshold; });
  const double success = static_cast<double>(successes) / static_cast<double>(rewards.size());
  auto [it, inserted] = prompts_.try_emplace(std::string(prompt_id));
  if (inserted) it->second.ewma = options_.prior;
  it->second.ewma = options_.decay * it->second.ewma + (1.0 - options_.decay) * success;
  ++it->second.attempts;
  return Status::Ok();
}

nlohmann::json FilterSolvedCurator::Serialize() const {
  nlohmann::json prompts = nlohmann::json::object();
  for (const auto& [id, s] : prompts_) prompts[id] = {{"ewma", s.ewma}, {"attempts", s.attempts}};
  return {{"type", "filter-solved"}, {"prompts", std::move(prompts)}};
}

Status FilterSolvedCurator::Deserialize(const nlohmann::json& state) {
  SLUICE_RETURN_IF_ERROR(CheckType(state, "filter-solved"));
  SLUICE_ASSIGN_OR_RETURN(const nlohmann::json* prompts, ReadPrompts(state));
  std::map<std::string, PromptState, std::less<>> parsed;
  for (const auto& el : prompts->items()) {
    const std::string where = "state.prompts." + el.key();
    if (!el.value().is_object()) return Status::InvalidArgument("must be an object", where);
    PromptState s;
    SLUICE_RETURN_IF_ERROR(ReadNumber(el.value(), "ewma", where, s.ewma));
    SLUICE_RETURN_IF_ERROR(ReadCount(el.value(), "attempts", where, s.attempts));
    if (!InUnit(s.ewma)) return Status::InvalidArgument("must be in [0, 1]", where + ".ewma");
    parsed.emplace(el.key(), s);
  }
  prompts_ = std::move(parsed);
  return Status::Ok();
}

// --- greso

Status ValidateGresoOptions(const GresoOptions& o) {
  struct Unit {
    double value;
    const char* name;
  };
  for (const Unit& u :
       {Unit{o.min_submit_easy, "minSubmitEasy"}, Unit{o.min_submit_hard, "minSubmitHard"},
        Unit{o.alpha_easy, "alphaEasy"}, Unit{o.alpha_hard, "alphaHard"}, Unit{o.delta_p, "deltaP"},
        Unit{o.p_min, "pMin"}, Unit{o.p_max, "pMax"}, Unit{o.p_easy_init, "pEasyInit"},
        Unit{o.p_hard_init, "pHardInit"}}) {
    if (!InUnit(u.value)) return Status::InvalidArgument("must be in [0, 1]", u.name);
  }
  if (o.p_min > o.p_max) return Status::InvalidArgument("must be <= pMax", "pMin");
  if (o.p_easy_init < o.p_min || o.p_easy_init > o.p_max) {
    return Status::InvalidArgument("must be in [pMin, pMax]", "pEasyInit");
  }
  if (o.p_hard_init < o.p_min || o.p_hard_init > o.p_max) {
    return Status::InvalidArgument("must be in [pMin, pMax]", "pHardInit");
  }
  if (!std::isfinite(o.correct_threshold)) {
    return Status::InvalidArgument("must be finite", "correctThreshold");
  }
  if (o.warmup_outcomes < 0) return Status::InvalidArgument("must be >= 0", "warmupOutcomes");
  if (!std::isfinite(o.tolerance) || o.tolerance < 0) {
    return Status::InvalidArgument("must be finite and >= 0", "tolerance");
  }
  return Status::Ok();
}

GresoCurator::GresoCurator(const GresoOptions& options)
    : options_(options), p_easy_(options.p_easy_init), p_hard_(options.p_hard_init) {}

int64_t GresoCurator::Streak(std::string_view prompt_id) const {
  auto it = prompts_.find(prompt_id);
  return it == prompts_.end() ? 0 : it->second.streak;
}

double GresoCurator::LeaseProbability(std::string_view prompt_id) const {
  auto it = prompts_.find(prompt_id);
  if (it == prompts_.end() || it->second.streak == 0) return 1.0;
  const PromptState& s = it->second;
  const double base = s.easy ? p_easy_ : p_hard_;
  const double floor = s.easy ? options_.min_submit_easy : options_.min_submit_hard;
  return std::max(std::pow(base, static_cast<double>(s.streak)), floor);
}

CuratorDecision GresoCurator::ShouldLease(std::string_view prompt_id, double unit_random) const {
  CuratorDecision d;
  d.probability = LeaseProbability(prompt_id);
  if (d.probability >= 1.0 || unit_random < d.probability) return d;
  d.lease = false;
  const auto& s = prompts_.find(prompt_id)->second;
  d.reason = std::string(s.easy ? "easy" : "hard") + " zero-variance streak " +
             std::to_string(s.streak) + ", lease probability " + std::to_string(d.probability);
  return d;
}

Status GresoCurator::Update(std::string_view prompt_id, std::span<const double> rewards) {
  SLUICE_RETURN_IF_ERROR(CheckRewards(rewards));
  const auto [lo, hi] = std::minmax_element(rewards.begin(), rewards.end());
  double sum = 0.0;
  for (double r : rewards) sum += r;
  const double mean = sum / static_cast<double>(rewards.size());
  ++outcomes_;
  ++window_outcomes_;
  if (*hi - *lo > options_.tolerance) {
    if (auto it = prompts_.find(prompt_id); it != prompts_.end()) prompts_.erase(it);  // z ← 0
    return Status::Ok();
  }
  const bool easy = mean > options_.correct_threshold;
  ++(easy ? window_easy_ : window_hard_);
  PromptState& s = prompts_[std::string(prompt_id)];
  ++s.streak;
  s.easy = easy;
  return Status::Ok();
}

void GresoCurator::OnVersion(int64_t /*version*/) {
  if (armed() && window_outcomes_ > 0) {
    const auto n = static_cast<double>(window_outcomes_);
    auto step = [&](double p, double ratio, double target) {
      const double next = ratio >= target ? p - options_.delta_p : p + options_.delta_p;
      return std::clamp(next, options_.p_min, options_.p_max);
    };
    p_easy_ = step(p_easy_, static_cast<double>(window_easy_) / n, options_.alpha_easy);
    p_hard_ = step(p_hard_, static_cast<double>(window_hard_) / n, options_.alpha_hard);
  }
  window_outcomes_ = 0;
  window_easy_ = 0;
  window_hard_ = 0;
}

nlohmann::json GresoCurator::Serialize() const {
  nlohmann::json prompts = nlohmann::json::object();
  for (const auto& [id, s] : prompts_) prompts[id] = {{"streak", s.streak}, {"easy", s.easy}};
  return {
      {"type", "greso"},
      {"pEasy", p_easy_},
      {"pHard", p_hard_},
      {"outcomes", outcomes_},
      {"window", {{"outcomes", window_outcomes_}, {"easy", window_easy_}, {"hard", window_hard_}}},
      {"prompts", std::move(prompts)}};
}

Status GresoCurator::Deserialize(const nlohmann::json& state) {
  SLUICE_RETURN_IF_ERROR(CheckType(state, "greso"));
  double p_easy = 0;
  double p_hard = 0;
  int64_t outcomes = 0;
  int64_t window_outcomes = 0;
  int64_t window_easy = 0;
  int64_t window_hard = 0;
  SLUICE_RETURN_IF_ERROR(ReadNumber(state, "pEasy", "state", p_easy));
  SLUICE_RETURN_IF_ERROR(ReadNumber(state, "pHard", "state", p_hard));
  if (!InUnit(p_easy)) return Status::InvalidArgument("must be in [0, 1]", "state.pEasy");
  if (!InUnit(p_hard)) return Status::InvalidArgument("must be in [0, 1]", "state.pHard");
  SLUICE_RETURN_IF_ERROR(ReadCount(state, "outcomes", "state", outcomes));
  auto window = state.find("window");
  if (window == state.end() || !window->is_object()) {
    return Status::InvalidArgument("must be an object", "state.window");
  }
  SLUICE_RETURN_IF_ERROR(ReadCount(*window, "outcomes", "state.window", window_outcomes));
  SLUICE_RETURN_IF_ERROR(ReadCount(*window, "easy", "state.window", window_easy));
  SLUICE_RETURN_IF_ERROR(ReadCount(*window, "hard", "state.window", window_hard));
  if (window_easy + window_hard > window_outcomes) {
    return Status::InvalidArgument("easy + hard exceeds outcomes", "state.window");
  }
  SLUICE_ASSIGN_OR_RETURN(const nlohmann::json* prompts, ReadPrompts(state));
  std::map<std::string, PromptState, std::less<>> parsed;
  for (const auto& el : prompts->items()) {
    const std::string where = "state.prompts." + el.key();
    const nlohmann::json& v = el.value();
    if (!v.is_object()) return Status::InvalidArgument("must be an object", where);
    PromptState s;
    SLUICE_RETURN_IF_ERROR(ReadCount(v, "streak", where, s.streak));
    auto easy = v.find("easy");
    if (easy == v.end() || !easy->is_boolean()) {
      return Status::InvalidArgument("must be a boolean", where + ".easy");
    }
    s.easy = easy->get<bool>();
    if (s.streak > 0) parsed.emplace(el.key(), s);
  }
  p_easy_ = p_easy;
  p_hard_ = p_hard;
  outcomes_ = outcomes;
  window_outcomes_ = window_outcomes;
  window_easy_ = window_easy;
  window_hard_ = window_hard;
  prompts_ = std::move(parsed);
  return Status::Ok();
}

// --- factory

Result<std::unique_ptr<PromptCurator>> MakeCurator(std::string_view type,
                                                   const nlohmann::json& options) {
  auto created = JsonOptions::Create(options);
  if (!created.ok()) return created.status();
  JsonOptions& r = *created;
  std::unique_ptr<PromptCurator> curator;
  if (type == "accept-all") {
    SLUICE_RETURN_IF_ERROR(r.RejectUnknown());
    curator = std::make_unique<AcceptAllCurator>();
  } else if (type == "filter-solved") {
    FilterSolvedOptions o;
    SLUICE_RETURN_IF_ERROR(r.Double("threshold", o.threshold));
    SLUICE_RETURN_IF_ERROR(r.Double("decay", o.decay));
    SLUICE_RETURN_IF_ERROR(r.Double("prior", o.prior));
    SLUICE_RETURN_IF_ERROR(r.Int("minAttempts", o.min_attempts));
    SLUICE_RETURN_IF_ERROR(r.Double("successThreshold", o.success_threshold));
    SLUICE_RETURN_IF_ERROR(r.RejectUnknown());
    SLUICE_RETURN_IF_ERROR(ValidateFilterSolvedOptions(o));
    curator = std::make_unique<FilterSolvedCurator>(o);
  } else if (type == "greso") {
    GresoOptions o;
    SLUICE_RETURN_IF_ERROR(r.Double("minSubmitEasy", o.min_submit_easy));
    SLUICE_RETURN_IF_ERROR(r.Double("minSubmitHard", o.min_submit_hard));
    SLUICE_RETURN_IF_ERROR(r.Double("correctThreshold", o.correct_threshold));
    SLUICE_RETURN_IF_ERROR(r.Double("alphaEasy", o.alpha_easy));
    SLUICE_RETURN_IF_ERROR(r.Double("alphaHard", o.alpha_hard));
    SLUICE_RETURN_IF_ERROR(r.Double("deltaP", o.delta_p));
    SLUICE_RETURN_IF_ERROR(r.Double("pMin", o.p_min));
    SLUICE_RETURN_IF_ERROR(r.Double("pMax", o.p_max));
    SLUICE_RETURN_IF_ERROR(r.Double("pEasyInit", o.p_easy_init));
    SLUICE_RETURN_IF_ERROR(r.Double("pHardInit", o.p_hard_init));
    SLUICE_RETURN_IF_ERROR(r.Int("warmupOutcomes", o.warmup_outcomes));
    SLUICE_RETURN_IF_ERROR(r.Double("tolerance", o.tolerance));
    SLUICE_RETURN_IF_ERROR(r.RejectUnknown());
    SLUICE_RETURN_IF_ERROR(ValidateGresoOptions(o));
    curator = std::make_unique<GresoCurator>(o);
  } else {
    return Status::InvalidArgument(
        "unknown curator type '" + std::string(type) + "' (want accept-all, filter-solved, greso)",
        "type");
  }
  return curator;
}

}  // namespace sluice::dataflow
