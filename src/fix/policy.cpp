// The policy between rules: see policy.hpp.
#include "policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "graphmend/runtime_sources.hpp"

namespace graphmend::fix {

namespace {

rules::Policy policy_of(const rules::Site& site) {
    const rules::RuleInfo* info = rules::find_rule(site.code);
    return info != nullptr ? info->policy : rules::Policy{};
}

// The first call in `root` of a helper of a dynamic-shape rule's fallback block: `name (line N)`.
std::optional<std::string> fallback_call(const syntax::Node& root) {
    std::set<std::string_view, std::less<>> blocks;
    for (const auto& rule : rules::registry()) {
        const rules::Policy& policy = rule->info().policy;
        if (policy.dynamic_shape && !policy.fallback_block.empty()) blocks.insert(policy.fallback_block);
    }
    std::set<std::string_view, std::less<>> helpers;
    for (const runtime::Helper& h : runtime::kHelpers) {
        if (blocks.contains(h.stem)) helpers.insert(h.name);
    }
    std::optional<std::string> found;
    syntax::walk(root, [&](const syntax::Node& n) {
        if (found) return false;
        if (n.is("call") && n.field("function").is("identifier") && helpers.contains(n.field("function").text())) {
            found = fmt::format("call of {} at line {}", n.field("function").text(), n.position().line);
        }
        return !found;
    });
    return found;
}

}  // namespace

bool break_stays(const rules::Site& site, bool unsafe_fixes) {
    return !site.fix || !site.fix->condition.empty() ||
           (site.fix->applicability == rules::Applicability::Unsafe && !unsafe_fixes);
}

void refuse_abandoned_frames(std::vector<rules::Site>& sites, const syntax::Node& root, bool unsafe_fixes) {
    if (std::none_of(sites.begin(), sites.end(), [](const rules::Site& s) {
            return s.fix && policy_of(s).traces_abandoned_frame;
        })) {
        return;
    }
    std::optional<std::string> left;
    for (const auto& site : sites) {
        if (policy_of(site).dynamic_shape && break_stays(site, unsafe_fixes)) {
            const bool conditional = site.fix && !site.fix->condition.empty();
            left = fmt::format("{} site at line {} stays as written{}", site.code, site.where.line,
                               conditional ? " where its condition fails" : "");
            break;
        }
    }
    if (!left) {
        if (auto call = fallback_call(root)) left = *call + " runs the code as written where its condition fails";
    }
    if (!left) return;
    for (auto& site : sites) {
        if (!site.fix || !policy_of(site).traces_abandoned_frame) continue;
        site.reason = fmt::format("the file's {}; traced under this frame it would break there, adding breaks to a "
                                  "frame that now runs eagerly",
                                  *left);
        site.fix.reset();
    }
}

bool retried_inside_rewrite(const rules::Site& site) { return policy_of(site).retried_inside_rewrite; }

}  // namespace graphmend::fix
