// Typed readers of the dataflow service's request input: keys of a JSON request body and query
// parameters. Every error is InvalidArgument naming the offending key in its field, so the HTTP
// layer answers 400 with {"error": {..., "field": "<key>"}} (common/http/json_body.h).
//
// Absent keys (and JSON null) leave `out` unchanged unless the key is required, so callers set
// defaults first. Query parameters are read from httplib's decoded parameters; a parameter given
// more than once is read from its first occurrence (QueryInt, QuerySeconds).
//
// Pure functions of their arguments; safe from any thread.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::dataflow {

// InvalidArgument(message) with `field` set.
Status BadField(std::string message, std::string field);

// JSON body keys: a string / an integer that fits int64 / a finite number of seconds >= 0 / a
// boolean.
Status ReadString(const nlohmann::json& j, const char* key, bool required, std::string& out);
Status ReadInt(const nlohmann::json& j, const char* key, bool required, int64_t& out);
Status ReadSeconds(const nlohmann::json& j, const char* key, double& out);
Status ReadBool(const nlohmann::json& j, const char* key, bool& out);
// "unknown field" naming the first key of `j` (an object) not in `known`.
Status RejectUnknownKeys(const nlohmann::json& j, std::initializer_list<std::string_view> known);

// Query parameters: a decimal integer (optional '-', no '+', no spaces) / a finite number of
// seconds >= 0.
Status QueryInt(const httplib::Params& params, const char* key, int64_t& out);
Status QuerySeconds(const httplib::Params& params, const char* key, double& out);

}  // namespace sluice::dataflow
