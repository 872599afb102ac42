// Loading every document of a YAML stream, around a hang in Debian's yaml-cpp 0.7.
//
// yaml-cpp before 0.8 loops forever in YAML::LoadAll, allocating a null document per turn, when
// a stream has a ',' where a new document would start (`,`, `"a",`, `--- ,`): the parser meets a
// token no rule takes, reports a null node without consuming it, and starts the next document at
// the same token (yaml-cpp issue 1040, fixed upstream in 2024). Seven bytes held a thread and all
// memory (found by tests/fuzz/yaml_config_fuzz.cpp). LoadAllDocuments first walks the stream's
// events with yaml-cpp's own parser and refuses it when a document starts where the previous one
// did, then loads it.
//
// Thread safety: pure function.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>
#include <vector>

namespace sluice::yaml {

// YAML::LoadAll(text), or the exception it would throw for a syntax error; a stream that would
// hang it throws YAML::ParserException at the offending token ("unexpected ','...").
std::vector<YAML::Node> LoadAllDocuments(std::string_view text);

}  // namespace sluice::yaml
