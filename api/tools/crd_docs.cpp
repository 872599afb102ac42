// crd_docs: renders docs/api.md from the CustomResourceDefinitions in crds/.
//
// Usage:
//   crd_docs <crd-dir> <output.md>           write the reference
//   crd_docs --check <crd-dir> <output.md>   exit 1 (and say so) if <output.md> differs
//
// Every *.yaml file in <crd-dir> is read (in name order); each document in it whose kind is
// CustomResourceDefinition is rendered by sluice::api::RenderApiReference. Exit status: 0 on
// success, 1 when --check finds a difference, 2 on a usage, read or render error.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "api/crds/crd_reference.h"

namespace {

int Usage() {
  std::cerr << "usage: crd_docs [--check] <crd-dir> <output.md>\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  bool check = false;
  if (!args.empty() && args.front() == "--check") {
    check = true;
    args.erase(args.begin());
  }
  if (args.size() != 2) return Usage();
  const std::filesystem::path dir(args[0]);
  const std::filesystem::path output(args[1]);

  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  if (ec) {
    std::cerr << "crd_docs: reading " << dir << ": " << ec.message() << "\n";
    return 2;
  }
  std::sort(files.begin(), files.end());

  std::vector<YAML::Node> crds;
  for (const auto& file : files) {
    try {
      for (const auto& doc : YAML::LoadAllFromFile(file.string())) {
        if (doc.IsMap() && doc["kind"].IsDefined() &&
            doc["kind"].Scalar() == "CustomResourceDefinition") {
          crds.push_back(doc);
        }
      }
    } catch (const YAML::Exception& e) {
      std::cerr << "crd_docs: " << file.string() << ": " << e.what() << "\n";
      return 2;
    }
  }
  if (crds.empty()) {
    std::cerr << "crd_docs: no CustomResourceDefinition in " << dir << "\n";
    return 2;
  }

  auto rendered = sluice::api::RenderApiReference(crds);
  if (!rendered.ok()) {
    std::cerr << "crd_docs: " << rendered.status().ToString() << "\n";
    return 2;
  }

  if (check) {
    std::ifstream in(output, std::ios::binary);
    std::string current((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (current != *rendered) {
      std::cerr << "crd_docs: " << output.string() << " is out of date; run: crd_docs "
                << dir.string() << " " << output.string() << "\n";
      return 1;
    }
    return 0;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out << *rendered;
  out.close();
  if (!out) {
    std::cerr << "crd_docs: writing " << output.string() << " failed\n";
    return 2;
  }
  return 0;
}
