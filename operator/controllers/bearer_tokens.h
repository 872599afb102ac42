// The bearer tokens the operator makes for its workers: random values, each in a Secret of its
// own that is created once and never rewritten (the workers re-read a token file that changes,
// but nothing rotates them yet: docs/security.md).
//
// Thread safety: RandomBearerToken reads std::random_device (safe from any thread); the rest are
// pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::controllers {

// 32 bytes from std::random_device, as 64 lower-case hex characters.
std::string RandomBearerToken();

// An Opaque Secret with `metadata` (name, namespace, labels, owner) and the key "token".
nlohmann::json BearerTokenSecret(const nlohmann::json& metadata, const std::string& token);

}  // namespace sluice::controllers
