// graphmend edits: byte-range replacements on the original text.
//
// An Edit replaces the bytes [begin, end) of the original UTF-8 text with `text`
// (begin == end inserts). Every byte outside an edit is kept exactly. Edits of one
// rewrite never overlap; overlapping edits are a bug in a rule and are rejected with
// OverlapError rather than resolved silently.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace graphmend::edits {

struct Edit {
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
    std::string text;

    [[nodiscard]] bool operator==(const Edit&) const = default;
};

/// Thrown by apply() when two edits overlap (two inserts at one offset also count).
class OverlapError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

/// Applies `edits` (any order) to `original`. Throws OverlapError on overlap and
/// std::out_of_range when an edit lies outside the text.
[[nodiscard]] std::string apply(std::string_view original, std::vector<Edit> edits);

/// True when the two edits touch a common byte, or are inserts at the same offset.
[[nodiscard]] bool overlap(const Edit& a, const Edit& b);

}  // namespace graphmend::edits
