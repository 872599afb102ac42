// sluice: the command-line tool of the local cluster (up, down, status, node, logs, run, plot). See
// localcluster/cli/cli.h for the dispatcher and docs/local-cluster.md for the cluster.
#include <iostream>
#include <string>
#include <vector>

#include "common/config/environment.h"
#include "localcluster/cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return sluice::cli::RunCli(args, sluice::config::EnvironmentFromProcess(), std::cout, std::cerr);
}
