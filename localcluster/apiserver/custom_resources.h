// Custom resources and their definitions, as the local API server checks them on every write:
// the CRD itself (structural schemas, names) and its status (NamesAccepted, Established), and
// each custom resource against its CRD version's schema: pruning of unknown fields (or their
// rejection under fieldValidation=Strict), defaults, schema validation, then CEL rules.
//
// Thread safety: pure functions (compiled CEL rules are cached process-wide).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/openapi/field_error.h"
#include "common/status.h"

namespace sluice::apiserver {

// The fieldValidation query parameter. kube's default, for an absent parameter, is Warn.
enum class FieldValidation { kIgnore, kWarn, kStrict };
// "", "Ignore", "Warn", "Strict"; anything else is InvalidArgument naming the parameter.
Result<FieldValidation> ParseFieldValidation(std::string_view value);

// kube's answer to unknown fields under fieldValidation=Strict, InvalidArgument (400 BadRequest):
//   `<kind> in version "<version>" cannot be handled as a <kind>: strict decoding error:
//   unknown field "spec.a", unknown field "spec.b"`.
Status StrictDecodingError(std::string_view kind, std::string_view version,
                           const std::vector<std::string>& unknown_paths);

// spec.versions[name=version].schema.openAPIV3Schema, or nullptr.
const nlohmann::json* CrdVersionSchema(const nlohmann::json& crd, std::string_view version);

struct CustomResourceCheck {
  // Status to answer when non-OK: BadRequest for unknown fields under Strict (kube's "strict
  // decoding error" wording), otherwise OK and `errors` says whether it is valid.
  Status decode_error;
  openapi::FieldErrors errors;             // Non-empty: answer 422 Invalid with these causes.
  std::vector<std::string> warnings;       // `unknown field "spec.x"` under Warn: Warning headers.
  std::vector<std::string> skipped_rules;  // CEL rules the evaluator could not run: log them.
};

// Prunes, defaults and validates `object` in place (a custom resource of `crd` at `version`).
// `old_object` is the stored object on update (transition rules), nullptr on create. Metadata
// is the caller's (names are checked by ValidateName).
CustomResourceCheck CheckCustomResource(const nlohmann::json& crd, std::string_view version,
                                        nlohmann::json& object, const nlohmann::json* old_object,
                                        FieldValidation mode);

// Problems with a CustomResourceDefinition's own spec beyond what the registry checks (names,
// versions, scope), with kube-apiserver's field paths and messages: each version's schema must
// be structural (apiextensions.k8s.io/v1 rules, openapi::CheckStructural), and once it is, its
// defaults must pass their own CEL rules (crd_schema_checks.h, CheckDefaultRules); exactly one
// version must be the storage version, and every served version needs a schema. Unknown schema
// fields are the decoding step's (DecodeCrdSchemas). CEL rules on defaults that the evaluator
// cannot run are appended to `skipped_rules` (when non-null) for the caller to log.
openapi::FieldErrors ValidateCrdSpec(const nlohmann::json& crd,
                                     std::vector<std::string>* skipped_rules = nullptr);

// The status a CRD gets once accepted: acceptedNames = spec.names (with listKind and singular
// filled in), conditions NamesAccepted and Established True (lastTransitionTime kept from
// `previous_status` when already true), storedVersions including the storage version.
nlohmann::json AcceptedCrdStatus(const nlohmann::json& crd, const nlohmann::json& previous_status,
                                 Clock::WallTime now);

}  // namespace sluice::apiserver
