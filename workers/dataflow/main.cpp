// sluice-dataflow: the data plane of one experiment (docs/dataflow.md). The flags are
// settings/dataflow_flags.h's; what the program does, and its exit statuses,
// program/dataflow_program.h's.
#include "common/service/service_main.h"
#include "workers/dataflow/program/dataflow_program.h"
#include "workers/dataflow/settings/dataflow_flags.h"

int main(int argc, char** argv) {
  using namespace sluice;
  const service::ServiceDefinition program{
      "sluice-dataflow", "dataflow",
      "The dataflow of one Sluice experiment: leases prompts to rollout workers, buffers their "
      "trajectories per policy and serves training batches, with a write-ahead log so that a "
      "restart loses nothing acknowledged. API and guarantees: docs/dataflow.md.",
      dataflow::DataflowFlagSpec()};
  return service::RunService(program, argc, argv, dataflow::ServeDataflow);
}
