// sluice-crd-codegen: regenerates api/generated/ from the CRDs compiled into it.
//
//   build/bin/sluice-crd-codegen [OUTPUT_DIR]     (default: api/generated)
//
// Run it after changing crds/*.yaml (and rebuild once, so the embedded CRDs are current);
// ApiCodegenTest fails while the committed files differ from what it writes.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "api/crds/codegen.h"
#include "api/crds/crds.h"

int main(int argc, char** argv) {
  const std::filesystem::path out_dir = argc > 1 ? argv[1] : "api/generated";
  if (argc > 2 ||
      (argc == 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help"))) {
    std::cout << "usage: sluice-crd-codegen [OUTPUT_DIR]\n";
    return argc > 2 ? 2 : 0;
  }
  std::filesystem::create_directories(out_dir);
  for (const sluice::api::ResourceKind& kind : sluice::api::Kinds()) {
    const sluice::api::GeneratedTypes types = sluice::api::GenerateTypes(kind);
    for (const auto& [ext, text] :
         {std::pair{".h", &types.header}, std::pair{".cpp", &types.source}}) {
      const std::filesystem::path path = out_dir / (types.file_stem + ext);
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << *text;
      if (!out) {
        std::cerr << "sluice-crd-codegen: cannot write " << path << "\n";
        return 1;
      }
      std::cout << "wrote " << path.string() << "\n";
    }
  }
  return 0;
}
