#include "common/cel/lexer.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "common/ascii.h"
#include "common/utf8.h"

namespace sluice::cel {
namespace {

Status SyntaxError(size_t offset, std::string_view what) {
  return Status::InvalidArgument("syntax error at column " + std::to_string(offset + 1) + ": " +
                                 std::string(what));
}

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsHexDigit(char c) {
  return IsAsciiDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
int HexValue(char c) {
  if (IsAsciiDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  Result<std::vector<Token>> Run() {
    std::vector<Token> tokens;
    while (true) {
      SkipSpaceAndComments();
      if (pos_ >= s_.size()) break;
      Result<Token> t = Next();
      if (!t.ok()) return t.status();
      tokens.push_back(std::move(*t));
    }
    Token end;
    end.kind = TokenKind::kEnd;
    end.column = static_cast<int>(s_.size()) + 1;
    tokens.push_back(std::move(end));
    return tokens;
  }

 private:
  char Peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }

  void SkipSpaceAndComments() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '/' && Peek(1) == '/') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  Result<Token> Next() {
    size_t start = pos_;
    char c = s_[pos_];
    // String prefixes: r/R raw, b/B bytes (unsupported), combinations.
    if (c == 'r' || c == 'R' || c == 'b' || c == 'B') {
      bool raw = false;
      bool bytes = false;
      size_t p = pos_;
      while (p < s_.size() && p - pos_ < 2) {
        char d = s_[p];
        if ((d == 'r' || d == 'R') && !raw) {
          raw = true;
        } else if ((d == 'b' || d == 'B') && !bytes) {
          bytes = true;
        } else {
          break;
        }
        ++p;
      }
      if (p < s_.size() && (s_[p] == '"' || s_[p] == '\'')) {
        if (bytes) return SyntaxError(start, "unsupported bytes literal");
        pos_ = p;
        return LexString(start, raw);
      }
    }
    if (IsIdentStart(c)) {
      while (pos_ < s_.size() && (IsIdentStart(s_[pos_]) || IsAsciiDigit(s_[pos_]))) ++pos_;
      Token t;
      t.kind = TokenKind::kIdent;
      t.column = static_cast<int>(start) + 1;
      t.text = std::string(s_.substr(start, pos_ - start));
      return t;
    }
    if (IsAsciiDigit(c) || (c == '.' && IsAsciiDigit(Peek(1)))) return LexNumber(start);
    if (c == '"' || c == '\'') return LexString(start, false);

    static constexpr std::array<std::string_view, 6> kTwoChar = {
        "==", "!=", "<=", ">=", "&&", "||"};
    Token t;
    t.kind = TokenKind::kPunct;
    t.column = static_cast<int>(start) + 1;
    std::string_view two = s_.substr(pos_, 2);
    for (std::string_view op : kTwoChar) {
      if (two == op) {
        t.text = std::string(op);
        pos_ += 2;
        return t;
      }
    }
    static constexpr std::string_view kOneChar = "()[]{}.,:?+-*/%!<>";
    if (kOneChar.find(c) != std::string_view::npos) {
      t.text = std::string(1, c);
      ++pos_;
      return t;
    }
    if (c == '=') return SyntaxError(start, "unexpected '=' (use '==' to compare)");
    if (c == '&' || c == '|') {
      return SyntaxError(start, std::string("unexpected '") + c + "' (use '" + c + c + "')");
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      return SyntaxError(start, "unexpected non-ASCII character outside a string");
    }
    return SyntaxError(start, std::string("unexpected character '") + c + "'");
  }

  Result<Token> LexNumber(size_t start) {
    Token t;
    t.column = static_cast<int>(start) + 1;
    if (s_[pos_] == '0' && (Peek(1) == 'x' || Peek(1) == 'X')) {
      pos_ += 2;
      size_t digits = pos_;
      while (pos_ < s_.size() && IsHexDigit(s_[pos_])) ++pos_;
      if (pos_ == digits) return SyntaxError(start, "expected hex digits after '0x'");
      uint64_t v = 0;
      for (size_t i = digits; i < pos_; ++i) {
        if (v > (UINT64_MAX >> 4)) return SyntaxError(start, "integer literal out of range");
        v = (v << 4) | static_cast<uint64_t>(HexValue(s_[i]));
      }
      return FinishInteger(start, v, std::move(t));
    }
    bool is_double = false;
    while (pos_ < s_.size() && IsAsciiDigit(s_[pos_])) ++pos_;
    if (Peek() == '.' && IsAsciiDigit(Peek(1))) {
      is_double = true;
      ++pos_;
      while (pos_ < s_.size() && IsAsciiDigit(s_[pos_])) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      size_t p = pos_ + 1;
      if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
      if (p < s_.size() && IsAsciiDigit(s_[p])) {
        is_double = true;
        pos_ = p;
        while (pos_ < s_.size() && IsAsciiDigit(s_[pos_])) ++pos_;
      } else {
        return SyntaxError(pos_, "expected digits in the exponent");
      }
    }
    std::string text(s_.substr(start, pos_ - start));
    if (is_double) {
      t.kind = TokenKind::kDouble;
      errno = 0;
      t.real = std::strtod(text.c_str(), nullptr);  // inf on overflow, like CEL
      return t;
    }
    uint64_t v = 0;
    for (char d : text) {
      uint64_t digit = static_cast<uint64_t>(d - '0');
      if (v > (UINT64_MAX - digit) / 10) return SyntaxError(start, "integer literal out of range");
      v = v * 10 + digit;
    }
    return FinishInteger(start, v, std::move(t));
  }

  Result<Token> FinishInteger(size_t start, uint64_t v, Token t) {
    t.number = v;
    if (Peek() == 'u' || Peek() == 'U') {
      ++pos_;
      t.kind = TokenKind::kUint;
    } else {
      t.kind = TokenKind::kInt;
    }
    if (IsIdentStart(Peek()) || IsAsciiDigit(Peek())) {
      return SyntaxError(pos_, "unexpected character after number");
    }
    t.column = static_cast<int>(start) + 1;
    return t;
  }

  Result<Token> LexString(size_t start, bool raw) {
    char quote = s_[pos_];
    bool triple = Peek(1) == quote && Peek(2) == quote;
    pos_ += triple ? 3 : 1;
    Token t;
    t.kind = TokenKind::kString;
    t.column = static_cast<int>(start) + 1;
    while (true) {
      if (pos_ >= s_.size()) return SyntaxError(start, "unterminated string literal");
      char c = s_[pos_];
      if (triple) {
        if (c == quote && Peek(1) == quote && Peek(2) == quote) {
          pos_ += 3;
          return t;
        }
      } else {
        if (c == quote) {
          ++pos_;
          return t;
        }
        if (c == '\n' || c == '\r') return SyntaxError(pos_, "newline in string literal");
      }
      if (c == '\\' && !raw) {
        SLUICE_RETURN_IF_ERROR(Escape(t.text));
        continue;
      }
      t.text.push_back(c);
      ++pos_;
    }
  }

  // At a backslash: decodes one escape sequence into `out`.
  Status Escape(std::string& out) {
    size_t at = pos_;
    ++pos_;
    if (pos_ >= s_.size()) return SyntaxError(at, "unterminated escape sequence");
    char c = s_[pos_++];
    switch (c) {
      case '\\':
      case '"':
      case '\'':
      case '`':
      case '?':
        out.push_back(c);
        return Status::Ok();
      case 'a':
        out.push_back('\a');
        return Status::Ok();
      case 'b':
        out.push_back('\b');
        return Status::Ok();
      case 'f':
        out.push_back('\f');
        return Status::Ok();
      case 'n':
        out.push_back('\n');
        return Status::Ok();
      case 'r':
        out.push_back('\r');
        return Status::Ok();
      case 't':
        out.push_back('\t');
        return Status::Ok();
      case 'v':
        out.push_back('\v');
        return Status::Ok();
      case 'x':
      case 'X':
      case 'u':
      case 'U': {
        int n = (c == 'x' || c == 'X') ? 2 : (c == 'u' ? 4 : 8);
        uint32_t cp = 0;
        for (int i = 0; i < n; ++i) {
          if (pos_ >= s_.size() || !IsHexDigit(s_[pos_])) {
            return SyntaxError(at, "expected " + std::to_string(n) + " hex digits in escape");
          }
          cp = (cp << 4) | static_cast<uint32_t>(HexValue(s_[pos_++]));
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return SyntaxError(at, "invalid code point in escape");
        }
        AppendUtf8(cp, out);
        return Status::Ok();
      }
      default:
        if (c >= '0' && c <= '3') {
          uint32_t cp = static_cast<uint32_t>(c - '0');
          for (int i = 0; i < 2; ++i) {
            if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '7') {
              return SyntaxError(at, "expected 3 octal digits in escape");
            }
            cp = cp * 8 + static_cast<uint32_t>(s_[pos_++] - '0');
          }
          AppendUtf8(cp, out);
          return Status::Ok();
        }
        return SyntaxError(at, std::string("invalid escape sequence '\\") + c + "'");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

bool IsReservedWord(std::string_view word) {
  static constexpr std::array<std::string_view, 17> kReserved = {
      "as",  "break", "const",   "continue",  "else",   "for", "function", "if",   "import",
      "let", "loop",  "package", "namespace", "return", "var", "void",     "while"};
  for (std::string_view r : kReserved) {
    if (word == r) return true;
  }
  return false;
}

Result<std::vector<Token>> Lex(std::string_view text) { return Lexer(text).Run(); }

}  // namespace sluice::cel
