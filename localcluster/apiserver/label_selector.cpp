#include "localcluster/apiserver/label_selector.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <utility>
#include <variant>

#include "common/ascii.h"
#include "common/go_quote.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr size_t kMaxNameLength = 63;
constexpr size_t kMaxPrefixLength = 253;
constexpr size_t kMaxValueLength = 63;

constexpr std::string_view kQualifiedNameFmt =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kNameExamples =
    " (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr std::string_view kDns1123SubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr std::string_view kLabelValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], or empty when allow_empty.
bool IsQualifiedNamePart(std::string_view s) {
  if (s.empty()) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsDns1123Label(std::string_view s) {
  if (s.empty()) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return lower_alnum(c) || c == '-'; });
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!IsDns1123Label(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

void Append(std::string& errors, std::string_view msg) {
  if (!errors.empty()) errors += "; ";
  errors += msg;
}

std::string InvalidValue(std::string_view path, std::string_view value, std::string_view msg) {
  return std::string(path) + ": Invalid value: " + GoQuote(value) + ": " + std::string(msg);
}

std::string_view OperatorText(LabelOperator op) {
  switch (op) {
    case LabelOperator::kEquals:
      return "=";
    case LabelOperator::kDoubleEquals:
      return "==";
    case LabelOperator::kNotEquals:
      return "!=";
    case LabelOperator::kIn:
      return "in";
    case LabelOperator::kNotIn:
      return "notin";
    case LabelOperator::kExists:
      return "exists";
    case LabelOperator::kDoesNotExist:
      return "!";
    case LabelOperator::kGreaterThan:
      return "gt";
    case LabelOperator::kLessThan:
      return "lt";
  }
  return "?";
}

std::optional<int64_t> ParseInt64(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return static_cast<int64_t>(v);
}

// Validates one requirement and normalises its values (sorted, unique), like kube's
// labels.NewRequirement. Returns the error text, "" when valid.
std::string ValidateRequirement(LabelRequirement& r) {
  if (std::string errs = LabelKeyErrors(r.key); !errs.empty()) {
    return InvalidValue("key", r.key, errs);
  }
  switch (r.op) {
    case LabelOperator::kIn:
    case LabelOperator::kNotIn:
      if (r.values.empty()) return "values: for 'in', 'notin' operators, values set can't be empty";
      break;
    case LabelOperator::kEquals:
    case LabelOperator::kDoubleEquals:
    case LabelOperator::kNotEquals:
      if (r.values.size() != 1)
        return "values: exact-match compatibility requires one single value";
      break;
    case LabelOperator::kExists:
    case LabelOperator::kDoesNotExist:
      if (!r.values.empty())
        return "values: values set must be empty for exists and does not exist";
      break;
    case LabelOperator::kGreaterThan:
    case LabelOperator::kLessThan:
      if (r.values.size() != 1) {
        return "values: for 'Gt', 'Lt' operators, exactly one value is required";
      }
      if (!ParseInt64(r.values[0])) {
        return InvalidValue("values[0]", r.values[0],
                            "for 'Gt', 'Lt' operators, the value must be an integer");
      }
      break;
  }
  std::sort(r.values.begin(), r.values.end());
  r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (std::string errs = LabelValueErrors(r.values[i]); !errs.empty()) {
      return InvalidValue("values[" + std::to_string(i) + "]", r.values[i], errs);
    }
  }
  return "";
}

// ---- Lexer and parser for the selector string. ----

enum class Tok {
  kEnd,
  kIdentifier,
  kComma,
  kEquals,
  kDoubleEquals,
  kNotEquals,
  kNot,
  kOpenPar,
  kClosedPar,
  kIn,
  kNotIn,
  kGreaterThan,
  kLessThan,
};

struct Token {
  Tok tok = Tok::kEnd;
  std::string literal;
};

bool IsSpecial(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

std::vector<Token> Lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (true) {
    while (i < s.size() && IsAsciiSpace(s[i])) ++i;
    if (i >= s.size()) break;
    char c = s[i];
    if (IsSpecial(c)) {
      std::string_view two = s.substr(i, 2);
      if (two == "==") {
        out.push_back({Tok::kDoubleEquals, "=="});
        i += 2;
        continue;
      }
      if (two == "!=") {
        out.push_back({Tok::kNotEquals, "!="});
        i += 2;
        continue;
      }
      Tok t = c == '='   ? Tok::kEquals
              : c == '!' ? Tok::kNot
              : c == '(' ? Tok::kOpenPar
              : c == ')' ? Tok::kClosedPar
              : c == ',' ? Tok::kComma
              : c == '>' ? Tok::kGreaterThan
                         : Tok::kLessThan;
      out.push_back({t, std::string(1, c)});
      ++i;
      continue;
    }
    size_t start = i;
    while (i < s.size() && !IsAsciiSpace(s[i]) && !IsSpecial(s[i])) ++i;
    std::string word(s.substr(start, i - start));
    Tok t = word == "in" ? Tok::kIn : word == "notin" ? Tok::kNotIn : Tok::kIdentifier;
    out.push_back({t, std::move(word)});
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

// Which meaning `in`/`notin` have: keywords where an operator may stand, identifiers elsewhere.
enum class Context { kKeyAndOperator, kValues };

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(Lex(text)) {}

  // Returns the requirements or an error message.
  std::variant<std::vector<LabelRequirement>, std::string> Parse() {
    std::vector<LabelRequirement> reqs;
    while (true) {
      Token t = Lookahead(Context::kValues);
      switch (t.tok) {
        case Tok::kIdentifier:
        case Tok::kNot: {
          LabelRequirement r;
          if (std::string err = ParseRequirement(r); !err.empty()) {
            return "unable to parse requirement: " + err;
          }
          reqs.push_back(std::move(r));
          Token next = Consume(Context::kValues);
          if (next.tok == Tok::kEnd) return reqs;
          if (next.tok == Tok::kComma) {
            Token after = Lookahead(Context::kValues);
            if (after.tok != Tok::kIdentifier && after.tok != Tok::kNot) {
              return "found '" + after.literal + "', expected: identifier after ','";
            }
            continue;
          }
          return "found '" + next.literal + "', expected: ',' or 'end of string'";
        }
        case Tok::kEnd:
          return reqs;
        default:
          return "found '" + t.literal + "', expected: !, identifier, or 'end of string'";
      }
    }
  }

 private:
  Token Lookahead(Context ctx) const {
    Token t = tokens_[pos_];
    if (ctx == Context::kValues && (t.tok == Tok::kIn || t.tok == Tok::kNotIn)) {
      t.tok = Tok::kIdentifier;
    }
    return t;
  }
  Token Consume(Context ctx) {
    Token t = Lookahead(ctx);
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }

  std::string ParseRequirement(LabelRequirement& r) {
    bool not_exists = false;
    Token t = Consume(Context::kValues);
    if (t.tok == Tok::kNot) {
      not_exists = true;
      t = Consume(Context::kValues);
    }
    if (t.tok != Tok::kIdentifier) return "found '" + t.literal + "', expected: identifier";
    r.key = t.literal;
    if (std::string errs = LabelKeyErrors(r.key); !errs.empty()) {
      return InvalidValue("key", r.key, errs);
    }
    Tok next = Lookahead(Context::kValues).tok;
    if (not_exists || next == Tok::kEnd || next == Tok::kComma) {
      r.op = not_exists ? LabelOperator::kDoesNotExist : LabelOperator::kExists;
      return ValidateRequirement(r);
    }
    Token op = Consume(Context::kKeyAndOperator);
    std::string err;
    switch (op.tok) {
      case Tok::kIn:
      case Tok::kNotIn:
        r.op = op.tok == Tok::kIn ? LabelOperator::kIn : LabelOperator::kNotIn;
        err = ParseValueSet(r.values);
        break;
      case Tok::kEquals:
      case Tok::kDoubleEquals:
      case Tok::kNotEquals:
      case Tok::kGreaterThan:
      case Tok::kLessThan:
        r.op = op.tok == Tok::kEquals         ? LabelOperator::kEquals
               : op.tok == Tok::kDoubleEquals ? LabelOperator::kDoubleEquals
               : op.tok == Tok::kNotEquals    ? LabelOperator::kNotEquals
               : op.tok == Tok::kGreaterThan  ? LabelOperator::kGreaterThan
                                              : LabelOperator::kLessThan;
        err = ParseExactValue(r.values);
        break;
      default:
        return "found '" + op.literal + "', expected: in, notin, =, ==, !=, gt, lt";
    }
    if (!err.empty()) return err;
    return ValidateRequirement(r);
  }

  // "(a,b)"; "()" is the set {""}; empty entries ("(a,)", "(,a)") are "".
  std::string ParseValueSet(std::vector<std::string>& values) {
    Token open = Consume(Context::kValues);
    if (open.tok != Tok::kOpenPar) return "found '" + open.literal + "' expected: '('";
    Token t = Lookahead(Context::kValues);
    if (t.tok == Tok::kClosedPar) {
      Consume(Context::kValues);
      values.push_back("");
      return "";
    }
    if (t.tok != Tok::kIdentifier && t.tok != Tok::kComma) {
      return "found '" + t.literal + "', expected: ',', ')' or identifier";
    }
    while (true) {
      Token v = Consume(Context::kValues);
      if (v.tok == Tok::kIdentifier) {
        values.push_back(v.literal);
        Token next = Lookahead(Context::kValues);
        if (next.tok == Tok::kComma) {
          Consume(Context::kValues);
          Token after = Lookahead(Context::kValues);
          if (after.tok == Tok::kClosedPar) values.push_back("");  // "(a,)"
          continue;
        }
        if (next.tok == Tok::kClosedPar) break;
        return "found '" + next.literal + "', expected: ',' or ')'";
      }
      if (v.tok == Tok::kComma) {  // "(,a)" or "(a,,b)"
        values.push_back("");
        Token after = Lookahead(Context::kValues);
        if (after.tok == Tok::kClosedPar) break;
        continue;
      }
      if (v.tok == Tok::kClosedPar) {  // after "(a," the ")" was consumed; put it back
        --pos_;
        break;
      }
      return "found '" + v.literal + "', expected: ',', or identifier";
    }
    Token close = Consume(Context::kValues);
    if (close.tok != Tok::kClosedPar) return "found '" + close.literal + "', expected: ')'";
    return "";
  }

  // A single value after =, ==, !=, >, <; nothing before ',' or the end is "".
  std::string ParseExactValue(std::vector<std::string>& values) {
    Token t = Lookahead(Context::kValues);
    if (t.tok == Tok::kEnd || t.tok == Tok::kComma) {
      values.push_back("");
      return "";
    }
    t = Consume(Context::kValues);
    if (t.tok != Tok::kIdentifier) return "found '" + t.literal + "', expected: identifier";
    values.push_back(t.literal);
    return "";
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

void SortByKey(std::vector<LabelRequirement>& reqs) {
  std::stable_sort(
      reqs.begin(), reqs.end(),
      [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
}

}  // namespace

std::string LabelKeyErrors(std::string_view key) {
  std::string errors;
  std::string_view name = key;
  size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    if (key.find('/', slash + 1) != std::string_view::npos) {
      return "a qualified name " + std::string(kQualifiedNameFmt) + std::string(kNameExamples) +
             " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
    }
    std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) {
      Append(errors, "prefix part must be non-empty");
    } else {
      if (prefix.size() > kMaxPrefixLength) {
        Append(errors, "prefix part must be no more than 253 characters");
      }
      if (!IsDns1123Subdomain(prefix)) {
        Append(errors, "prefix part " + std::string(kDns1123SubdomainMsg));
      }
    }
  }
  if (name.empty()) {
    Append(errors, "name part must be non-empty");
  } else {
    if (name.size() > kMaxNameLength) {
      Append(errors, "name part must be no more than 63 characters");
    }
    if (!IsQualifiedNamePart(name)) {
      Append(errors, "name part " + std::string(kQualifiedNameFmt) + std::string(kNameExamples));
    }
  }
  return errors;
}

std::string LabelValueErrors(std::string_view value) {
  std::string errors;
  if (value.size() > kMaxValueLength) Append(errors, "must be no more than 63 characters");
  if (!value.empty() && !IsQualifiedNamePart(value)) Append(errors, kLabelValueMsg);
  return errors;
}

bool LabelRequirement::Matches(const std::map<std::string, std::string>& labels) const {
  auto it = labels.find(key);
  bool has = it != labels.end();
  auto in_values = [&] { return std::binary_search(values.begin(), values.end(), it->second); };
  switch (op) {
    case LabelOperator::kEquals:
    case LabelOperator::kDoubleEquals:
    case LabelOperator::kIn:
      return has && in_values();
    case LabelOperator::kNotEquals:
    case LabelOperator::kNotIn:
      return !has || !in_values();
    case LabelOperator::kExists:
      return has;
    case LabelOperator::kDoesNotExist:
      return !has;
    case LabelOperator::kGreaterThan:
    case LabelOperator::kLessThan: {
      if (!has || values.size() != 1) return false;
      std::optional<int64_t> have = ParseInt64(it->second);
      std::optional<int64_t> want = ParseInt64(values[0]);
      if (!have || !want) return false;
      return op == LabelOperator::kGreaterThan ? *have > *want : *have < *want;
    }
  }
  return false;
}

std::string LabelRequirement::ToString() const {
  std::string joined;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) joined += ",";
    joined += values[i];
  }
  switch (op) {
    case LabelOperator::kExists:
      return key;
    case LabelOperator::kDoesNotExist:
      return "!" + key;
    case LabelOperator::kIn:
    case LabelOperator::kNotIn:
      return key + " " + std::string(OperatorText(op)) + " (" + joined + ")";
    case LabelOperator::kGreaterThan:
      return key + ">" + joined;
    case LabelOperator::kLessThan:
      return key + "<" + joined;
    default:
      return key + std::string(OperatorText(op)) + joined;
  }
}

LabelSelector LabelSelector::Nothing() {
  LabelSelector s;
  s.nothing_ = true;
  return s;
}

Result<LabelSelector> LabelSelector::FromRequirements(std::vector<LabelRequirement> requirements) {
  for (LabelRequirement& r : requirements) {
    if (std::string err = ValidateRequirement(r); !err.empty()) {
      return Status::InvalidArgument(err);
    }
  }
  SortByKey(requirements);
  LabelSelector s;
  s.requirements_ = std::move(requirements);
  return s;
}

Result<LabelSelector> LabelSelector::FromSet(const std::map<std::string, std::string>& labels) {
  std::vector<LabelRequirement> reqs;
  for (const auto& [k, v] : labels) reqs.push_back({k, LabelOperator::kEquals, {v}});
  return FromRequirements(std::move(reqs));
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  if (nothing_) return false;
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const LabelRequirement& r) { return r.Matches(labels); });
}

bool LabelSelector::MatchesObject(const json& object) const {
  if (nothing_) return false;
  if (requirements_.empty()) return true;
  return Matches(LabelsOf(object));
}

std::string LabelSelector::ToString() const {
  std::string out;
  if (nothing_) return out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    if (i > 0) out += ",";
    out += requirements_[i].ToString();
  }
  return out;
}

Result<LabelSelector> ParseLabelSelector(std::string_view text) {
  Parser parser(text);
  auto parsed = parser.Parse();
  if (auto* err = std::get_if<std::string>(&parsed)) return Status::InvalidArgument(*err);
  auto reqs = std::get<std::vector<LabelRequirement>>(std::move(parsed));
  SortByKey(reqs);
  return LabelSelector::FromRequirements(std::move(reqs));
}

std::map<std::string, std::string> LabelsOf(const json& object) {
  std::map<std::string, std::string> labels;
  if (!object.is_object()) return labels;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return labels;
  auto l = meta->find("labels");
  if (l == meta->end() || !l->is_object()) return labels;
  for (const auto& [k, v] : l->items()) {
    if (v.is_string()) labels.emplace(k, v.get<std::string>());
  }
  return labels;
}

Result<LabelSelector> FromLabelSelectorJson(const json& selector) {
  if (selector.is_null()) return LabelSelector::Nothing();
  if (selector.is_string()) return ParseLabelSelector(selector.get<std::string>());
  if (!selector.is_object()) {
    return Status::InvalidArgument("a label selector must be an object or a string");
  }
  std::vector<LabelRequirement> reqs;
  for (const auto& [field, value] : selector.items()) {
    if (field != "matchLabels" && field != "matchExpressions") {
      return Status::InvalidArgument("unknown field \"" + field + "\"", field);
    }
    if (value.is_null()) continue;
    if (field == "matchLabels") {
      if (!value.is_object()) {
        return Status::InvalidArgument("must be of type object", "matchLabels");
      }
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) {
          return Status::InvalidArgument("must be of type string", "matchLabels." + k);
        }
        LabelRequirement r{k, LabelOperator::kEquals, {v.get<std::string>()}};
        if (std::string err = ValidateRequirement(r); !err.empty()) {
          return Status::InvalidArgument(err, "matchLabels");
        }
        reqs.push_back(std::move(r));
      }
      continue;
    }
    if (!value.is_array()) {
      return Status::InvalidArgument("must be of type array", "matchExpressions");
    }
    for (size_t i = 0; i < value.size(); ++i) {
      const json& e = value[i];
      std::string path = "matchExpressions[" + std::to_string(i) + "]";
      if (!e.is_object()) return Status::InvalidArgument("must be of type object", path);
      auto key = e.find("key");
      auto op = e.find("operator");
      if (key == e.end() || !key->is_string()) {
        return Status::InvalidArgument("Required value: key must be a string", path + ".key");
      }
      if (op == e.end() || !op->is_string()) {
        return Status::InvalidArgument("Required value: operator must be a string",
                                       path + ".operator");
      }
      LabelRequirement r;
      r.key = key->get<std::string>();
      std::string op_name = op->get<std::string>();
      if (op_name == "In") {
        r.op = LabelOperator::kIn;
      } else if (op_name == "NotIn") {
        r.op = LabelOperator::kNotIn;
      } else if (op_name == "Exists") {
        r.op = LabelOperator::kExists;
      } else if (op_name == "DoesNotExist") {
        r.op = LabelOperator::kDoesNotExist;
      } else {
        return Status::InvalidArgument(GoQuote(op_name) + " is not a valid label selector operator",
                                       path + ".operator");
      }
      if (auto vals = e.find("values"); vals != e.end() && !vals->is_null()) {
        if (!vals->is_array()) {
          return Status::InvalidArgument("must be of type array", path + ".values");
        }
        for (size_t j = 0; j < vals->size(); ++j) {
          if (!(*vals)[j].is_string()) {
            return Status::InvalidArgument("must be of type string",
                                           path + ".values[" + std::to_string(j) + "]");
          }
          r.values.push_back((*vals)[j].get<std::string>());
        }
      }
      if (std::string err = ValidateRequirement(r); !err.empty()) {
        return Status::InvalidArgument(err, path);
      }
      reqs.push_back(std::move(r));
    }
  }
  return LabelSelector::FromRequirements(std::move(reqs));
}

}  // namespace sluice::apiserver
