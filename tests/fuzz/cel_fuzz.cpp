// libFuzzer target for the CEL subset of CRD validation rules (common/cel/program.h: Compile,
// Program::Eval and Program::EvalRule; the parser and evaluator behind them).
//
// Each input is an expression, compiled, then evaluated against a small fixed object as `self`
// (and another as `oldSelf`) under a step budget far below the default, so every input is cheap.
// Invariants:
//  - compile errors are InvalidArgument; evaluation errors are InvalidArgument or TooLarge
//    (Internal would mean an exception inside the evaluator);
//  - EvalRule and Eval agree: a rule is true or false exactly when the value is that bool, and
//    they fail the same way when the evaluation itself fails;
//  - an evaluation that did not run out of steps gives the same result with a larger budget;
//  - an expression that does not use oldSelf evaluates the same with and without one.
// matches() is fuzzed too: its searches run under a step limit (common/cel/regex.h), which this
// target made necessary (std::regex, used before, backtracked without bound).
//
// Fuzz it with `scripts/fuzz.sh cel [seconds]` (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/cel/program.h"
#include "common/status.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using nlohmann::json;
using sluice::Result;
using sluice::StatusCode;
using sluice::cel::Program;

constexpr size_t kMaxInputBytes = 16 * 1024;
constexpr uint64_t kSteps = 20'000;

using sluice::fuzz::Require;

// A spec as the CRDs' rules see it: every JSON kind, nesting, names that need escaping.
const json& Self() {
  static const json self = json::parse(R"({
    "replicas": 3, "steps": 100, "warmupSteps": 10, "ratio": 0.25, "enabled": true,
    "name": "trainer-0", "mode": "delta", "nothing": null, "big": 18446744073709551615,
    "negative": -9223372036854775808, "tags": ["a", "b", "c"], "empty": {}, "emptyList": [],
    "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
    "optimizer": {"lr": 1e-5, "warmupSteps": 10, "type": "adamw"},
    "containers": [{"name": "main", "image": "busybox:1", "ports": [80, 443]},
                   {"name": "sidecar", "env": [{"name": "A", "value": "1"}]}],
    "x-dash": "d", "namespace": "ml", "unicode": "h\u00e9llo \u2713"
  })");
  return self;
}

const json& OldSelf() {
  static const json old = [] {
    json o = Self();
    o["replicas"] = 2;
    o["tags"] = json::array({"a"});
    o.erase("mode");
    return o;
  }();
  return old;
}

// A result as comparable text (dump with replacement: strings built from the input need not be
// valid UTF-8), or the status.
std::string Render(const Result<json>& r) {
  if (!r.ok()) return "error " + r.status().ToString();
  return r->dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxInputBytes) return 0;
  const std::string_view expr(reinterpret_cast<const char*>(bytes), size);

  Result<Program> program = sluice::cel::Compile(expr);
  if (!program.ok()) {
    Require(program.status().code() == StatusCode::kInvalidArgument,
            "compile errors are InvalidArgument");
    return 0;
  }
  Require(program->expression() == expr, "a program keeps its expression");

  const json& self = Self();
  const Result<json> value = program->Eval(self, nullptr, kSteps);
  if (!value.ok()) {
    const StatusCode code = value.status().code();
    Require(code == StatusCode::kInvalidArgument || code == StatusCode::kTooLarge,
            "evaluation errors are InvalidArgument or TooLarge");
  }

  const Result<bool> rule = program->EvalRule(self, nullptr, kSteps);
  if (rule.ok()) {
    Require(value.ok() && value->is_boolean() && value->get<bool>() == *rule,
            "a rule's verdict is its value");
  } else if (value.ok() && value->is_boolean()) {
    Require(false, "a bool value is a verdict");
  } else if (rule.status().message().rfind("validation rule must evaluate to a bool", 0) != 0) {
    // The evaluation itself failed (the value was no bool otherwise): Eval reports the same.
    Require(rule.status() == value.status(), "EvalRule fails as Eval does");
  }

  const std::string rendered = Render(value);
  if (value.ok() || value.status().code() != StatusCode::kTooLarge) {
    // Never over the budget, so never near it: more steps change nothing.
    Require(Render(program->Eval(self, nullptr, 4 * kSteps)) == rendered,
            "a larger budget does not change a finished evaluation");
  }
  if (!program->UsesOldSelf()) {
    Require(Render(program->Eval(self, &OldSelf(), kSteps)) == rendered,
            "oldSelf does not matter to an expression without it");
  }
  return 0;
}
