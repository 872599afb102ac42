// Environment: the process environment as a map, read once in main and passed down.
//
// Code below main never calls getenv, so tests inject any environment they like and no component
// depends on hidden global state.
//
// Thread safety: EnvironmentFromProcess reads `environ`; call it from main before other threads
// might call setenv. The returned map is a plain value.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace sluice::config {

using Environment = std::map<std::string, std::string, std::less<>>;

// A copy of the process environment. Entries without '=' are skipped.
Environment EnvironmentFromProcess();

}  // namespace sluice::config
