// Row subsets (see row_subset.cpp): the body of one `if len(I) > 0:`, checked with a strict
// RowFlow (row_layout.cpp) seeded with the ranks of the locals assigned before it.
#include <fmt/format.h>

#include <set>

#include "graphmend/liveness.hpp"
#include "row_subset.hpp"
#include "rules/support/site.hpp"
#include "rules/support/rowwise.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {


std::vector<Node> statements(const Node& block) {
    std::vector<Node> out;
    for (const Node& s : block.named_children()) {
        if (!s.is("comment")) out.push_back(s);
    }
    return out;
}

Node assignment_of(const Node& stmt) {
    if (!stmt.is("expression_statement")) return {};
    const auto parts = stmt.named_children();
    return parts.size() == 1 && (parts[0].is("assignment") || parts[0].is("augmented_assignment")) ? parts[0] : Node();
}

// Every name bound inside `node` (assignment and loop targets, unpacked ones included).
std::set<std::string> bound_in(const Node& node) {
    std::set<std::string> out;
    syntax::walk(node, [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("identifier") && !analysis::is_read(n)) {
            const Node p = n.parent();
            if (!(p.is("attribute") && p.field("attribute") == n) && !(p.is("keyword_argument") && p.field("name") == n)) {
                out.insert(text(n));
            }
        }
        return true;
    });
    return out;
}

// The ranks of the locals assigned before `guard` on its path from the top of `fn`.
void seed_ranks(RowFlow& flow, const Node& fn, const Node& guard) {
    std::vector<Node> path;  // statements around the guard, outermost first
    for (Node p = guard; p && !(p == fn); p = p.parent()) {
        if (p.parent().is("block")) path.insert(path.begin(), p);
    }
    for (const Node& on_path : path) {
        for (const Node& s : statements(on_path.parent())) {
            if (s == on_path) break;
            const Node a = assignment_of(s);
            if (a && a.is("assignment") && a.field("left").is("identifier")) {
                const auto r = flow.plain_rank(a.field("right"));
                const std::string name = text(a.field("left"));
                if (r.known()) {
                    flow.ranks[name] = r;
                } else {
                    flow.ranks.erase(name);
                }
                continue;
            }
            for (const auto& name : bound_in(s)) flow.ranks.erase(name);
        }
    }
}

// The indices of a subscript other than its value.
std::vector<Node> parts_of(const Node& subscript) {
    std::vector<Node> parts;
    for (const Node& i : subscript.named_children()) {
        if (!(i == subscript.field("value")) && !i.is("comment")) parts.push_back(i);
    }
    if (parts.size() == 1 && syntax::without_parens(parts[0]).is("tuple")) parts = syntax::without_parens(parts[0]).named_children();
    return parts;
}

bool int_literal(const Node& node) {
    const Node n = syntax::without_parens(node);
    return n.is("integer") || (n.is("unary_operator") && n.field("operator").text() == "-" &&
                               syntax::without_parens(n.field("argument")).is("integer"));
}

// `Y[I, ...] = V`: checks it and records it; false with `why`.
bool check_put(RowFlow& flow, const Node& a, RowSubset::Guard& g, std::string& why) {
    const Node left = a.field("left");
    const Node y = syntax::without_parens(left.field("value"));
    const auto parts = parts_of(left);
    const int line = static_cast<int>(a.position().line);
    if (!y.is("identifier") || flow.holds_rows(y)) {
        why = fmt::format("line {}: a write into `{}`, not a local that holds no rows", line, y.text());
        return false;
    }
    if (parts.empty() || !syntax::without_parens(parts[0]).is("identifier") || parts[0].text() != g.param) {
        why = fmt::format("line {}: a write whose first index is not `{}`", line, g.param);
        return false;
    }
    int ints = 0;
    for (std::size_t i = 1; i < parts.size(); ++i) {
        const Node q = syntax::without_parens(parts[i]);
        if (flow.holds_rows(q) || !(q.is("slice") || q.is("ellipsis") || int_literal(q))) {
            why = fmt::format("line {}: a write with an index beside `{}` that is not a slice, an integer or `...`",
                              line, g.param);
            return false;
        }
        ints += int_literal(q) ? 1 : 0;
    }
    const auto v = flow.expr(a.field("right"));
    if (!v) {
        why = flow.why();
        return false;
    }
    const auto target = flow.plain_rank(y);
    const auto value = flow.rank_of(a.field("right"));
    if (!*v || flow.is_blocks(a.field("right"))) {
        why = fmt::format("line {}: the value written is not rows of the mask's rows", line);
        return false;
    }
    if (!target.exact || !value.exact || target.n - ints != value.n) {
        why = fmt::format("line {}: the value written cannot be shown to have the rank of the rows it replaces "
                          "(broadcasting could mix rows)",
                          line);
        return false;
    }
    g.puts.push_back(a);
    g.tensors.push_back(text(y));
    return true;
}

}  // namespace

bool check_guard(const Context& ctx, std::size_t file, RowSubset::Guard& g, std::string& why) {
    const Node guard = g.guard;
    const int line = static_cast<int>(guard.position().line);
    for (const Node& c : guard.named_children()) {
        if (c.is("elif_clause") || c.is("else_clause")) {
            why = fmt::format("line {}: the `if` that tests `{}` has an elif or else", line, g.param);
            return false;
        }
    }
    for (Node p = guard.parent(); p && !(p == g.fn); p = p.parent()) {
        if (p.is("for_statement") || p.is("while_statement")) {
            why = fmt::format("line {}: the `if` that tests `{}` is inside a loop", line, g.param);
            return false;
        }
    }
    RowFlow flow(ctx, file, g.fn, owner_of(g.fn));
    flow.strict = true;
    flow.root = guard.field("consequence");
    flow.index.insert(g.param);
    seed_ranks(flow, g.fn, guard);
    for (const Node& s : statements(guard.field("consequence"))) {
        if (s.is("pass_statement")) continue;
        const Node a = assignment_of(s);
        if (a && a.is("assignment") && a.field("left").is("subscript") && flow.holds_rows(a.field("left"))) {
            if (!check_put(flow, a, g, why)) return false;
            continue;
        }
        if (a) {
            if (!flow.assignment(a)) {
                why = flow.why();
                return false;
            }
            continue;
        }
        if (s.is("expression_statement") && s.named_children().size() == 1 && s.named_children()[0].is("string")) {
            continue;
        }
        if (s.is("if_statement") && !flow.reads_row_values(s.field("condition"))) {
            std::vector<Node> blocks{s.field("consequence")};
            for (const Node& c : s.named_children()) {
                if (c.is("elif_clause") && flow.reads_row_values(c.field("condition"))) {
                    why = fmt::format("line {}: an `elif` that tests the rows", c.position().line);
                    return false;
                }
                if (c.is("elif_clause")) blocks.push_back(c.field("consequence"));
                if (c.is("else_clause")) blocks.push_back(c.field("body"));
            }
            for (const Node& b : blocks) {
                if (!flow.block(b)) {
                    why = flow.why();
                    return false;
                }
            }
            continue;
        }
        why = fmt::format("line {}: `{}` would run also when the mask picks no row", s.position().line,
                          one_line(s.text()));
        return false;
    }
    if (!flow.strict_effects(guard.field("consequence"))) {
        why = flow.why();
        return false;
    }
    if (g.puts.empty()) {
        why = fmt::format("line {}: no `Y[{}] = VALUE` writes the rows back", line, g.param);
        return false;
    }
    const std::set<std::string> bound = bound_in(guard.field("consequence"));
    std::set<std::uint32_t> seen;
    for (const Node& x : flow.gathers) {
        if (!seen.insert(x.begin()).second) continue;
        const Node v = syntax::without_parens(x.field("value"));
        if (!v.is("identifier") || bound.contains(text(v))) {
            why = fmt::format("line {}: rows gathered from `{}`, not a local set before the `if`",
                              x.position().line, v.text());
            return false;
        }
        g.gathers.push_back(x);
        g.tensors.push_back(text(v));
    }
    if (bound.contains(g.param)) {
        why = fmt::format("line {}: `{}` is assigned inside the `if`", line, g.param);
        return false;
    }
    for (const auto& y : g.tensors) {
        if (bound.contains(y)) {
            why = fmt::format("line {}: `{}` is assigned inside the `if`", line, y);
            return false;
        }
    }
    syntax::walk(g.fn.field("body"), [&](const Node& n) {
        if (!why.empty()) return false;
        if (n.is("identifier") && n.begin() >= guard.end() && bound.contains(text(n)) && analysis::is_read(n)) {
            why = fmt::format("line {}: `{}` is read after the `if`, where the static form leaves other values",
                              n.position().line, n.text());
        }
        return true;
    });
    if (!why.empty()) return false;
    g.needs_eval = flow.needs_eval;
    if (g.needs_eval && owner_of(g.fn).empty()) {
        why = "a Dropout or BatchNorm in the computation, outside a module method whose eval mode could be checked";
        return false;
    }
    return true;
}

}  // namespace graphmend::rules
