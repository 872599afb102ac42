#include "common/config/program_start.h"

#include <iostream>
#include <string>

#include "common/config/environment.h"
#include "common/config/help.h"
#include "common/config/parse.h"
#include "common/logging/level.h"

namespace sluice::config {

std::optional<Config> StartProgram(const Spec& spec, int argc, char** argv,
                                   std::string_view program, std::string_view description,
                                   int* exit_code) {
  *exit_code = 0;
  Result<Config> cfg = Parse(spec, argc, argv, EnvironmentFromProcess());
  if (!cfg.ok()) {
    std::cerr << program << ": " << cfg.status().message() << "\n";
    *exit_code = 2;
    return std::nullopt;
  }
  if (cfg->HelpRequested()) {
    std::cout << HelpText(spec, std::string(program), std::string(description));
    return std::nullopt;
  }
  if (cfg->VersionRequested()) {
    std::cout << program << " " << kSluiceVersion << "\n";
    return std::nullopt;
  }
  if (spec.Find("log-level") != nullptr) {
    // The option is an Enum of the level names, so parsing cannot fail here.
    log::SetMinLevel(log::ParseLevel(cfg->GetString("log-level")).value());
  }
  return std::move(*cfg);
}

}  // namespace sluice::config
