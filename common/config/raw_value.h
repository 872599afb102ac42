// RawValue: the text given for one option by one source, before it is typed and checked.
//
// Flags, environment variables and the YAML file each produce RawValues; Parse picks the one with
// the highest precedence for each option and only then parses it, so a value that is overridden
// is never read (a stray variable cannot break a binary whose flag sets the same option).
//
// Thread safety: a value.
#pragma once

#include <string>
#include <vector>

#include "common/config/config.h"

namespace sluice::config {

struct RawValue {
  ValueSource source = ValueSource::kDefault;
  // How the user wrote it, to start error messages: "flag --replicas", "env SLUICE_X_REPLICAS",
  // "file config.yaml: key replicas".
  std::string origin;
  // Scalar options use the last text. List options use every text: each is comma-split when
  // split_commas (flags may repeat, env holds one), or is one item (YAML sequence elements).
  std::vector<std::string> texts;
  bool split_commas = true;
  // 1-based line in the file, 0 when not from a file.
  int line = 0;
};

}  // namespace sluice::config
