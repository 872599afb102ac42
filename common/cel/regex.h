// Regular expressions for CEL's matches(), on PCRE2 with bounded matching.
//
// Kubernetes evaluates matches() with RE2, whose matching time is linear in the input. PCRE2
// backtracks (as libstdc++'s std::regex, used here before, does), so a pattern such as ^(a+)+$
// would take time exponential in the input; and matches() may take its pattern from the object
// under validation (`self.value.matches(self.pattern)`), so the pattern is outside bytes too.
// Every search therefore runs under a limit of backtracking steps and of nesting depth, and a
// search that reaches either answers an error instead of holding the API server's thread.
// PCRE2's syntax is a superset of RE2's for what CRD rules use (classes, anchors, `(?i)`,
// repetition); patterns and subjects are UTF-8, and invalid UTF-8 in a subject never matches a
// character rather than failing the search.
//
// Ownership: Compile returns a shared, immutable object.
// Thread safety: Search may run concurrently on one Regex (each call has its own match data).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

struct pcre2_real_code_8;

namespace sluice::cel {

// Backtracking steps one search may take (PCRE2's match limit): a few milliseconds of work.
inline constexpr uint32_t kMaxRegexMatchSteps = 1'000'000;
// How deeply one search may nest its backtracking (PCRE2's depth limit).
inline constexpr uint32_t kMaxRegexMatchDepth = 10'000;

class Regex {
 public:
  // InvalidArgument naming the offset and PCRE2's reason when `pattern` does not compile.
  static Result<std::shared_ptr<const Regex>> Compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Whether the pattern matches anywhere in `subject` (matches() is a search, as in CEL).
  // TooLarge when the search needed more than kMaxRegexMatchSteps steps or
  // kMaxRegexMatchDepth depth; Internal for any other PCRE2 failure.
  Result<bool> Search(std::string_view subject) const;

 private:
  explicit Regex(pcre2_real_code_8* code) : code_(code) {}
  pcre2_real_code_8* code_;  // Owned.
};

}  // namespace sluice::cel
