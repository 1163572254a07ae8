// Edits: see include/graphmend/edits.hpp.
#include "graphmend/edits.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace graphmend::edits {

bool overlap(const Edit& a, const Edit& b) {
    if (a.begin == b.begin) return true;
    const Edit& first = a.begin < b.begin ? a : b;
    const Edit& second = a.begin < b.begin ? b : a;
    return first.end > second.begin;
}

Acceptance accept(std::vector<Edit>& accepted, const std::vector<Edit>& proposed) {
    const bool clashes = std::any_of(proposed.begin(), proposed.end(), [&](const Edit& e) {
        return std::any_of(accepted.begin(), accepted.end(), [&](const Edit& a) { return overlap(a, e); });
    });
    if (!clashes) {
        accepted.insert(accepted.end(), proposed.begin(), proposed.end());
        return {Acceptance::Accepted};
    }
    const auto within = std::find_if(accepted.begin(), accepted.end(), [&](const Edit& a) {
        return std::all_of(proposed.begin(), proposed.end(), [&](const Edit& e) {
            return a.begin <= e.begin && e.end <= a.end && a.begin < a.end;
        });
    });
    if (within != accepted.end()) return {Acceptance::Within, within->begin};
    return {Acceptance::Overlaps};
}

std::string apply(std::string_view original, std::vector<Edit> edits) {
    std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::string out;
    out.reserve(original.size());
    std::uint32_t cursor = 0;
    for (std::size_t i = 0; i < edits.size(); ++i) {
        const Edit& e = edits[i];
        if (e.end < e.begin || e.end > original.size()) {
            throw std::out_of_range(fmt::format("edit [{}, {}) outside a text of {} bytes", e.begin, e.end,
                                                original.size()));
        }
        if (i > 0 && overlap(edits[i - 1], e)) {
            throw OverlapError(fmt::format("overlapping edits [{}, {}) and [{}, {})", edits[i - 1].begin,
                                           edits[i - 1].end, e.begin, e.end));
        }
        out.append(original.substr(cursor, e.begin - cursor));
        out.append(e.text);
        cursor = e.end;
    }
    out.append(original.substr(cursor));
    return out;
}

}  // namespace graphmend::edits
