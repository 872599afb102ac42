// Did-you-mean suggestions for misspelled flags, YAML keys and enum values.
//
// Distance is optimal string alignment (Levenshtein plus adjacent transpositions, so "replcias"
// is one edit from "replicas"), compared ASCII case-insensitively so "listenaddress" finds
// "listenAddress".
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::config {

size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if close enough to be a plausible typo: at most a third of the
// word's length in edits (at least one, at most three). Ties go to the earlier candidate.
std::optional<std::string> ClosestMatch(std::string_view word,
                                        const std::vector<std::string>& candidates);

}  // namespace sluice::config
