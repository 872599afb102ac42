// sluice-trainer's flags (also SLUICE_TRAINER_* environment variables and a --config flags file:
// common/config) and the two readings of them the program makes before it starts.
//
// Pure functions. Thread safety: values only.
#pragma once

#include <string>

#include "common/config/config.h"
#include "common/config/spec.h"

namespace sluice::trainer {

// Every flag of sluice-trainer, with the serving flags of common/service.
config::Spec TrainerFlagSpec();

// The worker contract names trainer.json with --config, which the config library reserves for a
// flags file: takes it (--config=PATH or --config PATH) out of argv (argc shrinks) and returns it;
// /etc/sluice/config/trainer.json when absent.
std::string TakeTrainerConfig(int& argc, char** argv);

// The export root: --export-dir, else <checkpoint-dir>/exports, else none ("").
std::string ExportRoot(const config::Config& cfg);

}  // namespace sluice::trainer
