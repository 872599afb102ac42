// Lexer: splits a CEL expression into tokens (docs/cel.md lists the accepted syntax).
//
// Literals are decoded here: integers (decimal or 0x hex, optional u/U suffix), doubles, strings
// in single, double or triple quotes with escapes, raw strings (r"..."). Bytes literals (b"..."),
// reserved words used as names and unknown characters are errors with a 1-based byte column.
//
// Ownership: tokens own their text. Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::cel {

enum class TokenKind : uint8_t {
  kEnd,     // end of input
  kInt,     // int literal without sign; `number` holds it (may exceed INT64_MAX, see parser)
  kUint,    // 123u
  kDouble,  // 1.5, 1e3
  kString,  // decoded text in `text`
  kIdent,   // identifier or keyword (true, false, null, in) in `text`
  kPunct,   // operator or punctuation in `text`: ( ) [ ] { } . , : ? + - * / % ! == != < <= > >=
            // && ||
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  int column = 0;       // 1-based byte offset of the first character
  std::string text;     // identifier, punctuation, or decoded string
  uint64_t number = 0;  // kInt, kUint
  double real = 0;      // kDouble
};

// Returns the tokens, the last one kEnd. Errors are InvalidArgument "syntax error at column N:
// ...".
Result<std::vector<Token>> Lex(std::string_view text);

// True for CEL's reserved words that may not be used as identifiers (as, break, const, ...).
bool IsReservedWord(std::string_view word);

}  // namespace sluice::cel
