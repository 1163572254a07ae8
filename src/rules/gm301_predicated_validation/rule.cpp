// Rule GM301 predicated-validation.
//
// What it does: finds data-dependent checks in code that runs under torch.compile,
//     if TEST: raise E(ARGS)            (TEST reads tensor values; no elif/else)
//     assert TEST, MESSAGE              (TEST reads tensor values)
// and rewrites each into one call of graphmend's runtime (src/runtime/deferred_effects.py):
//     _graphmend_check(TEST, E, lambda: _graphmend_args(ARGS))
//     if __debug__: _graphmend_check(_graphmend_not(TEST), AssertionError, lambda: _graphmend_args(MESSAGE))
// Eagerly, or when the test is not a tensor, the test decides at once and E(ARGS) is
// raised as before. Traced by Dynamo, the check is an ordered effect op in the FX graph
// that raises E(ARGS) when the graph runs and the test is true: the same type and
// message (formatted from the values at the check), before the compiled call returns,
// and an ordinary Python exception on every device (no device-side assert).
//
// Why: the test breaks the graph (GB0170 "Data-dependent branching"; torch.equal is
// data-dependent too). An assert whose message is built at run time breaks there too, as
// GB0170: Dynamo (torch 2.12.1, symbolic_convert._detect_and_normalize_assert_statement)
// takes an assert for one only when its message is absent or a constant, and jumps on the
// tensor otherwise (GB0171, "assert with non-string message", is raised only for an
// AssertionError built from a non-string constant, not for these).
//
// Fix safety: safe. `raise E(...) from None` keeps its suppressed context. Refused, with
// the reason: `raise ... from CAUSE` other than None and a bare `raise` (the cause / the
// exception being handled are not carried), raising an object rather
// than calling an exception class, a check inside `try` (the handler would not see an
// exception raised when the graph runs), and a check after the function has updated
// state (attributes, items, in-place or unknown calls): Dynamo replays such updates after
// the graph, so a check raising inside the graph would skip them.
#include <fmt/format.h>

#include <map>
#include <set>

#include "rules/support/check_call.hpp"
#include "rules/support/deferred_call.hpp"
#include "rules/support/lazy_message.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/scalar_reads.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM301", "predicated-validation",
                     "data-dependent checks that raise, kept in the FX graph and still raising"};

// True when `call` names a project function whose body stores nothing: no attribute or
// item assignment, no global/nonlocal, and no call statement other than messages and
// further such functions (`require(cond, msg)` doing `if not cond: raise ...`).
bool stores_nothing(const Context& ctx, const Node& function, const Node& call, int depth = 0) {
    std::string owner;
    for (Node p = function.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) {
            owner = std::string(p.field("name").text());
            break;
        }
    }
    const auto callee = ctx.project.callee(ctx.file, call, owner);
    if (!callee || depth > 3 || callee->file != ctx.file) return false;
    bool clean = true;
    syntax::walk(callee->node.field("body"), [&](const Node& n) {
        if (!clean) return false;
        if (n.is("global_statement") || n.is("nonlocal_statement") || n.is("delete_statement")) clean = false;
        if ((n.is("assignment") || n.is("augmented_assignment")) && !n.field("left").is("identifier")) clean = false;
        if (n.is("expression_statement")) {
            for (const Node& e : n.named_children()) {
                if (e.is("call") && !deferred_call(ctx, e) && !stores_nothing(ctx, callee->node, e, depth + 1)) {
                    clean = false;
                }
            }
        }
        return clean;
    });
    return clean;
}

// The first statement of `function` (in source order) that updates state Dynamo would replay
// after the graph, or an invalid Node. One before a check is what state_update_before finds:
// the walk meets nodes in order of their first byte.
Node first_state_update(const Context& ctx, const Node& function) {
    Node found;
    syntax::walk(function.field("body"), [&](const Node& n) {
        if (found) return false;
        if (n.is("function_definition") || n.is("lambda")) return false;
        if (n.is("assignment") || n.is("augmented_assignment")) {
            const Node left = n.field("left");
            if (left.is("attribute") || left.is("subscript")) found = n;
        }
        if (n.is("expression_statement")) {
            for (const Node& e : n.named_children()) {
                if (!e.is("call")) continue;
                if (deferred_call(ctx, e)) continue;  // a message: deferred into the graph in order
                if (stores_nothing(ctx, function, e)) continue;  // a project helper that only checks or computes
                found = n;
            }
        }
        return !found;
    });
    return found;
}

// What a statement first_state_update found does before the check, for the report: "stores
// into `self.count` before the check", "calls sys.stdout.write() before the check, a call that
// may have effects".
std::string what_it_does(const Node& stmt) {
    const Node e = stmt.is("expression_statement") && !stmt.named_children().empty() ? stmt.named_children()[0] : stmt;
    if (e.is("assignment") || e.is("augmented_assignment")) {
        return fmt::format("stores into `{}` before the check", one_line(e.field("left").text(), Blanks::Fold, 40));
    }
    if (e.is("call")) {
        return fmt::format("calls {}() before the check, a call that may have effects",
                           one_line(e.field("function").text(), Blanks::Fold, 40));
    }
    return "updates state before the check";
}

// A statement before `check` in its function that updates state Dynamo would replay after
// the graph, or an invalid Node. `first`: first_state_update per function, filled as asked
// (a function with many checks is walked once).
Node state_update_before(const Context& ctx, const Node& function, const Node& check,
                         std::map<std::uint32_t, Node>& first) {
    auto it = first.find(function.begin());
    if (it == first.end()) it = first.emplace(function.begin(), first_state_update(ctx, function)).first;
    return it->second && it->second.begin() < check.begin() ? it->second : Node();
}

class PredicatedValidationRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        std::map<std::uint32_t, std::set<std::string>> tensor_names;  // per function, computed once
        std::map<std::uint32_t, Node> updates;                          // per function: first_state_update
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (!n.is("if_statement") && !n.is("assert_statement")) return true;
            auto it = tensor_names.find(def.begin());
            if (it == tensor_names.end()) it = tensor_names.emplace(def.begin(), tensor_locals(def, ctx.values, ctx.file)).first;
            const auto& tensors = it->second;
            if (n.is("if_statement")) {
                if (!is_raise_check(n)) return true;
                if (!ctx.values.data_test(ctx.file, n.field("condition")) && !reads_data(n.field("condition"), tensors, ctx.values, ctx.file)) return true;
                Site site = site_for(ctx, n, def, n.field("condition"), n.field("consequence").named_children()[0],
                                     updates);
                with_scalar_reads(site, scalar_reads(ctx, def, {n.field("condition")}));
                out.push_back(std::move(site));
            } else {
                const auto parts = n.named_children();
                if (parts.empty() || (!ctx.values.data_test(ctx.file, parts[0]) && !reads_data(parts[0], tensors, ctx.values, ctx.file))) return true;
                Site site = site_for(ctx, n, def, parts[0], Node(), updates);
                with_scalar_reads(site, scalar_reads(ctx, def, {parts[0]}));
                out.push_back(std::move(site));
            }
            return true;
        });
    }

private:
    static Site site_for(const Context& ctx, const Node& stmt, const Node& def, const Node& test, const Node& raise,
                         std::map<std::uint32_t, Node>& updates) {
        const bool is_assert = stmt.is("assert_statement");
        Site site = new_site(kInfo, stmt, one_line((is_assert ? "assert " : "if ") + std::string(test.text())),
                             "GB0170");
        // An assert without a message, or with a constant one, does not break (torch 2.12:
        // Dynamo puts it in the graph as _assert_async, which raises RuntimeError): the check
        // is still rewritten, to raise AssertionError, but it removes no break.
        bool constant_message = false;
        if (is_assert) {
            const auto parts = stmt.named_children();
            constant_message = parts.size() == 1 ||
                               (parts[1].is("string") && std::string_view(parts[1].text()).find_first_of("fF") != 0 &&
                                !parts[1].text().starts_with("rf") && !parts[1].text().starts_with("Rf"));
            for (const Node& c : parts.size() > 1 ? parts[1].named_children() : std::vector<Node>{}) {
                if (c.is("interpolation")) constant_message = false;
            }
        }
        // Python's own `and`/`or`/`not` on a tensor in the test take its truth value: that breaks
        // (GB0170), message or not (measured: `assert (x.min() >= 0) and (x.max() < n), "..."`
        // and `assert not torch.isnan(x).any(), "..."` each make 2 graphs with torch 2.12.1).
        bool python_logic = false;
        syntax::walk(test, [&](const Node& c) {
            if (c.is("call") || c.is("lambda") || python_logic) return false;
            if (c.is("boolean_operator") || c.is("not_operator")) python_logic = true;
            return !python_logic;
        });
        if (constant_message && python_logic) site.graph_break = "GB0170";
        if (constant_message && !python_logic) site.graph_break.clear();

        if (site.reason = dynamic_shape_in_test(ctx, test); !site.reason.empty()) return site;
        for (Node p = stmt.parent(); p && !(p == def); p = p.parent()) {
            if (p.is("try_statement")) {
                site.reason = "inside `try`: its handler would not see an exception raised when the graph runs";
                site.help = "check before the `try`, or keep the check and its handler out of the compiled function";
                return site;
            }
        }
        if (const Node update = state_update_before(ctx, def, stmt, updates)) {
            site.reason = fmt::format("line {} {}: Dynamo runs it after the graph, so raising inside the graph "
                                      "would skip it",
                                      update.position().line, what_it_does(update));
            site.help = "check first: put the check before the store or call it follows, where that keeps the "
                        "function's meaning";
            return site;
        }
        std::string call;
        if (raise) {
            const CheckCall c = check_call(raise);
            if (!c.refused.empty()) {
                site.reason = c.refused;
                return site;
            }
            call = c.text(predicate(test));
        } else {
            const auto parts = stmt.named_children();
            std::string message;
            if (parts.size() > 1) {
                auto deferred = defer_message_expression(parts[1]);
                message = deferred ? *deferred : std::string(parts[1].text());
            }
            // `assert` is compiled away under `python -O`; so is the check.
            call = fmt::format("if __debug__: {}({}({}), AssertionError, lambda: {}({}))", runtime::name::check,
                               runtime::name::not_, predicate(test), runtime::name::args, message);
        }
        site.fix = Fix{{{stmt.begin(), stmt.end(), keeping_lines(stmt, std::move(call))}}, Applicability::Safe,
                       {runtime::stem::deferred_effects, runtime::stem::predicated_control_flow}};
        // The runtime's check() defers the message as print's is (otherwise it tests as written).
        if (raise) {
            site.fix->condition = message_condition(ctx, message_arguments(raise.named_children()[0]));
        } else if (stmt.named_children().size() > 1) {
            site.fix->condition = message_condition(ctx, {stmt.named_children()[1]});
        }
        site.detail = "the check raises from inside the graph";
        return site;
    }
};

}  // namespace

std::unique_ptr<Rule> make_predicated_validation_rule() { return std::make_unique<PredicatedValidationRule>(); }

}  // namespace graphmend::rules
