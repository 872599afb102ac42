#include "common/config/environment.h"

#include <string_view>

extern "C" char**
    environ;  // POSIX; declared here because <unistd.h> only has it under _GNU_SOURCE.

namespace sluice::config {

Environment EnvironmentFromProcess() {
  Environment env;
  if (environ == nullptr) return env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

}  // namespace sluice::config
