#include "localcluster/cli/eval_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace sluice::cli {
namespace {

// The workflow whose non-primary policy is a verifier, rewarded for agreeing.
constexpr char kSolveAndVerify[] = "solve-and-verify";

// "12.5%", or "n/a" for a figure the round does not have.
std::string Percent(const std::optional<double>& share) {
  return share && std::isfinite(*share) ? FormatPercent(*share) + "%" : "n/a";
}

const EvalPolicyView* FindPolicy(const EvalPoint& point, const std::string& name) {
  for (const EvalPolicyView& p : point.policies) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string AccuracyLine(const EvalSpan& s) {
  if (s.first.version == s.last.version) {
    return "eval accuracy: " + Percent(s.last.accuracy) + " at version " +
           std::to_string(s.last.version) + " (no later evaluation)";
  }
  return "eval accuracy: before " + Percent(s.first.accuracy) + " -> after " +
         Percent(s.last.accuracy) + " (versions " + std::to_string(s.first.version) + " -> " +
         std::to_string(s.last.version) + ")";
}

// One line per verifier entry of either round, the latest round's order first.
std::vector<std::string> AgreementLines(const EvalSpan& s) {
  if (s.workflow != kSolveAndVerify) return {};
  const bool two_rounds = s.first.version != s.last.version;
  std::vector<std::string> names;
  auto add = [&names](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const EvalPolicyView& p : s.last.policies) add(p.name);
  if (two_rounds) {
    for (const EvalPolicyView& p : s.first.policies) add(p.name);
  }
  std::vector<std::string> lines;
  for (const std::string& name : names) {
    std::string line = "verifier agreement";
    if (names.size() > 1) line += " (" + name + ")";
    const EvalPolicyView* before = two_rounds ? FindPolicy(s.first, name) : nullptr;
    const EvalPolicyView* after = FindPolicy(s.last, name);
    if (before != nullptr && after != nullptr) {
      line += ": before " + Percent(before->mean_reward) + " -> after " +
              Percent(after->mean_reward) + " (on correct answers " +
              Percent(before->mean_reward_when_correct) + " -> " +
              Percent(after->mean_reward_when_correct) + ", on wrong " +
              Percent(before->mean_reward_when_wrong) + " -> " +
              Percent(after->mean_reward_when_wrong) + ")";
    } else {
      // Only one of the rounds has it: the latest when it does, else the earliest.
      const EvalPolicyView* only = after != nullptr ? after : FindPolicy(s.first, name);
      const int64_t version = after != nullptr ? s.last.version : s.first.version;
      line += ": " + Percent(only->mean_reward) + " at version " + std::to_string(version) +
              " (on correct answers " + Percent(only->mean_reward_when_correct) + ", on wrong " +
              Percent(only->mean_reward_when_wrong) + ")";
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

// "" when neither round has a tool-call share.
std::string ToolCallLine(const EvalSpan& s) {
  const bool two_rounds = s.first.version != s.last.version;
  const std::optional<double>& before = s.first.tool_call_share;
  const std::optional<double>& after = s.last.tool_call_share;
  if (two_rounds && before && after) {
    return "tool calls: before " + Percent(before) + " -> after " + Percent(after);
  }
  if (after) {
    return "tool calls: " + Percent(after) + " at version " + std::to_string(s.last.version);
  }
  if (two_rounds && before) {
    return "tool calls: " + Percent(before) + " at version " + std::to_string(s.first.version);
  }
  return "";
}

}  // namespace

std::optional<EvalPoint> EvalPointOf(const DataflowView& view) {
  if (!view.eval_version || !view.eval_accuracy || !std::isfinite(*view.eval_accuracy)) {
    return std::nullopt;
  }
  return EvalPoint{*view.eval_version, *view.eval_accuracy, view.eval_tool_call_share,
                   view.eval_policies};
}

std::vector<EvalSpan> EvalSpans(const std::vector<DataflowView>& views) {
  std::vector<EvalSpan> spans;
  for (const DataflowView& view : views) {
    std::optional<EvalPoint> point = EvalPointOf(view);
    if (!point) continue;
    EvalSpan* span = nullptr;
    for (EvalSpan& s : spans) {
      if (s.dataflow == view.name) span = &s;
    }
    if (span == nullptr) {
      spans.push_back({view.name, view.workflow, *point, *point});
      continue;
    }
    span->workflow = view.workflow;
    // Strictly lower: the first view with the lowest version stays.
    if (point->version < span->first.version) span->first = *point;
    // At least as high: the last view with the highest version wins.
    if (point->version >= span->last.version) span->last = std::move(*point);
  }
  return spans;
}

std::string FormatPercent(double share) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f", share * 100);
  return buf;
}

std::string EvalSummary(const std::vector<DataflowView>& views) {
  const std::vector<EvalSpan> spans = EvalSpans(views);
  std::string out;
  for (const EvalSpan& s : spans) {
    std::vector<std::string> lines = {AccuracyLine(s)};
    for (std::string& line : AgreementLines(s)) lines.push_back(std::move(line));
    if (std::string tools = ToolCallLine(s); !tools.empty()) lines.push_back(std::move(tools));
    for (const std::string& line : lines) {
      out += line;
      if (spans.size() > 1) out += " [" + s.dataflow + "]";
      out += "\n";
    }
  }
  return out;
}

}  // namespace sluice::cli
