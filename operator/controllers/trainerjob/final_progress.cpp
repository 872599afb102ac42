#include "operator/controllers/trainerjob/final_progress.h"

#include <algorithm>

namespace sluice::controllers {

TrainerProgress ReportedProgress(TrainerProgress current, const std::string& phase,
                                 TrainerProgress reported) {
  if (phase.empty() || phase == "Initializing") return current;
  return {reported.step, std::max(current.version, reported.version)};
}

TrainerProgress FinalProgress(TrainerProgress reported, int64_t warm_steps, int64_t steps) {
  const int64_t floor = warm_steps + steps;
  if (reported.step >= steps) return {reported.step, std::max(reported.version, floor)};
  return {steps, std::max(floor, reported.version + (steps - reported.step))};
}

}  // namespace sluice::controllers
