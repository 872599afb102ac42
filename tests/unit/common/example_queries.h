// Test helper: do the example manifests scale on metrics that exist?
//
//   * ExampleQueries: every PromQL query of the manifests users copy (examples/*.yaml) and of
//     the valid test manifests (tests/data/manifests/valid/*.yaml): the string value of every
//     "query" field, which today means RolloutPool spec.autoscaling.metrics[].query.
//   * MetricNamesInQuery: the sluice_* metric names a query selects.
//   * RegisteredMetricNames: the sluice_* names the binaries' code registers, found by reading
//     the sources (common/, operator/, localcluster/, workers/): every complete string literal
//     that is a metric name, outside comments. Every family is registered with its name as a
//     literal (Add*("sluice_..."), the trainer's gauge("sluice_...") helper, the dataflow's
//     per-policy table), so renaming a metric removes the old name from this set.
//   * IsExportedName: a name of the set, or a histogram's _bucket/_sum/_count series of one.
//
// Components' own tests complement the scan with the live registry (the dataflow service's and
// the trainer status board's metrics::Registry), which also catches a literal left in the code
// that is no longer registered.
//
// Paths come from SLUICE_SOURCE_DIR (set by ctest), else the current directory.
// Thread safety: pure functions over files.
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/yaml/yaml_json.h"
#include "tests/unit/api/test_files.h"

namespace sluice::test_support {

// One PromQL query of a manifest.
struct ExampleQuery {
  std::string file;    // Relative to the source directory, e.g. "examples/gpu-cluster-qwen3.yaml".
  std::string object;  // "RolloutPool/qwen3-rollout".
  std::string field;   // "spec.autoscaling.metrics[0].query".
  std::string query;
};

struct ExampleQuerySet {
  std::vector<ExampleQuery> queries;  // Files in name order, documents and fields in file order.
  std::vector<std::string> errors;    // Files that could not be parsed, with why.
};

namespace example_queries_detail {

inline bool IsIdentifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
}
inline bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
}
inline bool IsCppIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The metric naming convention the Registry enforces (common/metrics/names.h), "sluice_" first.
inline bool IsSluiceMetricName(std::string_view s) {
  constexpr std::string_view kPrefix = "sluice_";
  if (s.size() <= kPrefix.size() || s.substr(0, kPrefix.size()) != kPrefix) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Skips a PromQL string literal ('...', "..." with backslash escapes, `...` raw) starting at
// `i`; returns its content and leaves `i` after the closing quote.
inline std::string ReadQuoted(std::string_view q, size_t& i) {
  const char quote = q[i++];
  std::string out;
  while (i < q.size() && q[i] != quote) {
    if (quote != '`' && q[i] == '\\' && i + 1 < q.size()) ++i;
    out.push_back(q[i++]);
  }
  if (i < q.size()) ++i;  // The closing quote.
  return out;
}

inline void CollectQueries(const nlohmann::json& node, const std::string& path,
                           const std::string& file, const std::string& object,
                           std::vector<ExampleQuery>& out) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string child = path.empty() ? it.key() : path + "." + it.key();
      if (it.key() == "query" && it->is_string()) {
        out.push_back({file, object, child, it->get<std::string>()});
      } else {
        CollectQueries(*it, child, file, object, out);
      }
    }
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      CollectQueries(node[i], path + "[" + std::to_string(i) + "]", file, object, out);
    }
  }
}

}  // namespace example_queries_detail

inline ExampleQuerySet ExampleQueries(
    const std::filesystem::path& root = testing_files::SourceDir()) {
  namespace fs = std::filesystem;
  ExampleQuerySet set;
  for (const char* dir : {"examples", "tests/data/manifests/valid"}) {
    std::vector<fs::path> files;
    if (!fs::exists(root / dir)) {
      set.errors.push_back(std::string(dir) + ": no such directory under " + root.string());
      continue;
    }
    for (const auto& entry : fs::directory_iterator(root / dir)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& path : files) {
      const std::string file = std::string(dir) + "/" + path.filename().string();
      Result<std::vector<nlohmann::json>> docs =
          yaml::ParseDocuments(testing_files::ReadFile(path));
      if (!docs.ok()) {
        set.errors.push_back(file + ": " + docs.status().ToString());
        continue;
      }
      for (const nlohmann::json& doc : *docs) {
        std::string object = "(document)";
        if (doc.is_object()) {
          object = doc.value("kind", "?");
          if (auto m = doc.find("metadata"); m != doc.end() && m->is_object()) {
            object += "/" + m->value("name", "?");
          }
        }
        example_queries_detail::CollectQueries(doc, "", file, object, set.queries);
      }
    }
  }
  return set;
}

// The sluice_* metric names `promql` selects, each once, in order of appearance. A small
// tokenizer, not a parser: string literals and # comments are skipped, and so are label names
// (inside {...} and in by/without/on/ignoring/group_left/group_right (...) lists) and durations;
// {__name__="sluice_x"} counts as sluice_x (regular-expression and negative matchers do not).
inline std::vector<std::string> MetricNamesInQuery(std::string_view promql) {
  using example_queries_detail::IsIdentifierChar;
  using example_queries_detail::IsIdentifierStart;
  std::vector<std::string> names;
  auto add = [&](const std::string& name) {
    if (example_queries_detail::IsSluiceMetricName(name) &&
        std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  };
  int braces = 0;              // Depth of label matcher braces.
  bool name_matcher = false;   // Inside braces, after __name__ and before its value.
  int label_list_parens = -1;  // Paren depth of a by(...)/on(...) list, -1 outside one.
  int parens = 0;
  bool expect_label_list = false;  // The previous identifier was by, without, on, ...
  size_t i = 0;
  while (i < promql.size()) {
    const char c = promql[i];
    if (c == '"' || c == '\'' || c == '`') {
      const std::string value = example_queries_detail::ReadQuoted(promql, i);
      if (name_matcher) add(value);
      name_matcher = false;
      expect_label_list = false;
      continue;
    }
    if (c == '#') {
      while (i < promql.size() && promql[i] != '\n') ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.') {
      // A number or a duration (5m, 1h30m, 1e3, 0x1f): no metric name inside.
      while (i < promql.size() && (IsIdentifierChar(promql[i]) || promql[i] == '.')) ++i;
      expect_label_list = false;
      continue;
    }
    if (IsIdentifierStart(c)) {
      const size_t start = i;
      while (i < promql.size() && IsIdentifierChar(promql[i])) ++i;
      const std::string word(promql.substr(start, i - start));
      if (braces > 0) {
        name_matcher = word == "__name__";
      } else if (label_list_parens < 0) {
        add(word);
      }
      expect_label_list = word == "by" || word == "without" || word == "on" || word == "ignoring" ||
                          word == "group_left" || word == "group_right";
      continue;
    }
    if (name_matcher && (c == '!' || c == '~')) name_matcher = false;  // Not an equality.
    if (c == '{') ++braces;
    if (c == '}' && braces > 0) {
      --braces;
      name_matcher = false;
    }
    if (c == '(') {
      ++parens;
      if (expect_label_list && label_list_parens < 0) label_list_parens = parens;
    }
    if (c == ')') {
      if (parens == label_list_parens) label_list_parens = -1;
      --parens;
    }
    if (std::isspace(static_cast<unsigned char>(c)) == 0) expect_label_list = false;
    if (c == '=' || c == '!' || c == '~') expect_label_list = false;
    ++i;
  }
  return names;
}

// The contents of the string literals of C++ source `code`, outside // and /* */ comments, in
// order. Handles escapes, character literals, digit separators (1'000) and raw strings
// (R"d(...)d", with an encoding prefix or not).
inline std::vector<std::string> CppStringLiterals(std::string_view code) {
  using example_queries_detail::IsCppIdentifierChar;
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = code.size();
  while (i < n) {
    const char c = code[i];
    if (c == '/' && i + 1 < n && code[i + 1] == '/') {
      while (i < n && code[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && code[i + 1] == '*') {
      const size_t end = code.find("*/", i + 2);
      i = end == std::string_view::npos ? n : end + 2;
      continue;
    }
    if (c == '"') {
      // A raw string when the word just before the quote is R, u8R, uR, UR or LR.
      size_t word = i;
      while (word > 0 && IsCppIdentifierChar(code[word - 1])) --word;
      const std::string_view prefix = code.substr(word, i - word);
      if (prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR") {
        const size_t open = code.find('(', i + 1);
        if (open == std::string_view::npos) break;
        const std::string close = ")" + std::string(code.substr(i + 1, open - i - 1)) + "\"";
        const size_t end = code.find(close, open + 1);
        const size_t stop = end == std::string_view::npos ? n : end;
        out.emplace_back(code.substr(open + 1, stop - open - 1));
        i = end == std::string_view::npos ? n : end + close.size();
        continue;
      }
      std::string literal;
      ++i;
      while (i < n && code[i] != '"' && code[i] != '\n') {
        if (code[i] == '\\' && i + 1 < n) {
          literal.push_back(code[i]);
          ++i;
        }
        literal.push_back(code[i++]);
      }
      ++i;  // The closing quote.
      out.push_back(std::move(literal));
      continue;
    }
    if (c == '\'') {
      // A digit separator when the token it is in starts with a digit; else a character literal.
      size_t word = i;
      while (word > 0 && (IsCppIdentifierChar(code[word - 1]) || code[word - 1] == '\'' ||
                          code[word - 1] == '.')) {
        --word;
      }
      if (word < i && std::isdigit(static_cast<unsigned char>(code[word])) != 0) {
        ++i;
        continue;
      }
      ++i;
      while (i < n && code[i] != '\'' && code[i] != '\n') i += code[i] == '\\' ? 2U : 1U;
      ++i;
      continue;
    }
    ++i;
  }
  return out;
}

// Every sluice_* metric name the code under `root` registers (see the header comment), with
// the first file (relative to `root`) that has it.
inline std::map<std::string, std::string> RegisteredMetricNames(
    const std::filesystem::path& root = testing_files::SourceDir()) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> names;
  for (const char* dir : {"common", "operator", "localcluster", "workers"}) {
    if (!fs::exists(root / dir)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && (ext == ".cpp" || ext == ".h" || ext == ".cc")) {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& path : files) {
      for (std::string& literal : CppStringLiterals(testing_files::ReadFile(path))) {
        if (!example_queries_detail::IsSluiceMetricName(literal)) continue;
        names.emplace(std::move(literal), fs::relative(path, root).string());
      }
    }
  }
  return names;
}

// Whether `name` is exported: registered as is, or a series of a registered histogram.
inline bool IsExportedName(const std::string& name,
                           const std::map<std::string, std::string>& registered) {
  if (registered.count(name) != 0) return true;
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() &&
        std::string_view(name).substr(name.size() - suffix.size()) == suffix &&
        registered.count(name.substr(0, name.size() - suffix.size())) != 0) {
      return true;
    }
  }
  return false;
}

}  // namespace sluice::test_support
