// sluice-trainer: one rank of the data-parallel gang that trains one Policy from the batches of
// one Dataflow (docs/trainer.md). The flags are trainer_flags.h's; what a rank does, and its exit
// statuses, torch/trainer_service.h's.
#include <string>

#include "common/service/service_main.h"
#include "workers/trainer/torch/trainer_service.h"
#include "workers/trainer/trainer_flags.h"

int main(int argc, char** argv) {
  using namespace sluice;
  const std::string trainer_config = trainer::TakeTrainerConfig(argc, argv);
  const service::ServiceDefinition program{
      "sluice-trainer", "trainer",
      "One rank of a Sluice trainer: trains a Policy on batches from its Dataflow (GRPO, PPO, "
      "DAPO, GSPO, M2PO, SFT) and, on rank 0, publishes every new weight version. "
      "--config=PATH names trainer.json (the TrainerJob, its Policy and its Dataflow; default "
      "/etc/sluice/config/trainer.json). docs/trainer.md.",
      trainer::TrainerFlagSpec()};
  return service::RunService(program, argc, argv, [&](service::Service& svc) {
    return trainer::ServeTrainer(svc, trainer_config);
  });
}
