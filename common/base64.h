// Standard base64 (RFC 4648, "+/" alphabet), as Kubernetes writes Secret data and kubeconfig
// certificates.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice {

// With '=' padding.
std::string Base64Encode(std::string_view bytes);
// Accepts input with or without padding; whitespace (spaces, tabs, newlines) is ignored.
// InvalidArgument for a character outside the alphabet, data after padding, or a truncated
// quantum (a lone trailing character).
Result<std::string> Base64Decode(std::string_view text);

}  // namespace sluice
