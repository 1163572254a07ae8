// GM201: a call every branch ends in, made once after the select (see
// predicated_control_flow.hpp, hoist_common_call).
//
//     if TEST:                                  _graphmend_param_add = _graphmend_if(TEST,
//         param.add_(A, alpha=-1.0)     ->          lambda: A, lambda: B, grad_safe=...)
//     else:                                     param.add_(_graphmend_param_add, alpha=-1.0)
//         param.add_(B, alpha=-1.0)
//
// Only an in-place op of a tensor (knowledge::in_place): it reads its arguments' values and
// keeps none of them, so a selected copy of an argument does what the branch's own did.
#include <algorithm>

#include "graphmend/knowledge.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"
#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

// A block's statements, comments left out.
std::vector<Node> statements_of(const Node& block) {
    std::vector<Node> out;
    for (const Node& s : block.named_children()) {
        if (!s.is("comment")) out.push_back(s);
    }
    return out;
}

// The call a block ends in, made for its effect (an expression statement), or an invalid node.
Node trailing_call(const std::vector<Node>& statements) {
    if (statements.empty()) return Node();
    const Node last = statements.back();
    if (!last.is("expression_statement") || last.named_children().size() != 1) return Node();
    const Node call = last.named_children()[0];
    return call.is("call") ? call : Node();
}

// The name at the root of `self.param` / `param`, or "" when the target is not a name or an
// attribute of one (a call, an item: its object could differ between the branches).
std::string target_root(const Node& target) {
    Node t = syntax::without_parens(target);
    while (t.is("attribute")) t = syntax::without_parens(t.field("object"));
    return t.is("identifier") ? text(t) : "";
}

// The last name of the target (`param` for `self.param`), for the temporaries' names.
std::string target_name(const Node& target) {
    const Node t = syntax::without_parens(target);
    return t.is("attribute") ? text(t.field("attribute")) : text(t);
}

// The arguments of a call, comments left out.
std::vector<Node> arguments_of(const Node& call) {
    std::vector<Node> out;
    for (const Node& a : call.field("arguments").named_children()) {
        if (!a.is("comment")) out.push_back(a);
    }
    return out;
}

// The name of a keyword argument, or "" for a positional one.
std::string keyword_of(const Node& arg) { return arg.is("keyword_argument") ? text(arg.field("name")) : ""; }

Node value_of(const Node& arg) { return arg.is("keyword_argument") ? arg.field("value") : arg; }

// True when `expr` reads one of `names`.
bool reads_any(const Node& expr, const std::set<std::string>& names) {
    bool found = false;
    syntax::walk(expr, [&](const Node& n) {
        if (found || n.is("lambda")) return false;
        if (n.is("identifier") && is_read(n) && names.contains(text(n))) found = true;
        return !found;
    });
    return found;
}

// True when `expr` reads the call's target (`param`, `self.state`).
bool reads_target(const Node& expr, const Node& target) {
    bool found = false;
    syntax::walk(expr, [&](const Node& n) {
        if (found || n.is("lambda")) return false;
        found = (n.is("identifier") || n.is("attribute")) && n.text() == target.text() &&
                !(n.is("identifier") && !is_read(n));
        return !found;
    });
    return found;
}

}  // namespace

// Over 120 lines: the checks of one hoisting (common call, target, differing arguments, each
// branch converted) share the plan they fill in order; to be split into those steps (issue 31).
std::optional<std::string> hoist_common_call(Checker& checker, const Node& stmt, const Scope& scope, Plan& plan) {
    std::vector<Node> tests{stmt.field("condition")};
    std::vector<std::vector<Node>> blocks{statements_of(stmt.field("consequence"))};
    bool has_else = false;
    for (const Node& alt : stmt.children()) {
        if (alt.is("elif_clause")) {
            tests.push_back(alt.field("condition"));
            blocks.push_back(statements_of(alt.field("consequence")));
        } else if (alt.is("else_clause")) {
            tests.push_back(Node());
            blocks.push_back(statements_of(alt.field("body")));
            has_else = true;
        }
    }
    std::vector<Node> calls;
    for (const auto& block : blocks) calls.push_back(trailing_call(block));
    const Node fn = calls[0] ? calls[0].field("function") : Node();
    if (!fn || !fn.is("attribute") || !knowledge::in_place(fn.field("attribute").text())) return std::nullopt;
    for (const Node& call : calls) {
        if (!call || call.field("function").text() != fn.text()) return std::nullopt;
    }
    const std::string method = text(fn.field("attribute"));
    const std::string what = fmt::format("the call `{}(...)` that every branch ends in", fn.text());
    if (!has_else) return std::nullopt;  // the path that takes no branch makes no call
    if (knowledge::keeps_argument(method)) {
        return fmt::format("{} keeps its argument (`{}` makes the target share its storage): a select would hand "
                           "it a new tensor",
                           what, method);
    }
    const Node target = fn.field("object");
    const std::string root = target_root(target);
    if (root.empty()) return fmt::format("{} is on `{}`, which may be another object in each branch", what, target.text());
    // The branches' other statements, as the lambdas evaluate them.
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        plan.branches.push_back({tests[i], {}, false});
        blocks[i].pop_back();
        if (auto why = checker.convert(blocks[i], plan.branches.back()); !why.empty()) return why;
        if (plan.branches.back().returns) return fmt::format("a branch returns before {}", what);
        if (tests[i] && i > 0) {
            if (auto why = checker.impurity(tests[i]); !why.empty()) return why;
        }
    }
    plan.has_else = true;
    if (auto why = checker.impurity(stmt.field("condition"), true); !why.empty()) return "the test " + why;
    // Names a branch assigns: an argument reading one differs between the branches.
    std::vector<std::set<std::string>> assigned(blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        for (const auto& st : plan.branches[i].body) {
            if (st.kind == Statement::Assign) assigned[i].insert(st.name);
        }
        if (assigned[i].contains(root)) {
            return fmt::format("a branch rebinds `{}`, the object of {}", root, what);
        }
    }
    std::vector<std::vector<Node>> args;
    for (const Node& call : calls) args.push_back(arguments_of(call));
    for (const auto& a : args) {
        if (a.size() != args[0].size()) return fmt::format("{} passes other arguments in each branch", what);
        for (std::size_t j = 0; j < a.size(); ++j) {
            if (a[j].is("list_splat") || a[j].is("dictionary_splat")) {
                return fmt::format("{} passes `*` or `**` arguments", what);
            }
            if (keyword_of(a[j]) != keyword_of(args[0][j])) {
                return fmt::format("{} passes other arguments in each branch", what);
            }
        }
    }
    // Each argument: the same text, reading nothing a branch assigns (made once, after the
    // select), or one the branches differ in (selected).
    std::vector<std::size_t> differing;
    for (std::size_t j = 0; j < args[0].size(); ++j) {
        bool same = true;
        for (std::size_t i = 0; i < args.size(); ++i) {
            same = same && value_of(args[i][j]).text() == value_of(args[0][j]).text() &&
                   !reads_any(value_of(args[i][j]), assigned[i]);
        }
        if (same) {
            if (auto why = checker.impurity(value_of(args[0][j])); !why.empty()) return why;
            continue;
        }
        for (std::size_t i = 0; i < args.size(); ++i) {
            const Node v = value_of(args[i][j]);
            if (is_literal(v)) {
                return fmt::format("an argument of {} is a Python constant in a branch (`{}`): a select cannot "
                                   "choose it without making it a tensor",
                                   what, v.text());
            }
            if (may_alias(v) && reads_target(v, target)) {
                return fmt::format("an argument of {} may be `{}` or a view of it (`{}`): the original reads it "
                                   "while the call writes it, a select reads a copy",
                                   what, target.text(), v.text());
            }
            if (auto why = checker.branch_impurity(v); !why.empty()) return why;
            if (auto clash = value_kind_clash(checker.ctx, value_of(args[0][j]), v); !clash.empty()) {
                return fmt::format("an argument of {} has values of different kinds in the branches ({}): no select "
                                   "can express that",
                                   what, clash);
            }
        }
        differing.push_back(j);
    }
    if (differing.empty()) return std::nullopt;
    // The temporaries: one per argument the branches differ in, named for the call and the
    // argument (`_graphmend_param_add`, `_graphmend_param_add_alpha`).
    std::string stem = method;
    while (stem.ends_with('_')) stem.pop_back();
    stem = fmt::format("_graphmend_{}_{}", target_name(target), stem);
    std::map<std::size_t, std::string> temps;
    for (const std::size_t j : differing) {
        const std::string keyword = keyword_of(args[0][j]);
        std::string name = !keyword.empty()       ? fmt::format("{}_{}", stem, keyword)
                           : differing.size() == 1 ? stem
                                                   : fmt::format("{}_arg{}", stem, j + 1);
        if (scope.locals.contains(name)) name += fmt::format("_{}", stmt.position().line);
        temps[j] = name;
        plan.live.push_back(name);
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
        for (const std::size_t j : differing) {
            plan.branches[i].body.push_back({Statement::Assign, temps[j], value_of(args[i][j])});
        }
    }
    // The call after the select: the first branch's text with the selected arguments replaced.
    const Node call = calls[0];
    std::string hoisted;
    std::uint32_t at = call.begin();
    for (const std::size_t j : differing) {
        const Node v = value_of(args[0][j]);
        hoisted += stmt.source().slice(at, v.begin());
        hoisted += temps[j];
        at = v.end();
    }
    hoisted += stmt.source().slice(at, call.end());
    plan.hoisted = std::move(hoisted);
    return "";
}

}  // namespace graphmend::rules::control_flow
