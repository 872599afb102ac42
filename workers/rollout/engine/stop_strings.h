// Stop strings on incrementally decoded text.
//
// Each engine step appends the newly decoded text of a sequence and then asks two questions:
// did a stop string appear (FindStop; the output is cut where it begins, the stop string itself
// excluded), and if not, how much of the text can be streamed to the client now
// (StreamableLength). Text that might still turn into a stop string once more tokens arrive is
// held back, so a streamed byte is never retracted. Call FindStop first each step; when it finds
// nothing, StreamableLength never returns less than it did for a shorter prefix of the same text.
//
// Ownership and thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::engine {

// The byte offset in `text` where the earliest stop string occurrence begins, considering only
// occurrences that end after byte `checked_upto` (those ending earlier were looked for on an
// earlier call). Each call costs O((text.size() - checked_upto + longest stop) * stops). Empty
// stop strings are ignored. nullopt when none occurs.
std::optional<size_t> FindStop(std::string_view text, size_t checked_upto,
                               const std::vector<std::string>& stops);

// How many leading bytes of `text` (in which FindStop found no stop) are safe to stream: it
// holds back the longest suffix that is a proper prefix of some stop string, and any trailing
// incomplete UTF-8 sequence (a code point whose remaining bytes are still to come).
size_t StreamableLength(std::string_view text, const std::vector<std::string>& stops);

}  // namespace sluice::engine
