// Answer extraction: finding the final answer in a model's completion, and normalising it for
// exact comparison.
//
// Completions carry their answer in one of a few conventions: a LaTeX box (\boxed{42}, the MATH
// and most reasoning-model prompts), an <answer>...</answer> tag (R1-style prompts), or a closing
// sentence ("The answer is 42."). FinalAnswerText tries them in that order, most explicit first,
// and falls back to the whole completion so a bare-answer model still scores.
//
// Every function is linear in the input's length, so a long or adversarial completion cannot
// stall a rollout worker.
//
// Ownership and thread safety: pure functions; results own their bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::rollout {

// The content of the last top-level \boxed{...} or \fbox{...} in `text`, braces balanced (an
// escaped \{ or \} does not count), verbatim. Also accepts the brace-less TeX form "\boxed 42",
// whose content runs to the next whitespace or '$'. A box nested in another belongs to the outer
// one; an unclosed box (a truncated completion) is skipped. Empty when there is none.
std::string ExtractBoxed(std::string_view text);

// The content of the last complete <answer>...</answer> in `text` (tag names compared
// ASCII-case-insensitively), verbatim. Empty when there is none.
std::string ExtractAnswerTag(std::string_view text);

// The final answer in a completion, trimmed of surrounding whitespace: the last box's content if
// it is not blank; else the last <answer> tag's content if not blank; else the rest of the line
// after the last "answer is" or "answer:" marker (ASCII-case-insensitive, as a whole word; markdown
// bold around the marker and the answer, "**Answer:** **42**", and a ':' after "answer is" are
// skipped; a marker ending its line takes the next non-blank line); else the whole completion.
std::string FinalAnswerText(std::string_view response);

// The form exact-match compares: trimmed, internal whitespace runs collapsed to one space, ASCII
// letters lower-cased; then, repeated while something changes, a surrounding $...$ (or $$...$$)
// and a surrounding pair of matching quotes (" or ') are removed and the result re-trimmed, and
// one trailing period is removed (at most one in all). "  The  \"Answer\". " -> "the \"answer\"";
// "$42$." -> "42".
std::string NormaliseAnswer(std::string_view text);

// `text` in double quotes for a RewardOutcome detail or a log line, cut to at most `max_bytes`
// bytes of it (never inside a UTF-8 sequence) with "..." marking a cut.
std::string QuoteExcerpt(std::string_view text, size_t max_bytes = 80);

}  // namespace sluice::rollout
