// The local API server's access token: one shared bearer token that kubectl, the operator and
// the node agent present (it stands in for kube's service-account and user credentials).
//
// Kept in a file under the state directory so it survives restarts and existing kubeconfigs
// keep working; generated on first start.
//
// Thread safety: stateless; concurrent first starts agree on one token (the file is created
// exclusively).
#pragma once

#include <string>

#include "common/status.h"

namespace sluice::apiserver {

// The token in `path`, surrounding whitespace trimmed; an error if the file exists but holds no
// token (delete it to get a new one). When the file does not exist, generates 32 random bytes
// (OpenSSL's RAND_bytes) written as 64 lowercase hex digits, stores them with mode 0600
// (atomically) and returns them.
Result<std::string> EnsureAccessToken(const std::string& path);

// 32 random bytes (RAND_bytes) as 64 lowercase hex digits: a fresh token or signing key.
Result<std::string> NewRandomSecret();

}  // namespace sluice::apiserver
