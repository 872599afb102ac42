// The replay driver of the fuzz targets in builds without libFuzzer (GCC, or clang without
// SLUICE_FUZZ): runs LLVMFuzzerTestOneInput once on each file named on the command line, and on
// each file inside each directory named there. ctest runs every target's seed corpus through it
// (tests/fuzz/CMakeLists.txt), so the targets keep compiling and their seeds keep passing in the
// everyday build; a crash a fuzzer found replays the same way, under gdb or GCC's sanitizers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size);

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  std::printf("ok %s (%zu bytes)\n", path.c_str(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(arg, error)) {
      // Sorted, so a replay's order (and a crash's position in it) is the same on every machine.
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        if (!RunFile(file)) return 1;
        ++inputs;
      }
    } else {
      if (!RunFile(arg)) return 1;
      ++inputs;
    }
  }
  if (inputs == 0) {
    // A target whose seeds went missing would otherwise pass while testing nothing.
    std::fprintf(stderr, "no inputs: name seed files or directories holding them\n");
    return 1;
  }
  std::printf("%zu inputs replayed\n", inputs);
  return 0;
}
