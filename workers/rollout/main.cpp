// sluice-rollout: one replica of a RolloutPool (docs/rollout.md). The flags are rollout_flags.h's;
// what a replica does, and its exit statuses, backend/rollout_service.h's.
#include "common/service/service_main.h"
#include "workers/rollout/backend/rollout_service.h"
#include "workers/rollout/rollout_flags.h"

int main(int argc, char** argv) {
  using namespace sluice;
  const service::ServiceDefinition program{
      "sluice-rollout", "rollout",
      "One replica of a Sluice RolloutPool: leases tasks from the Dataflow, runs their "
      "workflows (single-turn, multi-turn with an environment, solve-and-verify) on the "
      "hosted policies, scores and submits them, and loads every new weight version the "
      "trainers announce. docs/rollout.md.",
      rollout::RolloutFlagSpec()};
  return service::RunService(program, argc, argv, rollout::ServeRollout);
}
