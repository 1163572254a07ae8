// GM201: a live name a branch sets to True or False that the function only ever tests for
// truth (see predicated_control_flow.hpp). Selected, it is a one-element bool tensor where the
// `if` gave a Python bool; every read of it asks bool() of it, which answers the same.
#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

// Whether the identifier `n`, a read, reaches only a truth test: the test of if/elif/while,
// of a conditional expression or of an assert, the operand of `not` (a Python bool either
// way), or an operand of `and`/`or` whose value is itself only tested.
bool tested_only(Node n) {
    for (Node p = n.parent(); p; n = p, p = p.parent()) {
        if (p.is("parenthesized_expression") || p.is("boolean_operator")) continue;
        if (p.is("not_operator")) return true;
        if (p.is("if_statement") || p.is("elif_clause") || p.is("while_statement")) {
            return n.in_field("condition");
        }
        if (p.is("conditional_expression")) return p.named_children().size() == 3 && p.named_children()[1] == n;
        if (p.is("assert_statement")) return p.named_children().front() == n;
        return false;
    }
    return false;
}

// Whether the identifier `n` is a name bound by an assignment or a loop (`name = ...`,
// `a, name = ...`, `for name in ...`), not a read.
bool bound_here(const Node& n) {
    Node at = n;
    for (Node p = n.parent(); p; at = p, p = p.parent()) {
        if (p.is("pattern_list") || p.is("tuple_pattern") || p.is("list_pattern") ||
            (p.is("parenthesized_expression") && at.is("identifier"))) {
            continue;
        }
        if (p.is("assignment")) return at.in_field("left");
        if (p.is("for_statement") || p.is("for_in_clause")) return at.in_field("left");
        return false;
    }
    return false;
}

}  // namespace

std::optional<Node> truth_reads_only(const Node& def, const std::string& name) {
    std::optional<Node> first;
    bool only = true;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (!only) return false;
        if (n.is("global_statement") || n.is("nonlocal_statement") || n.is("delete_statement")) {
            only = only && n.text().find(name) == std::string_view::npos;
            return false;
        }
        if (!n.is("identifier") || n.text() != name) return true;
        const Node p = n.parent();
        if (p.is("attribute") && n.in_field("attribute")) return false;  // obj.NAME
        if (p.is("keyword_argument") && n.in_field("name")) return false;  // f(NAME=...)
        if (bound_here(n)) return false;
        if (!tested_only(n)) {
            only = false;
            return false;
        }
        if (!first) first = n;
        return false;
    });
    if (!only) return std::nullopt;
    return first;
}

}  // namespace graphmend::rules::control_flow
