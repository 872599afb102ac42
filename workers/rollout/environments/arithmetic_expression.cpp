#include "workers/rollout/environments/arithmetic_expression.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>

#include "common/ascii.h"

namespace sluice::rollout {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.12g", v);
  return buf;
}

// Counts one level of nesting for as long as it lives. The parser checks too_deep() right after
// constructing one, so the recursion it guards never goes past kMaxNestingDepth levels.
class NestingLevel {
 public:
  explicit NestingLevel(int* depth) : depth_(depth) { ++*depth_; }
  ~NestingLevel() { --*depth_; }
  NestingLevel(const NestingLevel&) = delete;
  NestingLevel& operator=(const NestingLevel&) = delete;
  bool too_deep() const { return *depth_ > kMaxNestingDepth; }

 private:
  int* depth_;
};

// A recursive-descent parser that evaluates as it parses (the grammar is in the header); each
// method consumes one production starting at pos_ and returns its value.
class Evaluator {
 public:
  explicit Evaluator(std::string_view text) : text_(text) {}

  Result<double> Run() {
    SkipSpace();
    if (AtEnd()) return Error("empty expression");
    SLUICE_ASSIGN_OR_RETURN(double value, Expression());
    SkipSpace();
    if (!AtEnd()) return Error(Unexpected());
    return value;
  }

 private:
  Result<double> Expression() {
    SLUICE_ASSIGN_OR_RETURN(double left, Term());
    for (;;) {
      SkipSpace();
      if (!At('+') && !At('-')) return left;
      const char op = text_[pos_];
      const size_t at = pos_++;
      SLUICE_ASSIGN_OR_RETURN(double right, Term());
      SLUICE_ASSIGN_OR_RETURN(left, Finite(op == '+' ? left + right : left - right, op, at));
    }
  }

  Result<double> Term() {
    SLUICE_ASSIGN_OR_RETURN(double left, Unary());
    for (;;) {
      SkipSpace();
      if (!At('*') && !At('/') && !At('%')) return left;
      const char op = text_[pos_];
      const size_t at = pos_++;
      SLUICE_ASSIGN_OR_RETURN(double right, Unary());
      double value = 0;
      if (op == '*') {
        value = left * right;
      } else if (right == 0) {
        return Error(std::string(op == '/' ? "division" : "remainder of division") +
                     " by zero at position " + Position(at));
      } else if (op == '/') {
        value = left / right;
      } else {
        // Floored remainder: the result takes the divisor's sign (see the header).
        value = std::fmod(left, right);
        if (value != 0 && (value < 0) != (right < 0)) value += right;
      }
      SLUICE_ASSIGN_OR_RETURN(left, Finite(value, op, at));
    }
  }

  Result<double> Unary() {
    SkipSpace();
    if (!At('-') && !At('+')) return Power();
    const bool negate = At('-');
    const size_t at = pos_++;
    NestingLevel level(&depth_);
    if (level.too_deep()) return TooDeep(at);
    SLUICE_ASSIGN_OR_RETURN(double operand, Unary());
    return negate ? -operand : operand;
  }

  Result<double> Power() {
    SLUICE_ASSIGN_OR_RETURN(double base, Primary());
    SkipSpace();
    if (!At('^')) return base;
    const size_t at = pos_++;
    NestingLevel level(&depth_);
    if (level.too_deep()) return TooDeep(at);
    // The exponent is a unary, which may itself be a power: this is what makes "^"
    // right-associative and lets "2^-1" mean 0.5.
    SLUICE_ASSIGN_OR_RETURN(double exponent, Unary());
    return Finite(std::pow(base, exponent), '^', at);
  }

  Result<double> Primary() {
    SkipSpace();
    if (AtEnd()) return Error("unexpected end of expression; expected a number, '(' or a function");
    const char c = text_[pos_];
    if (IsDigit(c) || c == '.') return Number();
    if (c == '(') {
      const size_t open = pos_++;
      return Parenthesized(open);
    }
    if (IsLetter(c)) return Function();
    return Error(Unexpected());
  }

  // The rest of "(expression)" after the "(" at `open`.
  Result<double> Parenthesized(size_t open) {
    NestingLevel level(&depth_);
    if (level.too_deep()) return TooDeep(open);
    SLUICE_ASSIGN_OR_RETURN(double value, Expression());
    SkipSpace();
    if (AtEnd()) return Error("missing ')' for the '(' at position " + Position(open));
    if (!At(')')) return Error(Unexpected() + "; expected ')'");
    ++pos_;
    return value;
  }

  Result<double> Function() {
    const size_t start = pos_;
    while (!AtEnd() && (IsLetter(text_[pos_]) || IsDigit(text_[pos_]))) ++pos_;
    const std::string_view name = text_.substr(start, pos_ - start);
    if (name != "sqrt" && name != "abs") {
      return Error("unknown function '" + std::string(name.substr(0, 32)) + "' at position " +
                   Position(start) + "; available: sqrt, abs");
    }
    SkipSpace();
    if (!At('(')) {
      return Error("expected '(' after '" + std::string(name) + "' at position " + Position(pos_));
    }
    const size_t open = pos_++;
    SLUICE_ASSIGN_OR_RETURN(double argument, Parenthesized(open));
    if (name == "abs") return std::fabs(argument);
    if (argument < 0) {
      return Error("sqrt of a negative number (" + FormatNumber(argument) + ") at position " +
                   Position(start));
    }
    return std::sqrt(argument);
  }

  Result<double> Number() {
    const size_t start = pos_;
    size_t int_digits = 0;
    while (!AtEnd() && IsDigit(text_[pos_])) ++pos_, ++int_digits;
    size_t frac_digits = 0;
    if (At('.')) {
      ++pos_;
      while (!AtEnd() && IsDigit(text_[pos_])) ++pos_, ++frac_digits;
    }
    if (int_digits + frac_digits == 0) {  // A lone ".".
      pos_ = start;
      return Error(Unexpected());
    }
    const size_t mantissa_end = pos_;
    long exponent = 0;
    if (At('e') || At('E')) {
      ++pos_;
      bool negative = false;
      if (At('+') || At('-')) negative = text_[pos_++] == '-';
      if (AtEnd() || !IsDigit(text_[pos_])) {
        return Error("the number at position " + Position(start) +
                     " has an exponent without digits");
      }
      // Saturates: anything this large is out of range whatever the mantissa.
      while (!AtEnd() && IsDigit(text_[pos_])) {
        exponent = std::min(exponent * 10 + (text_[pos_++] - '0'), 100000L);
      }
      if (negative) exponent = -exponent;
    }
    double value = 0;
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    const auto [end, ec] = std::from_chars(first, last, value, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) {
      // Out of range either way round; only too large is an error, too small is zero.
      if (DecimalMagnitude(start, mantissa_end, int_digits) + exponent > 0) {
        return Error("the number at position " + Position(start) + " is too large");
      }
      return 0.0;
    }
    if (ec != std::errc() || end != last) {
      return Error("malformed number at position " + Position(start));
    }
    return value;
  }

  // For the mantissa text_[start, end) with `int_digits` digits before its point: m such that
  // the mantissa lies in [10^(m-1), 10^m); 0 for a mantissa of zeros.
  long DecimalMagnitude(size_t start, size_t end, size_t int_digits) const {
    long leading_zeros = 0;
    for (size_t i = start; i < end; ++i) {
      if (text_[i] == '.') continue;
      if (text_[i] != '0') return static_cast<long>(int_digits) - leading_zeros;
      ++leading_zeros;
    }
    return 0;
  }

  // `value` when finite; an error naming the operator otherwise.
  Result<double> Finite(double value, char op, size_t at) const {
    if (std::isfinite(value)) return value;
    return Error(std::string("the result of '") + op + "' at position " + Position(at) +
                 (std::isnan(value) ? " is not a real number" : " is not finite"));
  }

  Status TooDeep(size_t at) const {
    return Error("the expression nests deeper than " + std::to_string(kMaxNestingDepth) +
                 " levels (parentheses, functions, signs and powers) at position " + Position(at));
  }

  // "unexpected ')' at position 4", for the character at pos_.
  std::string Unexpected() const {
    if (AtEnd()) return "unexpected end of expression";
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    std::string what;
    if (c >= 0x20 && c < 0x7f) {
      what = std::string("'") + static_cast<char>(c) + "'";
    } else {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "byte 0x%02x", c);
      what = buf;
    }
    return "unexpected " + what + " at position " + Position(pos_);
  }

  static std::string Position(size_t offset) { return std::to_string(offset + 1); }
  static Status Error(std::string message) { return Status::InvalidArgument(std::move(message)); }

  void SkipSpace() {
    while (!AtEnd() && IsAsciiSpace(text_[pos_])) ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  bool At(char c) const { return !AtEnd() && text_[pos_] == c; }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<double> EvaluateArithmetic(std::string_view expression) {
  if (expression.size() > kMaxExpressionLength) {
    return Status::InvalidArgument("the expression is " + std::to_string(expression.size()) +
                                   " bytes long; the limit is " +
                                   std::to_string(kMaxExpressionLength));
  }
  return Evaluator(expression).Run();
}

}  // namespace sluice::rollout
