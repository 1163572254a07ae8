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

/// What accept() decided for one fix.
struct Acceptance {
    enum Outcome {
        Accepted,  // no edit overlaps an accepted one: the edits joined the accepted ones
        Within,    // every edit lies inside one accepted (non-empty) edit, whose rewrite covers the fix
        Overlaps,  // otherwise: the fix cannot be applied in this pass
    } outcome = Accepted;
    std::uint32_t within = 0;  // Within: the begin of the accepted edit that covers the fix
};

/// The policy for applying the fixes of one file, taken one after the other (in the
/// order of their sites): `proposed`, the edits of one fix, are accepted unless one of
/// them overlaps an edit in `accepted` (the edits of the fixes accepted before). An
/// accepted fix's edits are appended to `accepted`; otherwise `accepted` is unchanged.
/// Callers report Within as fixed by the covering rewrite, and Overlaps as refused for now.
[[nodiscard]] Acceptance accept(std::vector<Edit>& accepted, const std::vector<Edit>& proposed);

}  // namespace graphmend::edits
