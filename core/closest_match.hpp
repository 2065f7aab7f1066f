#pragma once
// "Did you mean" hints for names the user mistyped (config keys, codec names and parameters).
#include <span>
#include <string>
#include <string_view>

namespace qgossip {

// The candidate closest to `word` in optimal-string-alignment distance (insertions, deletions,
// substitutions, adjacent transpositions), or "" when none is within max(1, |word|/3) edits.
std::string closest_match(std::string_view word, std::span<const std::string> candidates);

}  // namespace qgossip
