// GM201: a live name that is None on a path the `if` leaves as it was, and set to a value by a
// branch (see predicated_control_flow.hpp): the select takes only tensors of one layout.
#include <map>
#include <utility>

#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

// `cond` tests `name is None` (`is_none`) or `name is not None`, alone or as a conjunct of an
// `and` (`is_none`) / a disjunct of an `or` (not `is_none`).
bool tests_none(const Node& cond, const std::string& name, bool is_none) {
    const Node c = syntax::without_parens(cond);
    if (c.is("boolean_operator")) {
        const Node op = c.field("operator");
        if (!(is_none ? op.is("and") : op.is("or"))) return false;
        return tests_none(c.field("left"), name, is_none) || tests_none(c.field("right"), name, is_none);
    }
    if (!c.is("comparison_operator")) return false;
    const auto parts = c.named_children();
    if (parts.size() != 2 || parts[0].text() != name || !parts[1].is("none")) return false;
    std::string ops;
    for (const Node& k : c.children()) {
        if (!k.named()) ops += std::string(k.type()) + " ";
    }
    return ops == (is_none ? "is " : "is not ");
}

// `stmt`, a statement of a block, assigns None to `name` alone (`name = None`).
bool assigns_none(const Node& stmt, const std::string& name) {
    if (!stmt.is("expression_statement") || stmt.named_children().size() != 1) return false;
    const Node a = stmt.named_children()[0];
    return a.is("assignment") && a.field("left").is("identifier") && a.field("left").text() == name &&
           a.field("right") && syntax::without_parens(a.field("right")).is("none");
}

// For each block of a function and each name asked: per statement of the block (its start,
// from the function's), the line of the `name = None` before it with nothing between that
// binds the name, as lines after the function's first (+1; 0: none). Filled per block and
// name on first ask, in one pass over the block: a per-site scan of the block's statements
// took time as the square of the statements (4,000 `if`s in one forward).
struct NoneLines {
    mutable std::map<std::pair<std::uint32_t, std::string>, std::map<std::uint32_t, std::uint32_t>> by_block;
};

// The line of `name = None` before `stmt` in its block, with nothing between that binds
// `name`; 0 when there is none.
std::uint32_t none_assigned_before(const Node& stmt, const std::string& name) {
    const Node block = stmt.parent();
    const Node function = analysis::enclosing_function(stmt);
    if (!function) {  // module level: the statements before it, once
        const auto siblings = block.named_children();
        std::size_t at = 0;
        while (at < siblings.size() && !(siblings[at] == stmt)) ++at;
        for (std::size_t i = std::min(at, siblings.size()); i-- > 0;) {
            if (assigns_none(siblings[i], name)) return siblings[i].position().line;
            if (analysis::binds(siblings[i], name)) break;
        }
        return 0;
    }
    thread_local analysis::FunctionMemo<NoneLines> memo;
    const NoneLines& lines = memo.get(function, [](const Node&) { return NoneLines{}; });
    const std::uint32_t base = function.begin();
    const std::uint32_t first_line = function.position().line;
    auto [it, made] = lines.by_block.try_emplace({block.begin() - base, name});
    if (made) {
        std::uint32_t state = 0;
        for (const Node& child : block.named_children()) {
            it->second.emplace(child.begin() - base, state);
            if (assigns_none(child, name)) {
                state = child.position().line - first_line + 1;
            } else if (analysis::binds(child, name)) {
                state = 0;
            }
        }
    }
    const auto at = it->second.find(stmt.begin() - base);
    return at == it->second.end() || at->second == 0 ? 0 : at->second - 1 + first_line;
}

// The line that shows `name` is None where `stmt` runs: `name = None` before it in its block,
// or an enclosing `if` (`stmt` in the body of `if name is None [and ...]:`, or in the else of
// `if name is not None [or ...]:`), with nothing between that binds the name; 0 when none does.
std::uint32_t none_here(const Node& stmt, const std::string& name) {
    if (const std::uint32_t line = none_assigned_before(stmt, name)) return line;
    for (Node p = stmt.parent(); p && !p.is("function_definition") && !p.is("lambda"); p = p.parent()) {
        if (!p.is("block") && !p.is("else_clause")) continue;
        const Node owner = p.is("block") ? p.parent() : p.parent();
        if (!owner.is("if_statement")) continue;
        const bool in_body = p.is("block") && owner.field("consequence") == p;
        const bool in_else = p.is("else_clause");
        if (!(in_body && tests_none(owner.field("condition"), name, true)) &&
            !(in_else && tests_none(owner.field("condition"), name, false))) {
            continue;
        }
        return analysis::binds(p, name, stmt.begin()) ? 0 : owner.position().line;
    }
    return 0;
}

}  // namespace

// A live name that is None on a path that leaves it as it was (an enclosing `if` tests it) and
// that a branch sets to something written otherwise than `None`: the runtime selects only
// between tensors of one layout, so the `if` would always keep its break (timm's
// `if patch_valid is None ...: sentinel = ...; if sentinel.any(): patch_valid = ~sentinel`).
std::string none_on_a_path(const Node& stmt, const Plan& plan) {
    if (plan.all_return) return "";
    for (const auto& name : plan.live) {
        bool kept = !plan.has_else;
        bool set = false;
        for (const auto& b : plan.branches) {
            bool assigns = false;
            for (const auto& st : b.body) {
                if (st.kind != Statement::Assign || st.name != name) continue;
                assigns = true;
                set = set || !(st.value && syntax::without_parens(st.value).is("none"));
            }
            kept = kept || !assigns;
        }
        if (!kept || !set) continue;
        if (const std::uint32_t line = none_here(stmt, name)) {
            return fmt::format("`{}` is None where the `if` leaves it as it was (line {} shows it) and is set to a "
                               "value where it assigns it: the select takes only tensors of one layout, so the `if` "
                               "would keep its graph break",
                               name, line);
        }
    }
    return "";
}

}  // namespace graphmend::rules::control_flow
