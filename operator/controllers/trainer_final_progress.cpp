#include "operator/controllers/trainer_final_progress.h"

#include <algorithm>

namespace sluice::controllers {

TrainerProgress FinalProgress(TrainerProgress reported, int64_t warm_steps, int64_t steps) {
  const int64_t floor = warm_steps + steps;
  if (reported.step >= steps) return {reported.step, std::max(reported.version, floor)};
  return {steps, std::max(floor, reported.version + (steps - reported.step))};
}

}  // namespace sluice::controllers
