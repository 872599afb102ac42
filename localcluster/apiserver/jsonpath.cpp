#include "localcluster/apiserver/jsonpath.h"

#include <charconv>

namespace sluice::apiserver {
namespace {

using nlohmann::json;

struct Step {
  enum Kind { kField, kIndex, kAll } kind;
  std::string field;
  size_t index = 0;
};

Result<std::vector<Step>> Parse(std::string_view path) {
  // Tolerate the template braces kubectl users write: {.spec.replicas}.
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') {
    path = path.substr(1, path.size() - 2);
  }
  std::vector<Step> steps;
  size_t i = 0;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("JSONPath \"" + std::string(path) + "\": " + why + " at " +
                                   std::to_string(i));
  };
  if (path.empty() || path[0] != '.') return bad("must start with '.'");
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      const size_t start = i;
      while (i < path.size() && path[i] != '.' && path[i] != '[') ++i;
      if (i == start) {
        if (i == path.size() && steps.empty()) break;  // "." alone: the whole object.
        return bad("empty field name");
      }
      steps.push_back({Step::kField, std::string(path.substr(start, i - start)), 0});
    } else if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string_view::npos) return bad("unterminated '['");
      std::string_view inner = path.substr(i + 1, close - i - 1);
      if (inner == "*") {
        steps.push_back({Step::kAll, "", 0});
      } else if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') &&
                 inner.back() == inner.front()) {
        steps.push_back({Step::kField, std::string(inner.substr(1, inner.size() - 2)), 0});
      } else {
        size_t index = 0;
        auto [ptr, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), index);
        if (ec != std::errc() || ptr != inner.data() + inner.size()) {
          return bad("unsupported subscript [" + std::string(inner) +
                     "] (supported: [n], [*], ['key'])");
        }
        steps.push_back({Step::kIndex, "", index});
      }
      i = close + 1;
    } else {
      return bad("unexpected '" + std::string(1, path[i]) + "'");
    }
  }
  return steps;
}

}  // namespace

Result<std::vector<json>> EvalJsonPath(std::string_view path, const json& object) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<Step> steps, Parse(path));
  std::vector<const json*> current = {&object};
  for (const Step& step : steps) {
    std::vector<const json*> next;
    for (const json* v : current) {
      switch (step.kind) {
        case Step::kField:
          if (v->is_object()) {
            if (auto it = v->find(step.field); it != v->end()) next.push_back(&*it);
          }
          break;
        case Step::kIndex:
          if (v->is_array() && step.index < v->size()) next.push_back(&(*v)[step.index]);
          break;
        case Step::kAll:
          if (v->is_array() || v->is_object()) {
            for (const json& item : *v) next.push_back(&item);
          }
          break;
      }
    }
    current = std::move(next);
  }
  std::vector<json> out;
  out.reserve(current.size());
  for (const json* v : current) out.push_back(*v);
  return out;
}

}  // namespace sluice::apiserver
