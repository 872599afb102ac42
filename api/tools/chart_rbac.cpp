// sluice-chart-rbac: writes the Helm chart's RBAC template from the operator's RBAC table.
//
//   build/bin/sluice-chart-rbac [OUTPUT]     (default: helm/sluice/templates/rbac.yaml)
//
// Run it from the repository root after changing OperatorRbacRules
// (api/operator_rbac.cpp) and rebuilding; ChartRbacTest fails while the committed
// template differs from what it writes.
#include <fstream>
#include <iostream>
#include <string>

#include "api/operator_rbac_chart.h"

int main(int argc, char** argv) {
  if (argc > 2 ||
      (argc == 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help"))) {
    std::cout << "usage: sluice-chart-rbac [OUTPUT]   (default: "
              << sluice::api::kChartRbacTemplatePath << ")\n";
    return argc > 2 ? 2 : 0;
  }
  const std::string path = argc == 2 ? argv[1] : sluice::api::kChartRbacTemplatePath;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << sluice::api::RenderChartRbacTemplate();
  out.close();
  if (!out) {
    std::cerr << "sluice-chart-rbac: cannot write " << path << "\n";
    return 1;
  }
  std::cout << "wrote " << path << "\n";
  return 0;
}
