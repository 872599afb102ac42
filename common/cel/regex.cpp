#include "common/cel/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

namespace sluice::cel {
namespace {

std::string ErrorMessage(int error) {
  std::array<PCRE2_UCHAR, 256> buf{};
  pcre2_get_error_message(error, buf.data(), buf.size());
  return reinterpret_cast<const char*>(buf.data());
}

}  // namespace

Result<std::shared_ptr<const Regex>> Regex::Compile(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  // No JIT: the match limit then counts the interpreter's backtracking steps, the same on every
  // machine, so whether a rule answers does not depend on where it runs.
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &error, &error_offset, nullptr);
  if (code == nullptr) {
    return Status::InvalidArgument("at offset " + std::to_string(error_offset) + ": " +
                                   ErrorMessage(error));
  }
  return std::shared_ptr<const Regex>(new Regex(code));
}

Regex::~Regex() { pcre2_code_free(code_); }

Result<bool> Regex::Search(std::string_view subject) const {
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_, nullptr);
  if (context == nullptr || data == nullptr) {
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
    return Status::Internal("out of memory for a regular expression search");
  }
  pcre2_set_match_limit(context, kMaxRegexMatchSteps);
  pcre2_set_depth_limit(context, kMaxRegexMatchDepth);
  const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0,
                             0, data, context);
  pcre2_match_data_free(data);
  pcre2_match_context_free(context);
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) {
    return Status::TooLarge("the regular expression needs more than " +
                            std::to_string(kMaxRegexMatchSteps) +
                            " backtracking steps on this input (" + ErrorMessage(rc) + ")");
  }
  return Status::Internal("regular expression search failed: " + ErrorMessage(rc));
}

}  // namespace sluice::cel
