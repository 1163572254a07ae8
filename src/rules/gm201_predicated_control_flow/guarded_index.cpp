// GM201: an index a branch reads under a test that shows it not negative (`X[I] if I >= 0
// else B`): the select runs the branch on the other path too, so the index is clamped there
// (the runtime's _graphmend_index) and the select made only where both branches may run
// (_graphmend_indexable). See predicated_control_flow.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

// An integer literal, with its sign: `0`, `-1`.
std::optional<std::int64_t> signed_int(const Node& n) {
    const Node v = syntax::without_parens(n);
    if (v.is("unary_operator") && v.field("operator").text() == "-") {
        const auto i = syntax::int_value(v.field("argument"));
        return i ? std::optional<std::int64_t>(-*i) : std::nullopt;
    }
    return v.is("integer") ? syntax::int_value(v) : std::nullopt;
}

}  // namespace

std::optional<IndexGuard> index_guard_of(const Node& test, const Node& if_true, const Node& if_false) {
    const Node t = syntax::without_parens(test);
    if (!t.is("comparison_operator")) return std::nullopt;
    const auto operands = t.named_children();
    std::vector<std::string_view> ops;
    for (const Node& c : t.children()) {
        if (!c.named()) ops.push_back(c.type());
    }
    if (operands.size() != 2 || ops.size() != 1) return std::nullopt;
    // As `I OP k`: the index on the left.
    std::string_view op = ops[0];
    Node index = operands[0];
    auto k = signed_int(operands[1]);
    if (!k) {
        k = signed_int(operands[0]);
        index = operands[1];
        static const std::map<std::string_view, std::string_view> kFlip{{">=", "<="}, {"<=", ">="}, {">", "<"}, {"<", ">"}};
        const auto it = kFlip.find(op);
        if (!k || it == kFlip.end()) return std::nullopt;
        op = it->second;
    }
    if (signed_int(index)) return std::nullopt;
    const bool not_negative_when_true = (op == ">=" && *k == 0) || (op == ">" && *k == -1);
    const bool not_negative_when_false = (op == "<" && *k == 0) || (op == "<=" && *k == -1);
    if (!not_negative_when_true && !not_negative_when_false) return std::nullopt;
    const Node branch = not_negative_when_true ? if_true : if_false;
    return IndexGuard{std::string(index.text()), branch.begin(), branch.end()};
}

bool Checker::clamp_index(const Node& n, const Node& index, std::size_t file) {
    if (!index_guard || file != ctx.file || n.begin() < index_guard->begin || n.end() > index_guard->end) return false;
    if (index.text() != index_guard->index || index.next_named_sibling()) return false;
    // Both are read again by `selectable`: names and attribute chains, which read no state twice.
    if (analysis::chain_text(n.field("value")).empty() || analysis::chain_text(index).empty()) return false;
    if (std::none_of(clamped.begin(), clamped.end(), [&](const Node& c) { return c.begin() == n.begin(); })) {
        clamped.push_back(n);
    }
    return true;
}

std::string Checker::clamped_text(const Node& part) const {
    std::vector<Node> inside;
    for (const Node& c : clamped) {
        if (c.begin() >= part.begin() && c.end() <= part.end()) inside.push_back(c);
    }
    std::sort(inside.begin(), inside.end(), [](const Node& a, const Node& b) { return a.begin() < b.begin(); });
    std::string out;
    std::uint32_t at = part.begin();
    for (const Node& c : inside) {
        if (c.begin() < at) continue;  // inside a subscript rewritten already
        out += part.source().slice(at, c.begin());
        out += fmt::format("{}({}, {})", runtime::name::index, c.field("value").text(), c.field("subscript").text());
        at = c.end();
    }
    out += part.source().slice(at, part.end());
    return out;
}

std::string Checker::selectable_argument() const {
    std::vector<std::string> tests;
    for (const Node& c : clamped) {
        const std::string test =
            fmt::format("{}({}, {})", runtime::name::indexable, c.field("value").text(), c.field("subscript").text());
        if (std::find(tests.begin(), tests.end(), test) == tests.end()) tests.push_back(test);
    }
    if (tests.empty()) return "";
    return fmt::format(", selectable=lambda: {}", fmt::join(tests, " and "));
}

}  // namespace graphmend::rules::control_flow
