#include "workers/rollout/rewards/math_equivalence.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "common/ascii.h"
#include "common/json/options_reader.h"
#include "workers/rollout/rewards/answer_extraction.h"

namespace sluice::rollout {
namespace {

constexpr size_t kNpos = std::string_view::npos;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

int BracketDelta(char c) {
  if (c == '(' || c == '[' || c == '{') return 1;
  if (c == ')' || c == ']' || c == '}') return -1;
  return 0;
}

// ---- Cleaning -----------------------------------------------------------------------------

// Replaces every occurrence of each `from` with its `to`, left to right in one pass.
std::string ReplaceAll(std::string_view s,
                       std::initializer_list<std::pair<std::string_view, std::string_view>> table) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    bool replaced = false;
    for (const auto& [from, to] : table) {
      if (s.substr(i, from.size()) == from) {
        out.append(to);
        i += from.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(s[i++]);
  }
  return out;
}

// For each '{' in `s`, the index of its matching '}' (kNpos when unclosed); escaped braces (\{,
// \}) do not count. Computed once so that unwrapping groups stays linear however many there are.
std::vector<size_t> MatchBraces(std::string_view s) {
  std::vector<size_t> match(s.size(), kNpos);
  std::vector<size_t> open;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '{') {
      open.push_back(i);
    } else if (s[i] == '}' && !open.empty()) {
      match[open.back()] = i;
      open.pop_back();
    }
  }
  return match;
}

// Whether nothing but whitespace, '$' and '.' follows position `from`.
bool OnlyClosingAfter(std::string_view s, size_t from) {
  for (size_t i = from; i < s.size(); ++i) {
    if (!IsAsciiSpace(s[i]) && s[i] != '$' && s[i] != '.') return false;
  }
  return true;
}

// Commands that only space, size or delimit; dropped with nothing in their place.
constexpr std::string_view kDroppedCommands[] = {
    "left", "right", "displaystyle", "textstyle", "big", "Big", "bigl", "bigr", "Bigl",
    "Bigr", "quad",  "qquad",        ",",         "!",   ";",   ":",    " ",    "$"};
// Commands whose group is text: unwrapped, or dropped as a unit when they end the answer.
constexpr std::string_view kTextCommands[] = {"text",   "textbf", "textit", "textrm",
                                              "mathrm", "mathbf", "mbox"};

bool OneOf(std::string_view name, const auto& names) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// The command-level cleaning (see the header): drops '$' and spacing commands, unwraps text
// groups, renames \dfrac and \tfrac, turns \% and {,} into '%' and ','.
std::string CleanCommands(std::string_view s) {
  const std::vector<size_t> closing = MatchBraces(s);
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '$') {
      ++i;
      continue;
    }
    if (s.substr(i, 3) == "{,}") {  // LaTeX's thousands separator.
      out.push_back(',');
      i += 3;
      continue;
    }
    if (c != '\\') {
      out.push_back(c);
      ++i;
      continue;
    }
    // A command: '\' then a run of letters, or one other character.
    size_t end = i + 1;
    while (end < s.size() && IsLetter(s[end])) ++end;
    if (end == i + 1 && end < s.size()) ++end;
    const std::string_view name = s.substr(i + 1, end - i - 1);
    i = end;
    if (OneOf(name, kDroppedCommands)) {
      // "\left." and "\right." are invisible delimiters.
      if ((name == "left" || name == "right") && i < s.size() && s[i] == '.') ++i;
    } else if (name == "%") {
      out.push_back('%');
    } else if (name == "dfrac" || name == "tfrac") {
      out += "\\frac";
    } else if (OneOf(name, kTextCommands)) {
      size_t open = i;
      while (open < s.size() && IsAsciiSpace(s[open])) ++open;
      if (open < s.size() && s[open] == '{' && closing[open] != kNpos) {
        const size_t close = closing[open];
        const bool unit = OnlyClosingAfter(s, close + 1) && !StripAsciiSpace(out).empty();
        if (!unit) out.append(s.substr(open + 1, close - open - 1));
        i = close + 1;
      }
    } else {
      out += '\\';
      out.append(name);
    }
  }
  return out;
}

// Of an equation, the right-hand side of its last top-level '='; anything else unchanged.
// Inequalities ("<=", ">=", "!=") are not equations with one value and stay whole.
std::string_view RightHandSide(std::string_view s) {
  int depth = 0;
  size_t last_eq = kNpos;
  for (size_t i = 0; i < s.size(); ++i) {
    depth += BracketDelta(s[i]);
    if (depth != 0 || s[i] != '=') continue;
    if (i > 0 && (s[i - 1] == '<' || s[i - 1] == '>' || s[i - 1] == '!')) return s;
    last_eq = i;
  }
  return last_eq == kNpos ? s : StripAsciiSpace(s.substr(last_eq + 1));
}

bool HasTopLevelComma(std::string_view s) {
  int depth = 0;
  for (char c : s) {
    depth += BracketDelta(c);
    if (depth == 0 && c == ',') return true;
  }
  return false;
}

// Whether `s` is one number written with thousands separators: [+-]d{1,3}(,ddd)+[.d*][%].
bool IsGroupedNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const size_t lead = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == lead || i - lead > 3) return false;
  int groups = 0;
  while (i < s.size() && s[i] == ',') {
    for (size_t k = 1; k <= 3; ++k) {
      if (i + k >= s.size() || !IsDigit(s[i + k])) return false;
    }
    i += 4;
    if (i < s.size() && IsDigit(s[i])) return false;
    ++groups;
  }
  if (groups == 0) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == '%') ++i;
  return i == s.size();
}

// The cleaned form of an answer (see the header), with no whitespace left.
std::string Prepare(std::string_view text) {
  std::string s(StripAsciiSpace(text));
  // A box, or a box in a box: its content is the answer.
  for (int unwrap = 0; unwrap < 4; ++unwrap) {
    const std::string boxed = ExtractBoxed(s);
    if (StripAsciiSpace(boxed).empty()) break;
    s = std::string(StripAsciiSpace(boxed));
  }
  std::string_view v = s;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [open, close] :
         {std::pair<std::string_view, std::string_view>{"\\(", "\\)"},
          std::pair<std::string_view, std::string_view>{"\\[", "\\]"}}) {
      if (v.size() >= 4 && v.starts_with(open) && v.ends_with(close)) {
        v = StripAsciiSpace(v.substr(2, v.size() - 4));
        changed = true;
      }
    }
  }
  const std::string unified = ReplaceAll(v, {{"^{\\circ}", ""},
                                             {"^\\circ", ""},
                                             {"\\degree", ""},
                                             {"\xC2\xB0", ""},          // °
                                             {"\xE2\x88\x92", "-"},     // − (minus sign)
                                             {"\xC3\x97", "\\times "},  // ×
                                             {"\xC3\xB7", "\\div "},    // ÷
                                             {"\xC2\xB7", "\\cdot "},   // ·
                                             {"\xCF\x80", "\\pi "}});   // π
  const std::string cleaned = CleanCommands(unified);
  // A list of equations ("x=1, y=2") keeps its elements whole here; the comparison takes
  // each element's right-hand side (ScalarEquivalent).
  const std::string_view whole = StripAsciiSpace(cleaned);
  std::string_view rhs = RightHandSide(whole);
  const bool grouped = IsGroupedNumber(rhs);
  if (!grouped && HasTopLevelComma(whole)) rhs = whole;
  std::string out;
  out.reserve(rhs.size());
  for (char c : rhs) {
    if (IsAsciiSpace(c) || (grouped && c == ',')) continue;
    out.push_back(c);
  }
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

// The text-comparison form of a cleaned answer: single-character super- and subscripts lose
// their braces ("x^{2}" -> "x^2").
std::string Canonical(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if ((s[i] == '^' || s[i] == '_') && i + 3 < s.size() && s[i + 1] == '{' && s[i + 3] == '}' &&
        s[i + 2] != '\\' && s[i + 2] != '{') {
      out.push_back(s[i]);
      out.push_back(s[i + 2]);
      i += 3;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

// ---- Values -------------------------------------------------------------------------------

// Recursive descent over a cleaned answer (no whitespace):
//   sum     := product (('+' | '-') product)*
//   product := signed (('*' | '/' | \cdot | \times | \div) signed | implicit factor)*
//   signed  := ('+' | '-') signed | power
//   power   := primary (('^' | '**') exponent)?
//   primary := number | '(' sum ')' | '{' sum '}' | \frac arg arg | \sqrt['[' sum ']'] arg | \pi
//   arg     := '{' sum '}' | digit | '\'primary
// Nesting is bounded so a hostile answer cannot exhaust the stack.
class ValueParser {
 public:
  explicit ValueParser(std::string_view s) : s_(s) {}

  std::optional<double> Parse() {
    const Value v = Sum(0);
    if (!v || pos_ != s_.size() || !std::isfinite(*v)) return std::nullopt;
    return v;
  }

 private:
  using Value = std::optional<double>;
  static constexpr int kMaxDepth = 64;

  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c || c == '\0') return false;
    ++pos_;
    return true;
  }
  bool EatText(std::string_view text) {
    if (s_.substr(pos_, text.size()) != text) return false;
    pos_ += text.size();
    return true;
  }
  // Whether "\name" starts here and the command name ends after it.
  bool AtCommand(std::string_view name) const {
    if (Peek() != '\\' || s_.substr(pos_ + 1, name.size()) != name) return false;
    const size_t end = pos_ + 1 + name.size();
    return end >= s_.size() || !IsLetter(s_[end]);
  }
  bool EatCommand(std::string_view name) {
    if (!AtCommand(name)) return false;
    pos_ += 1 + name.size();
    return true;
  }

  Value Sum(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    Value v = Product(depth);
    while (v) {
      const bool plus = Eat('+');
      if (!plus && !Eat('-')) break;
      const Value r = Product(depth);
      if (!r) return std::nullopt;
      *v += plus ? *r : -*r;
    }
    return v;
  }

  Value Product(int depth) {
    Value v = Signed(depth);
    while (v) {
      const bool left_literal = last_factor_literal_;
      char op = 0;
      if (Eat('*') || EatCommand("cdot") || EatCommand("times")) {
        op = '*';
      } else if (Eat('/') || EatCommand("div")) {
        op = '/';
      } else if (Peek() == '(' || AtCommand("pi") || AtCommand("sqrt") || AtCommand("frac")) {
        // An implicit product ("2\pi"), but not a mixed number ("2\frac{1}{2}").
        if (left_literal && AtCommand("frac")) return std::nullopt;
        const Value r = Power(depth);
        if (!r) return std::nullopt;
        *v *= *r;
        continue;
      } else {
        break;
      }
      const Value r = Signed(depth);
      if (!r || (op == '/' && *r == 0)) return std::nullopt;
      *v = op == '*' ? *v * *r : *v / *r;
    }
    return v;
  }

  Value Signed(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    if (Eat('+')) return Signed(depth + 1);
    if (Eat('-')) {
      const Value v = Signed(depth + 1);
      if (!v) return std::nullopt;
      return -*v;
    }
    return Power(depth);
  }

  Value Power(int depth) {
    Value base = Primary(depth);
    if (!base) return std::nullopt;
    bool literal = primary_literal_;
    if (Eat('^') || EatText("**")) {
      const Value e = Exponent(depth + 1);
      // Integer exponents only: a fractional power of a negative base has no real value, and
      // no answer needs a power beyond a few thousand.
      if (!e || *e != std::round(*e) || std::fabs(*e) > 4096) return std::nullopt;
      base = std::pow(*base, *e);
      if (!std::isfinite(*base)) return std::nullopt;
      literal = false;
    }
    last_factor_literal_ = literal;
    return base;
  }

  // TeX takes one token as an exponent; plain text ("2^10") means all the digits, so a
  // brace-less exponent is a signed number or a primary.
  Value Exponent(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    if (Eat('{')) {
      const Value v = Sum(depth + 1);
      if (!v || !Eat('}')) return std::nullopt;
      return v;
    }
    const bool negative = Eat('-');
    if (!negative) Eat('+');
    const Value v = IsDigit(Peek()) ? Number() : Primary(depth + 1);
    if (!v) return std::nullopt;
    return negative ? -*v : *v;
  }

  Value Primary(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    primary_literal_ = false;
    if (Eat('(')) return Closed(depth, ')');
    if (Eat('{')) return Closed(depth, '}');
    if (IsDigit(Peek()) || Peek() == '.') {
      const Value v = Number();
      primary_literal_ = v.has_value();
      return v;
    }
    if (EatCommand("frac")) {
      const Value numerator = Argument(depth + 1);
      const Value denominator = numerator ? Argument(depth + 1) : std::nullopt;
      primary_literal_ = false;
      if (!denominator || *denominator == 0) return std::nullopt;
      return *numerator / *denominator;
    }
    if (EatCommand("sqrt")) return Root(depth);
    if (EatCommand("pi")) return std::numbers::pi;
    return std::nullopt;
  }

  // After an opening bracket: a sum and the `close` bracket.
  Value Closed(int depth, char close) {
    const Value v = Sum(depth + 1);
    primary_literal_ = false;
    if (!v || !Eat(close)) return std::nullopt;
    return v;
  }

  // After \sqrt: an optional [index] and the radicand.
  Value Root(int depth) {
    Value index;
    if (Eat('[')) {
      index = Sum(depth + 1);
      if (!index || !Eat(']')) return std::nullopt;
      if (*index != std::round(*index) || *index < 2) return std::nullopt;
    }
    const Value radicand = Argument(depth + 1);
    primary_literal_ = false;
    if (!radicand) return std::nullopt;
    if (!index) {
      if (*radicand < 0) return std::nullopt;
      return std::sqrt(*radicand);
    }
    const bool odd = std::fmod(*index, 2) != 0;
    if (*radicand < 0) {
      if (!odd) return std::nullopt;
      return -std::pow(-*radicand, 1.0 / *index);
    }
    return std::pow(*radicand, 1.0 / *index);
  }

  // A TeX macro argument: a group, one digit ("\frac12"), or a command ("\frac\pi2").
  Value Argument(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    if (Eat('{')) return Closed(depth, '}');
    if (IsDigit(Peek())) return static_cast<double>(s_[pos_++] - '0');
    if (Peek() == '\\') return Primary(depth + 1);
    return std::nullopt;
  }

  // Digits with an optional fraction and exponent: "12", "0.5", ".5", "5.", "1e-3".
  Value Number() {
    const size_t begin = pos_;
    size_t digits = 0;
    while (IsDigit(Peek())) ++pos_, ++digits;
    if (Eat('.')) {
      while (IsDigit(Peek())) ++pos_, ++digits;
    }
    if (digits == 0) return std::nullopt;
    if (Peek() == 'e' || Peek() == 'E') {
      size_t k = pos_ + 1;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
      if (k < s_.size() && IsDigit(s_[k])) {
        pos_ = k;
        while (IsDigit(Peek())) ++pos_;
      }
    }
    const std::string_view token = s_.substr(begin, pos_ - begin);
    // from_chars rejects a leading '+'; the token has no sign.
    double value = 0;
    const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (error != std::errc() || end != token.data() + token.size()) return std::nullopt;
    return value;
  }

  std::string_view s_;
  size_t pos_ = 0;
  bool primary_literal_ = false;      // The last primary was a bare number.
  bool last_factor_literal_ = false;  // The last factor was a bare number (no exponent).
};

// A cleaned answer without a trailing '%', and whether it had one.
std::pair<std::string_view, bool> SplitPercent(std::string_view s) {
  if (!s.empty() && s.back() == '%') return {s.substr(0, s.size() - 1), true};
  return {s, false};
}

std::optional<double> ValueOfPrepared(std::string_view prepared) {
  const std::string_view number = SplitPercent(prepared).first;
  if (number.empty()) return std::nullopt;
  return ValueParser(number).Parse();
}

bool Close(double a, double b, double tolerance) {
  return std::fabs(a - b) <= tolerance * std::max(1.0, std::fabs(b));
}

// ---- Tuples -------------------------------------------------------------------------------

struct Elements {
  std::string_view open;  // "(", "[", "\{", or "" for a bare list.
  std::string_view close;
  std::vector<std::string_view> items;
};

// Whether brackets in `s` balance without ever closing more than is open.
bool Balanced(std::string_view s) {
  int depth = 0;
  for (char c : s) {
    depth += BracketDelta(c);
    if (depth < 0) return false;
  }
  return depth == 0;
}

// The elements of a tuple, interval, set or bare list (at least one top-level comma); nullopt
// for a single value.
std::optional<Elements> SplitElements(std::string_view s) {
  Elements e;
  std::string_view inner = s;
  if (s.size() >= 4 && s.starts_with("\\{") && s.ends_with("\\}") &&
      Balanced(s.substr(2, s.size() - 4))) {
    e.open = s.substr(0, 2);
    e.close = s.substr(s.size() - 2);
    inner = s.substr(2, s.size() - 4);
  } else if (s.size() >= 2 && (s.front() == '(' || s.front() == '[') &&
             (s.back() == ')' || s.back() == ']') && Balanced(s.substr(1, s.size() - 2))) {
    e.open = s.substr(0, 1);
    e.close = s.substr(s.size() - 1);
    inner = s.substr(1, s.size() - 2);
  }
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < inner.size(); ++i) {
    depth += BracketDelta(inner[i]);
    if (depth == 0 && inner[i] == ',') {
      e.items.push_back(inner.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  if (e.items.empty()) return std::nullopt;
  e.items.push_back(inner.substr(begin));
  return e;
}

bool ScalarEquivalent(std::string_view a, std::string_view b, double tolerance) {
  // List elements may be equations still ("x=1" of "x=1, y=2").
  a = RightHandSide(a);
  b = RightHandSide(b);
  if (a.empty() || b.empty()) return false;
  const std::optional<double> va = ValueOfPrepared(a);
  const std::optional<double> vb = ValueOfPrepared(b);
  if (va && vb) {
    const bool a_percent = SplitPercent(a).second;
    const bool b_percent = SplitPercent(b).second;
    if (Close(*va, *vb, tolerance)) return true;
    if (a_percent && !b_percent && Close(*va / 100, *vb, tolerance)) return true;
    if (b_percent && !a_percent && Close(*va, *vb / 100, tolerance)) return true;
    return false;
  }
  return Canonical(a) == Canonical(b);
}

bool PreparedEquivalent(std::string_view a, std::string_view b, double tolerance, int depth) {
  if (a.empty() || b.empty()) return false;
  const std::optional<Elements> ea = SplitElements(a);
  const std::optional<Elements> eb = SplitElements(b);
  if (!ea && !eb) return ScalarEquivalent(a, b, tolerance);
  if (!ea || !eb || ea->open != eb->open || ea->close != eb->close ||
      ea->items.size() != eb->items.size()) {
    return false;
  }
  // Deeper nesting than any answer has: compare as text rather than recurse further.
  if (depth >= 8) return Canonical(a) == Canonical(b);
  for (size_t i = 0; i < ea->items.size(); ++i) {
    if (!PreparedEquivalent(ea->items[i], eb->items[i], tolerance, depth + 1)) return false;
  }
  return true;
}

}  // namespace

std::optional<double> ParseMathValue(std::string_view text) {
  return ValueOfPrepared(Prepare(text));
}

bool MathEquivalent(std::string_view a, std::string_view b, double tolerance) {
  return PreparedEquivalent(Prepare(a), Prepare(b), tolerance, 0);
}

Result<std::unique_ptr<MathReward>> MathReward::Create(const nlohmann::json& options) {
  Options parsed;
  const auto read = [&]() -> Status {
    SLUICE_ASSIGN_OR_RETURN(JsonOptions reader, JsonOptions::Create(options));
    SLUICE_RETURN_IF_ERROR(reader.Double("tolerance", parsed.tolerance));
    if (!(parsed.tolerance >= 0) || !std::isfinite(parsed.tolerance)) {
      return Status::InvalidArgument(
          "must be a finite number >= 0, got " + options["tolerance"].dump(), "tolerance");
    }
    return reader.RejectUnknown();
  };
  SLUICE_RETURN_IF_ERROR(PrefixField(read(), "reward.options"));
  return std::make_unique<MathReward>(parsed);
}

RewardOutcome MathReward::Score(const RewardInput& input) const {
  const std::string given = FinalAnswerText(input.response);
  RewardOutcome outcome;
  if (MathEquivalent(given, input.answer, options_.tolerance)) {
    outcome.score = 1;
    outcome.detail = "answer is equivalent";
  } else {
    outcome.detail =
        "answer " + QuoteExcerpt(given) + " is not equivalent to " + QuoteExcerpt(input.answer);
  }
  return outcome;
}

}  // namespace sluice::rollout
