// StartProgram: the start every Sluice binary shares. It parses the command line (flags >
// environment > YAML config file > defaults), answers --help and --version on stdout, and sets the
// JSON log level from --log-level when the program has that flag.
//
// Usage:
//   int exit_code = 0;
//   std::optional<config::Config> cfg = config::StartProgram(spec, argc, argv, "sluice-x",
//                                                            "What sluice-x does.", &exit_code);
//   if (!cfg) return exit_code;
//
// Thread safety: call once, from main, before starting threads.
#pragma once

#include <optional>
#include <string_view>

#include "common/config/config.h"
#include "common/config/spec.h"

namespace sluice::config {

// The program's version, printed by --version.
inline constexpr std::string_view kSluiceVersion = "0.1.0";

// The parsed config; or nullopt with *exit_code set: 0 after --help or --version, 2 after a bad
// flag or config file (printed on stderr as "<program>: <message>").
std::optional<Config> StartProgram(const Spec& spec, int argc, char** argv,
                                   std::string_view program, std::string_view description,
                                   int* exit_code);

}  // namespace sluice::config
