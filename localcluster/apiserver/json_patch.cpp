#include "localcluster/apiserver/json_patch.h"

#include <cstddef>
#include <utility>

#include "common/go_quote.h"
#include "common/json/json_depth.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using Tokens = std::vector<std::string>;

Tokens Prefix(const Tokens& tokens, size_t n) {
  return Tokens(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n));
}

// Shortened JSON text of a value for messages.
std::string Brief(const json& v) {
  std::string s = v.dump();
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

// An array index token: "0" or digits without a leading zero. "-" is handled by callers.
Result<size_t> ArrayIndex(const std::string& token, const Tokens& parent_path) {
  bool digits = !token.empty() && token.size() <= 18 &&
                token.find_first_not_of("0123456789") == std::string::npos &&
                (token.size() == 1 || token[0] != '0');
  if (!digits) {
    return Status::Unprocessable("invalid array index " + GoQuote(token) + " in " +
                                 GoQuote(FormatJsonPointer(parent_path)));
  }
  return static_cast<size_t>(std::stoull(token));
}

// The node `tokens` names, or an Unprocessable status naming the first missing step.
Result<json*> Resolve(json& doc, const Tokens& tokens) {
  json* cur = &doc;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (cur->is_object()) {
      auto it = cur->find(t);
      if (it == cur->end()) {
        return Status::Unprocessable("unable to find key " + GoQuote(t) + " in " +
                                     GoQuote(FormatJsonPointer(Prefix(tokens, i))));
      }
      cur = &*it;
    } else if (cur->is_array()) {
      if (t == "-") {
        return Status::Unprocessable("index \"-\" refers past the end of the array at " +
                                     GoQuote(FormatJsonPointer(Prefix(tokens, i))));
      }
      SLUICE_ASSIGN_OR_RETURN(size_t idx, ArrayIndex(t, Prefix(tokens, i)));
      if (idx >= cur->size()) {
        return Status::Unprocessable("index " + t + " out of bounds for array of length " +
                                     std::to_string(cur->size()) + " at " +
                                     GoQuote(FormatJsonPointer(Prefix(tokens, i))));
      }
      cur = &(*cur)[idx];
    } else {
      return Status::Unprocessable("unable to find key " + GoQuote(t) + " in " +
                                   GoQuote(FormatJsonPointer(Prefix(tokens, i))) + ": a " +
                                   cur->type_name() + " has no members");
    }
  }
  return cur;
}

Status Add(json& doc, const Tokens& path, json value) {
  if (path.empty()) {
    doc = std::move(value);
    return Status::Ok();
  }
  Tokens parent_path = Prefix(path, path.size() - 1);
  SLUICE_ASSIGN_OR_RETURN(json * parent, Resolve(doc, parent_path));
  const std::string& last = path.back();
  if (parent->is_object()) {
    (*parent)[last] = std::move(value);
    return Status::Ok();
  }
  if (parent->is_array()) {
    if (last == "-") {
      parent->push_back(std::move(value));
      return Status::Ok();
    }
    SLUICE_ASSIGN_OR_RETURN(size_t idx, ArrayIndex(last, parent_path));
    if (idx > parent->size()) {
      return Status::Unprocessable("index " + last + " out of bounds for array of length " +
                                   std::to_string(parent->size()) + " at " +
                                   GoQuote(FormatJsonPointer(parent_path)));
    }
    parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(idx), std::move(value));
    return Status::Ok();
  }
  return Status::Unprocessable("unable to add key " + GoQuote(last) + " to " +
                               GoQuote(FormatJsonPointer(parent_path)) + ": a " +
                               parent->type_name() + " has no members");
}

Status Remove(json& doc, const Tokens& path) {
  if (path.empty()) return Status::Unprocessable("unable to remove the whole document");
  // Resolving the full path first gives the precise "unable to find" message.
  SLUICE_RETURN_IF_ERROR(Resolve(doc, path).status());
  Tokens parent_path = Prefix(path, path.size() - 1);
  json* parent = *Resolve(doc, parent_path);
  if (parent->is_object()) {
    parent->erase(path.back());
  } else {
    parent->erase(static_cast<size_t>(std::stoull(path.back())));
  }
  return Status::Ok();
}

bool IsProperPrefix(const Tokens& prefix, const Tokens& tokens) {
  if (prefix.size() >= tokens.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] != tokens[i]) return false;
  }
  return true;
}

// Applies one operation in place; the caller adds which operation it was to errors.
// `copied_bytes`: what the patch's copy operations have added so far, serialized; updated.
Status ApplyOperation(json& doc, const json& op, size_t& copied_bytes) {
  if (!op.is_object()) return Status::InvalidArgument("an operation must be a JSON object");
  auto op_it = op.find("op");
  if (op_it == op.end() || !op_it->is_string()) {
    return Status::InvalidArgument("missing string member \"op\"");
  }
  const std::string name = op_it->get<std::string>();
  if (name != "add" && name != "remove" && name != "replace" && name != "move" && name != "copy" &&
      name != "test") {
    return Status::InvalidArgument("unknown op " + GoQuote(name) +
                                   " (expected add, remove, replace, move, copy or test)");
  }
  auto path_it = op.find("path");
  if (path_it == op.end() || !path_it->is_string()) {
    return Status::InvalidArgument("missing string member \"path\"");
  }
  SLUICE_ASSIGN_OR_RETURN(Tokens path, ParseJsonPointer(path_it->get<std::string>()));
  auto value_it = op.find("value");
  if ((name == "add" || name == "replace" || name == "test") && value_it == op.end()) {
    return Status::InvalidArgument("missing member \"value\"");
  }
  Tokens from;
  if (name == "move" || name == "copy") {
    auto from_it = op.find("from");
    if (from_it == op.end() || !from_it->is_string()) {
      return Status::InvalidArgument("missing string member \"from\"");
    }
    SLUICE_ASSIGN_OR_RETURN(from, ParseJsonPointer(from_it->get<std::string>()));
  }

  // What an operation puts at `path` nests below path.size() containers: refuse it before it
  // is built when that is deeper than any body may be (a copy into its own child doubles the
  // depth, and copying a deep value recurses once per level).
  auto check_depth = [&](const json& placed) -> Status {
    if (path.size() + JsonValueDepth(placed) > kMaxJsonDepth) {
      return Status::InvalidArgument("the result would nest deeper than " +
                                     std::to_string(kMaxJsonDepth) + " levels at " +
                                     GoQuote(FormatJsonPointer(path)));
    }
    return Status::Ok();
  };
  if (name == "add" || name == "replace") SLUICE_RETURN_IF_ERROR(check_depth(*value_it));
  if (name == "add") return Add(doc, path, *value_it);
  if (name == "remove") return Remove(doc, path);
  if (name == "replace") {
    SLUICE_ASSIGN_OR_RETURN(json * node, Resolve(doc, path));
    *node = *value_it;
    return Status::Ok();
  }
  if (name == "test") {
    SLUICE_ASSIGN_OR_RETURN(json * node, Resolve(doc, path));
    if (*node != *value_it) {
      return Status::Unprocessable("test operation failed: value at " +
                                   GoQuote(FormatJsonPointer(path)) + " is " + Brief(*node) +
                                   ", expected " + Brief(*value_it));
    }
    return Status::Ok();
  }
  SLUICE_ASSIGN_OR_RETURN(json * source, Resolve(doc, from));
  SLUICE_RETURN_IF_ERROR(check_depth(*source));
  json value = *source;
  if (name == "copy") {
    // Each copy may double the document: a few dozen of them would take any memory there is.
    copied_bytes += value.dump().size();
    if (copied_bytes > kMaxJsonPatchCopiedBytes) {
      return Status::Unprocessable("the patch's copy operations add more than " +
                                   std::to_string(kMaxJsonPatchCopiedBytes) + " bytes");
    }
    return Add(doc, path, std::move(value));
  }
  // move
  if (from == path) return Status::Ok();
  if (IsProperPrefix(from, path)) {
    return Status::Unprocessable("unable to move " + GoQuote(FormatJsonPointer(from)) +
                                 " into its own child " + GoQuote(FormatJsonPointer(path)));
  }
  SLUICE_RETURN_IF_ERROR(Remove(doc, from));
  return Add(doc, path, std::move(value));
}

}  // namespace

Result<Tokens> ParseJsonPointer(std::string_view pointer) {
  Tokens tokens;
  if (pointer.empty()) return tokens;
  if (pointer[0] != '/') {
    return Status::InvalidArgument("JSON pointer " + GoQuote(pointer) +
                                   " must be empty or begin with '/'");
  }
  std::string cur;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    char c = pointer[i];
    if (c == '~') {
      char next = i + 1 < pointer.size() ? pointer[i + 1] : '\0';
      if (next != '0' && next != '1') {
        return Status::InvalidArgument("JSON pointer " + GoQuote(pointer) +
                                       " has an invalid escape: '~' must be followed by 0 or 1");
      }
      cur += next == '0' ? '~' : '/';
      ++i;
      continue;
    }
    cur += c;
  }
  return tokens;
}

std::string FormatJsonPointer(const Tokens& tokens) {
  std::string out;
  for (const std::string& t : tokens) {
    out += '/';
    for (char c : t) {
      if (c == '~') {
        out += "~0";
      } else if (c == '/') {
        out += "~1";
      } else {
        out += c;
      }
    }
  }
  return out;
}

Result<json> ApplyJsonPatch(const json& target, const json& patch) {
  if (!patch.is_array()) {
    return Status::InvalidArgument("a JSON patch must be a JSON array of operations, got " +
                                   std::string(patch.type_name()));
  }
  if (patch.size() > kMaxJsonPatchOperations) {
    return Status::InvalidArgument("a JSON patch may hold at most " +
                                   std::to_string(kMaxJsonPatchOperations) + " operations, got " +
                                   std::to_string(patch.size()));
  }
  try {
    json doc = target;
    size_t copied_bytes = 0;
    for (size_t i = 0; i < patch.size(); ++i) {
      const json& op = patch[i];
      Status s = ApplyOperation(doc, op, copied_bytes);
      if (!s.ok()) {
        std::string context = "operation " + std::to_string(i);
        if (op.is_object()) {
          auto o = op.find("op");
          auto p = op.find("path");
          context += " (";
          context += o != op.end() && o->is_string() ? o->get<std::string>() : "?";
          if (p != op.end() && p->is_string()) context += " " + GoQuote(p->get<std::string>());
          context += ")";
        }
        return Status(s.code(), context + ": " + s.message());
      }
    }
    return doc;
  } catch (const json::exception& e) {
    return Status::Internal(std::string("json patch: ") + e.what());
  }
}

}  // namespace sluice::apiserver
