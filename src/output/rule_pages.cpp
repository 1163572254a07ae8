// Rule pages by code or name: see include/graphmend/rule_pages.hpp.
#include "graphmend/rule_pages.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "graphmend/rule.hpp"
#include "graphmend/rule_pages_text.hpp"

namespace graphmend::output {

namespace {

std::optional<std::string_view> embedded_page(std::string_view code) {
    for (const auto& page : embedded::kPages) {
        if (page.code == code) return page.text;
    }
    return std::nullopt;
}

std::optional<RulePage> page_of(const rules::RuleInfo& info) {
    const auto text = embedded_page(info.code);
    if (!text) return std::nullopt;
    return RulePage{info.code, info.name, *text};
}

std::string known_rules() {
    std::string out;
    for (const auto& rule : rules::registry()) {
        const auto& info = rule->info();
        out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", info.code, info.name);
    }
    return out;
}

}  // namespace

std::optional<RulePage> rule_page(std::string_view code_or_name) {
    for (const auto& rule : rules::registry()) {
        const auto& info = rule->info();
        if (info.code == code_or_name || info.name == code_or_name) return page_of(info);
    }
    return std::nullopt;
}

std::vector<RulePage> rule_pages() {
    std::vector<RulePage> out;
    for (const auto& rule : rules::registry()) {
        if (auto page = page_of(rule->info())) out.push_back(*page);
    }
    return out;
}

int print_rule_pages(const std::string& code_or_name, bool all) {
    if (all) {
        bool first = true;
        for (const auto& page : rule_pages()) {
            fmt::print("{}{}", first ? "" : "\n", page.text);
            first = false;
        }
        return 0;
    }
    const auto page = rule_page(code_or_name);
    if (!page) {
        fmt::print(stderr, "error: unknown rule '{}'; the rules are {}\n", code_or_name, known_rules());
        return 2;
    }
    fmt::print("{}", page->text);
    return 0;
}

}  // namespace graphmend::output
