// Test helper for the end-to-end training runs: an example manifest from examples/, shortened by
// exact text edits. The example is edited, not copied: if it changes so that an edit no longer
// applies, the test fails naming the edit, instead of silently testing something else than the
// example users run.
//
// Thread safety: functions over their arguments and the source tree; no shared state.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/apiserver_process.h"
#include "tests/support/read_file.h"

namespace sluice::e2e {

struct Edit {
  std::string from, to;
};

inline std::string ReadFile(const std::string& path) { return test_support::ReadFileOrEmpty(path); }

// Replaces `from` when it occurs exactly once in `text`; false (text unchanged) otherwise.
inline bool ReplaceOnce(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) return false;
  text.replace(at, from.size(), to);
  return true;
}

// examples/<stem>.yaml with `edits` applied, once kubectl and every binary a training run needs
// are there. Fails naming what is missing, or an edit that no longer applies.
inline ::testing::AssertionResult EditedExample(const std::string& stem,
                                                const std::vector<Edit>& edits,
                                                std::string* manifest) {
  if (!HaveKubectl()) {
    return ::testing::AssertionFailure()
           << KubectlBinary() << " is missing: this test drives the cluster with it";
  }
  for (const char* binary : {"sluice", "sluice-apiserver", "sluice-node", "sluice-operator",
                             "sluice-dataflow", "sluice-rollout", "sluice-trainer"}) {
    if (!std::filesystem::exists(BinDir() + "/" + binary)) {
      return ::testing::AssertionFailure() << binary << " is not built in " << BinDir();
    }
  }
  const std::string example = SourceDir() + "/examples/" + stem + ".yaml";
  *manifest = ReadFile(example);
  if (manifest->empty()) return ::testing::AssertionFailure() << example << " cannot be read";
  for (const Edit& e : edits) {
    if (!ReplaceOnce(*manifest, e.from, e.to)) {
      return ::testing::AssertionFailure() << example << " no longer holds exactly one \"" << e.from
                                           << "\": update this test's edits to the example";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace sluice::e2e
