// GM201: a data-dependent `if TEST: continue` (or `break`) in the body of a loop over a static
// range (see predicated_control_flow.hpp, loop_skip_site). The loop runs its full range; the
// guard becomes an active mask, `ACTIVE = <not TEST>`, and every later update of the
// iteration is gated by it. For a `break` the mask is set to True on a line before the loop,
// the guard becomes `ACTIVE = _graphmend_and(ACTIVE, lambda: <not TEST>)` (false for good once
// TEST held), and the statements before the guard are gated too:
//   - a masked store `T[M] = V`        -> _graphmend_store_when(ACTIVE, T, M, V)
//   - a name read after the iteration  -> NAME = _graphmend_if(ACTIVE, lambda: E, lambda: NAME, ...)
//   - `raise E(...)` on a static path  -> _graphmend_check(ACTIVE, E, ...) and `continue`
// Names the iteration sets and reads only after the guard, static `if`s (Dynamo settles them
// at trace time) and `pass` stay as written: they have no effect beyond the iteration.
#include <algorithm>
#include <functional>

#include "rules/support/body.hpp"
#include "rules/support/check_call.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"
#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

using body::assignment_of;
using body::statements;

// A `break` or `continue` of the loop whose body is `body`, other than `except`, or an
// invalid node. A nested loop's own jumps are its own; those of its `else` are the loop's.
Node other_jump(const Node& body, const Node& except) {
    Node found;
    std::function<void(const Node&)> visit = [&](const Node& root) {
        syntax::walk(root, [&](const Node& n) {
            if (found) return false;
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if (n.is("for_statement") || n.is("while_statement")) {
                if (const Node alt = n.field("alternative")) visit(alt);
                return false;
            }
            if ((n.is("continue_statement") || n.is("break_statement")) && !(n == except)) found = n;
            return !found;
        });
    };
    visit(body);
    return found;
}

// True when `stmt` leaves `name` bound on every path that goes on after it (a path that
// raises or leaves the iteration does not go on).
bool binds(const Node& stmt, const std::string& name);

bool block_binds(const Node& block, const std::string& name) {
    for (const Node& s : statements(block)) {
        if (binds(s, name) || s.is("raise_statement") || s.is("continue_statement") || s.is("return_statement")) {
            return true;
        }
    }
    return false;
}

bool binds(const Node& stmt, const std::string& name) {
    if (const Node a = assignment_of(stmt)) {
        const Node left = a.field("left");
        if (left.is("identifier")) return left.text() == name && a.field("right");
        return false;
    }
    if (!stmt.is("if_statement")) return false;
    bool has_else = false;
    if (!block_binds(stmt.field("consequence"), name)) return false;
    for (const Node& alt : stmt.children()) {
        if (alt.is("elif_clause") && !block_binds(alt.field("consequence"), name)) return false;
        if (alt.is("else_clause")) {
            has_else = true;
            if (!block_binds(alt.field("body"), name)) return false;
        }
    }
    return has_else;
}

// The rewrite of the statements after one guard, statement by statement.
struct Gate {
    const Context& ctx;
    Checker& checker;
    const Node& def;
    std::set<std::string> tensors;  // tensor_locals of def
    std::string active;             // the local holding the active mask
    std::string where{};            // where `top` is, for the reasons
    std::vector<Node> top{};        // the statements gated: after the guard (all but it after a `break`)
    std::set<std::string> bound{};    // names with a value where the guard is
    Scope scope{};                    // of the loop
    std::set<std::string> counters{};  // the loop's variable where it counts a range: an int, no gradient
    std::vector<edits::Edit> edits{};
    int raises = 0;
    int stores = 0;
    bool grad_unsafe = false;
    std::set<std::string> one_sided{};
    bool nested = false;  // a data-dependent `if` after the guard (fixed first, then retried)

    // True when `name` is set after the guard before each of its reads, and read nowhere else
    // in the function: its value never outlives the iteration.
    [[nodiscard]] bool iteration_local(const std::string& name) const {
        const std::uint32_t begin = top.front().begin();
        const std::uint32_t end = top.back().end();
        std::uint32_t bound_at = end;  // where a statement after the guard has bound it
        for (const Node& s : top) {
            if (binds(s, name)) {
                bound_at = s.end();
                break;
            }
        }
        bool local = true;
        syntax::walk(def, [&](const Node& n) {
            if (!local) return false;
            if (n.is("identifier") && n.text() == name && analysis::is_read(n)) {
                local = n.begin() >= bound_at && n.end() <= end && n.begin() >= begin;
            }
            return local;
        });
        return local;
    }

    std::string convert(const Node& stmt, bool at_top) {
        if (stmt.is("comment") || stmt.is("pass_statement")) return "";
        if (stmt.is("raise_statement")) return raise(stmt);
        if (stmt.is("if_statement")) return static_if(stmt);
        if (const Node a = assignment_of(stmt)) return assignment(stmt, a, at_top);
        if (stmt.is("expression_statement")) {
            const auto parts = stmt.named_children();
            if (parts.size() == 1 && parts[0].is("augmented_assignment")) {
                return fmt::format("`{}`: an update in place, which the active mask does not gate",
                                   one_line(stmt.text()));
            }
            if (parts.size() == 1 && parts[0].is("call")) {
                return fmt::format("`{}`: a call whose effect the active mask cannot gate (a message, an in-place "
                                   "op, or code not known to be pure)",
                                   one_line(stmt.text()));
            }
            if (parts.size() == 1 && parts[0].is("string")) return "";  // a docstring-like string
        }
        return fmt::format("{} {}, which the active mask cannot gate", construct_name(stmt), where);
    }

    // `raise E(...)`, reached on a static path: it raises only where the iteration was
    // active, and otherwise the iteration ends there, as it had at the guard.
    std::string raise(const Node& stmt) {
        const CheckCall check = check_call(stmt);
        if (!check.refused.empty()) return fmt::format("the `raise` {}: {}", where, check.refused);
        const std::string eol(stmt.source().eol());
        edits.push_back({stmt.begin(), stmt.end(),
                         keeping_lines(stmt, check.text(active)) + eol + indent_of(stmt) + "continue"});
        ++raises;
        return "";
    }

    std::string static_if(const Node& stmt) {
        std::vector<std::pair<Node, Node>> arms{{stmt.field("condition"), stmt.field("consequence")}};
        for (const Node& alt : stmt.children()) {
            if (alt.is("elif_clause")) arms.emplace_back(alt.field("condition"), alt.field("consequence"));
            if (alt.is("else_clause")) arms.emplace_back(Node(), alt.field("body"));
        }
        for (const auto& [test, block] : arms) {
            if (test && (ctx.values.data_test(ctx.file, test) || reads_data(test, tensors, ctx.values, ctx.file))) {
                nested = true;
                return fmt::format("a data-dependent `if` {} (`{}`)", where, one_line(test.text()));
            }
            if (test) {
                if (auto why = checker.branch_impurity(test); !why.empty()) return why;
            }
            for (const Node& s : statements(block)) {
                if (auto why = convert(s, false); !why.empty()) return why;
            }
        }
        return "";
    }

    std::string assignment(const Node& stmt, const Node& a, bool at_top) {
        const Node left = a.field("left");
        const Node right = a.field("right");
        if (!right) return "";  // an annotation alone
        if (right.is("assignment") || right.is("augmented_assignment")) {
            return fmt::format("`{}`: a chained assignment {}", one_line(stmt.text()), where);
        }
        if (left.is("subscript")) return store(stmt, left, right);
        if (!left.is("identifier")) {
            return fmt::format("`{}`: a store the active mask does not gate (only names and masked stores are)",
                               one_line(stmt.text()));
        }
        checker.grad_unsafe = false;
        if (auto why = checker.branch_impurity(right); !why.empty()) return why;
        const std::string name(left.text());
        if (iteration_local(name)) return "";
        // Read after its iteration: the select keeps the prior value where the guard skipped.
        if (!at_top) {
            return fmt::format("`{}` is read after its iteration and set inside an `if` {}", name, where);
        }
        if (!bound.contains(name)) {
            return fmt::format("`{}` is read after its iteration and has no value before the guard", name);
        }
        const analysis::Value v = ctx.values.eval(ctx.file, right);
        constexpr std::uint16_t python = analysis::kNumber | analysis::kBool | analysis::kNone | analysis::kStr;
        if (is_literal(right) || (v.kinds != 0 && v.only(python))) {
            return fmt::format("`{}`, read after its iteration, is set to a Python value {}: a select cannot choose "
                               "it without making it a tensor",
                               name, where);
        }
        if (auto why = alias_refusal(def, stmt, {right}, true, {name}, Node()); !why.empty()) return why;
        std::vector<Branch> branches{Branch{Node(), {Statement{Statement::Assign, name, right}}, false}};
        auto sided = one_sided_reads(ctx, scope, branches, {{right}}, {name});
        std::erase_if(sided, [&](const std::string& n) { return counters.contains(n); });
        one_sided.insert(sided.begin(), sided.end());
        grad_unsafe = grad_unsafe || checker.grad_unsafe;
        const std::string call = fmt::format("{} = {}({}, lambda: {}, lambda: {}, grad_safe={}{})", name,
                                             runtime::name::if_, active, right.text(), name,
                                             checker.grad_unsafe ? "False" : "True", only_argument(sided));
        edits.push_back({stmt.begin(), stmt.end(), keeping_lines(stmt, call)});
        return "";
    }

    // `T[M] = V` with M a tensor (a mask): the store is made only where the iteration is active.
    std::string store(const Node& stmt, const Node& left, const Node& right) {
        std::vector<Node> index;
        for (const Node& c : left.named_children()) {
            if (!(c == left.field("value")) && !c.is("comment")) index.push_back(c);
        }
        if (index.size() != 1 || !ctx.values.eval(ctx.file, index[0]).tensor()) {
            return fmt::format("`{}`: a store at an index that is not a tensor mask, which the active mask does not "
                               "gate",
                               one_line(stmt.text()));
        }
        for (const Node& part : {left.field("value"), index[0], right}) {
            if (auto why = checker.branch_impurity(part); !why.empty()) return why;
        }
        const std::string call = fmt::format("{}({}, {}, {}, {})", runtime::name::store_when, active,
                                             left.field("value").text(), index[0].text(), right.text());
        edits.push_back({stmt.begin(), stmt.end(), keeping_lines(stmt, call)});
        ++stores;
        return "";
    }
};

// The names with a value where `guard` is: bound before the loop, or by a statement of the
// loop's body before the guard.
std::set<std::string> bound_at_guard(const Node& body, const Node& guard, const Scope& loop_scope) {
    std::set<std::string> out = loop_scope.bound_before;
    for (const Node& s : statements(body)) {
        if (s.begin() >= guard.begin()) break;
        if (const Node a = assignment_of(s); a && a.field("left").is("identifier")) out.insert(std::string(a.field("left").text()));
    }
    return out;
}

}  // namespace

// Over 120 lines: the guard's refusals, the gate over the rest of the body and the emitted
// lines are one sequence over the same loop; to be split into those steps (issue 31).
std::optional<Site> loop_skip_site(const Context& ctx, const Node& stmt, const Node& def, Site site) {
    const auto guard_body = statements(stmt.field("consequence"));
    if (guard_body.size() != 1 || !(guard_body[0].is("continue_statement") || guard_body[0].is("break_statement"))) {
        return std::nullopt;
    }
    for (const Node& alt : stmt.children()) {
        if (alt.is("elif_clause") || alt.is("else_clause")) return std::nullopt;
    }
    const bool is_break = guard_body[0].is("break_statement");
    const std::string jump = is_break ? "a data-dependent `break`" : "a data-dependent `continue`";
    const Node body = stmt.parent();
    const Node loop = body.parent();
    if (!loop.is("for_statement") || !(loop.field("body") == body)) {
        site.reason = loop.is("while_statement") ? jump + " in a `while` loop: its trip count is not static"
                                                 : jump + " under another statement of the loop";
        return site;
    }
    const std::set<std::string> tensors = tensor_locals(def, ctx.values, ctx.file);
    const Node range = loop.field("right");
    if (ctx.values.data_test(ctx.file, range) || reads_data(range, tensors, ctx.values, ctx.file)) {
        site.reason = fmt::format("{} in a loop over `{}`, whose length is not static", jump, one_line(range.text()));
        return site;
    }
    if (const Node other = other_jump(body, guard_body[0])) {
        site.reason = fmt::format("{} in a loop with another `{}` (line {})", jump,
                                  other.is("break_statement") ? "break" : "continue", other.position().line);
        return site;
    }
    const Scope loop_scope = analysis::scope_of(def, loop);
    if (is_break) {
        // After the break the original leaves the loop: its `else` does not run, and the
        // loop's variables keep the values of the iteration that broke.
        if (loop.field("alternative")) {
            site.reason = jump + " in a loop with an `else` clause, which runs only when the loop did not break";
            return site;
        }
        std::string target;
        syntax::walk(loop.field("left"), [&](const Node& n) {
            if (n.is("identifier") && target.empty() && loop_scope.read_outside.contains(std::string(n.text()))) {
                target = n.text();
            }
            return target.empty();
        });
        if (!target.empty()) {
            site.reason = fmt::format("{}: the loop variable `{}` is read after the loop, where it holds the value "
                                      "of the iteration that broke",
                                      jump, target);
            return site;
        }
    }
    Checker checker{ctx, submodules_of(ctx, def), buffers_of(ctx, def)};
    checker.site_def = def;
    checker.site_stmt = stmt;
    const Node test = stmt.field("condition");
    if (auto why = checker.impurity(test, true); !why.empty()) {
        site.reason = "the test " + why;
        return site;
    }
    // Named after the loop variable (`_graphmend_active_col`: the iteration of `col` is active),
    // so the name does not go stale when code above moves; one guard per loop, no nested loop.
    std::string loop_variable;
    syntax::walk(loop.field("left"), [&](const Node& n) {
        if (loop_variable.empty() && n.is("identifier")) loop_variable = std::string(n.text());
        return loop_variable.empty();
    });
    Gate gate{.ctx = ctx, .checker = checker, .def = def, .tensors = tensors,
              .active = loop_variable.empty() || loop_variable == "_" ? std::string("_graphmend_active")
                                                                      : "_graphmend_active_" + loop_variable,
              .where = is_break ? "in the loop" : "after the guard"};
    // After a `continue` the iteration's later statements are gated; after a `break`, every
    // statement of every later iteration, those before the guard too.
    for (const Node& s : statements(body)) {
        if (s.begin() > stmt.begin() || (is_break && s.begin() < stmt.begin())) gate.top.push_back(s);
    }
    gate.scope = loop_scope;
    if (range.is("call") && range.field("function").text() == "range" && loop.field("left").is("identifier")) {
        gate.counters.insert(std::string(loop.field("left").text()));
    }
    gate.bound = bound_at_guard(body, stmt, gate.scope);
    for (const Node& s : gate.top) {
        if (auto why = gate.convert(s, true); !why.empty()) {
            site.reason = fmt::format("{} in a loop: {}", jump, why);
            site.retry = gate.nested;
            return site;
        }
    }
    // The guard's lines: the active mask on the first, then one spare line for each `raise`'s
    // `continue` (and, for a `break`, one for the line before the loop that sets the mask), so
    // that code below the guard keeps its line numbers.
    const Node bare = syntax::without_parens(test);
    std::string mask =
        bare.is("not_operator")
            ? fmt::format("{}(\"bool\", {})", runtime::name::scalar, predicate(bare.field("argument")))
            : fmt::format("{}({})", runtime::name::not_, predicate(test));
    if (is_break) mask = fmt::format("{}({}, lambda: {})", runtime::name::and_, gate.active, mask);
    std::string guard_text = keeping_lines(stmt, fmt::format("{} = {}", gate.active, mask));
    const std::string eol(stmt.source().eol());
    for (int i = 0; i < gate.raises + (is_break ? 1 : 0); ++i) {
        if (!guard_text.ends_with(eol)) {  // no spare line left (the last one holds a comment or the mask)
            site.reason = fmt::format("{} in a loop: the guard has no spare line for {}, so code below would move",
                                      jump, is_break && i == 0 ? "setting the mask before the loop"
                                                               : "the `continue` after each `raise`");
            return site;
        }
        guard_text.resize(guard_text.size() - eol.size());
    }
    gate.edits.push_back({stmt.begin(), stmt.end(), guard_text});
    std::sort(gate.edits.begin(), gate.edits.end(),
              [](const edits::Edit& a, const edits::Edit& b) { return a.begin < b.begin; });
    std::uint32_t cursor = is_break ? loop.begin() : stmt.begin();
    const std::uint32_t begin = cursor;
    std::string text = is_break ? fmt::format("{} = True{}{}", gate.active, eol, indent_of(loop)) : "";
    for (const auto& e : gate.edits) {
        text += stmt.source().slice(cursor, e.begin);
        text += e.text;
        cursor = e.end;
    }
    site.end = cursor;
    std::vector<std::string> blocks{runtime::stem::predicated_control_flow};
    if (gate.raises > 0) blocks.insert(blocks.begin(), runtime::stem::deferred_effects);
    std::vector<std::string> parts;
    if (gate.stores > 0) {
        parts.push_back("masked stores of a Python number or a one-element tensor not requiring grad");
    }
    if (auto select = select_condition(gate.grad_unsafe, {gate.one_sided.begin(), gate.one_sided.end()}, "");
        !select.empty()) {
        parts.push_back(select);
    }
    site.fix = Fix{.edits = {{begin, cursor, text}},
                   .runtime = std::move(blocks),
                   .condition = fmt::format("{}", fmt::join(parts, ", "))};
    site.detail = fmt::format("the loop runs its full range; the updates {} are made only where `{}` holds",
                              is_break ? "of every iteration" : "after the guard", gate.active);
    return site;
}

}  // namespace graphmend::rules::control_flow
