// Claims, the rule lookup by code: see include/graphmend/rule.hpp.
#include "graphmend/rule.hpp"

#include <algorithm>

namespace graphmend::rules {

void Claims::add(std::uint32_t begin, std::uint32_t end, ClaimKind kind) {
    const Span span{begin, end, kind};
    const auto at = std::lower_bound(spans_.begin(), spans_.end(), span);
    if (at == spans_.end() || *at != span) spans_.insert(at, span);
}

bool Claims::covers(const syntax::Node& n, ClaimKind kind) const {
    // Claims are few (a handful per function that has any): a scan up to n's first byte.
    for (const Span& s : spans_) {
        if (s.begin > n.begin()) break;
        if (s.kind == kind && n.end() <= s.end) return true;
    }
    return false;
}

bool Claims::exact(const syntax::Node& n, ClaimKind kind) const {
    return std::binary_search(spans_.begin(), spans_.end(), Span{n.begin(), n.end(), kind});
}

const Claims& Context::claims() const {
    static const Claims kNone;
    return claims_of_file != nullptr ? *claims_of_file : kNone;
}

const RuleInfo* find_rule(std::string_view code) {
    for (const auto& rule : registry()) {
        if (rule->info().code == code) return &rule->info();
    }
    return nullptr;
}

}  // namespace graphmend::rules
