// Rule pages: docs/rules/<CODE>.md, embedded at build time (cmake/EmbedRulePages.cmake into
// the generated graphmend/rule_pages_text.hpp) and printed by `graphmend rule`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphmend::output {

struct RulePage {
    std::string_view code;  // "GM101"
    std::string_view name;  // "deferred-side-effect"
    std::string_view text;  // the page, Markdown, as in docs/rules/GM101.md
};

/// The page of the registered rule with this code ("GM101") or name ("deferred-side-effect");
/// nullopt when no registered rule has that code or name, or the rule has no page.
std::optional<RulePage> rule_page(std::string_view code_or_name);

/// The page of every registered rule that has one, in registry order.
std::vector<RulePage> rule_pages();

/// `graphmend rule`: prints the page of `code_or_name`, or with `all` every page (separated
/// by a blank line), to stdout, and returns 0. An unknown rule prints an error listing the
/// codes to stderr and returns 2 (a usage error).
int print_rule_pages(const std::string& code_or_name, bool all);

}  // namespace graphmend::output
