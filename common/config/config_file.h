// Config file: reads a YAML configuration file into raw values keyed by option flag.
//
// The file is a map whose keys are the options' YAML key paths, nested at the dots:
//
//   replicas: 3
//   http:
//     listenAddress: ":8080"
//   peers: [a, b]
//
// Shape problems are reported for the whole file, whichever options win in the end: unknown keys
// (with a did-you-mean), a map or list where a value is expected, a value where a section is
// expected, duplicate keys, YAML syntax errors (with line and column). A null value (`key:` or
// `key: ~`) counts as not set. Values are not parsed here; see RawValue.
//
// Thread safety: pure functions apart from reading the file.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/raw_value.h"
#include "common/config/spec.h"

namespace sluice::config {

struct ConfigFileContents {
  std::map<std::string, RawValue, std::less<>> values;  // By option flag.
  // Complete messages, each naming the file: `file c.yaml: unknown key "htp" (did you mean ...)`.
  std::vector<std::string> errors;
  // The file could not be read or parsed at all, so it may hold settings that were not seen.
  bool unreadable = false;
};

// Reads and parses the file at `path`; an unreadable file is one error.
ConfigFileContents ReadConfigFile(const Spec& spec, const std::string& path);

// Parses YAML text; `file_name` is used in messages only.
ConfigFileContents ParseConfigYaml(const Spec& spec, std::string_view yaml,
                                   std::string_view file_name);

}  // namespace sluice::config
