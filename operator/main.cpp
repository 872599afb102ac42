// sluice-operator: reconciles Sluice's custom resources into the pods, services and other objects
// that run an experiment (docs/operator.md). The flags are operator_flags.h's; what the program
// does, and its exit statuses, operator_program.h's.
#include "operator/operator_program.h"

int main(int argc, char** argv) { return sluice::op::RunOperator(argc, argv); }
