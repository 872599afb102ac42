// JsonOptions: reads a component's options from a JSON object (a CRD `options` map: a dataflow
// filter's or curator's, a reward's), with type checks and rejection of unknown keys, so a
// misspelt knob is an error rather than a silent default.
//
// Errors are InvalidArgument whose field is the option's name ("maxTokens") and whose message
// says what was expected and what came ("must be a boolean, got string"); callers prefix the
// field with where the object came from (PrefixField: "reward.options.maxTokens"). Absent keys
// leave the output unchanged, so outputs start at their defaults.
//
// Thread safety: a value; not synchronized.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice {

class JsonOptions {
 public:
  // `options` must be an object or null (read as {}); InvalidArgument (no field) otherwise.
  static Result<JsonOptions> Create(const nlohmann::json& options);

  Status Double(std::string_view key, double& out);  // Any JSON number.
  Status Int(std::string_view key, int64_t& out);    // An integer (2.0 is not accepted).
  Status Bool(std::string_view key, bool& out);
  Status String(std::string_view key, std::string& out);
  // InvalidArgument naming the first key that no reader asked for, and listing those asked.
  Status RejectUnknown() const;

 private:
  explicit JsonOptions(const nlohmann::json& options) : options_(options) {}
  const nlohmann::json* Find(std::string_view key);

  nlohmann::json options_;
  std::set<std::string, std::less<>> seen_;
};

// `status` with its field prefixed: ("filters[1].options", field "maxTokens") ->
// "filters[1].options.maxTokens"; a status without a field gets the prefix alone. OK stays OK.
Status PrefixField(const Status& status, std::string_view prefix);

}  // namespace sluice
