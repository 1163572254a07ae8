// Rule GM201 predicated-control-flow. User doc: docs/rules/GM201.md.
// The rule's files: see predicated_control_flow.hpp in this folder.
//
// What it does: finds `if` / `elif` / `else` statements and conditional expressions in
// code that runs under torch.compile whose test reads tensor values
// (`if h.abs().max() > limit:`, `if torch.isinf(h).any() or torch.isnan(h).any():`,
// `if loss.item() > 1.0:`) and turns each into one call of graphmend's runtime
// (src/runtime/predicated_control_flow.py):
//
//     NAMES = _graphmend_if(PRED, lambda: TRUE_VALUES, lambda: FALSE_VALUES, grad_safe=...)
//     return _graphmend_if(PRED, lambda: TRUE_RESULT, lambda: FALSE_RESULT, grad_safe=...)
//
// Each branch becomes a lambda returning the values of the names live after the `if`
// (a branch that does not assign a name returns its prior value), or the value it
// returns; `if TEST: return A` followed by the rest of the function takes the rest as
// the false branch. Tensor `and` / `or` / `not`, `.item()` / `float()` / `int()` /
// `bool()` and `torch.equal` in the test become _graphmend_and/_or/_not/_scalar/_equal,
// which keep Python's rules when an operand is not a tensor, so a static part
// (`h.dtype == torch.float16 and ...`) is still settled by Dynamo at trace time.
// Messages under the test become _graphmend_when (deferred with the test), and a
// counter on a buffer (`self.n += 1`) becomes _graphmend_update (an in-place add of a
// where). Branches that call a submodule or make 8+ calls are marked costly=True, which
// the runtime turns into torch.cond. A data-dependent `if TEST: continue` (or `break`) in a
// loop over a static range becomes an active mask gating the rest of the loop
// (loop_skip.cpp).
//
// Why: Dynamo cannot trace Python control flow on a tensor value: GB0170 (torch 2.12,
// "Data-dependent branching"), and GB0124 for `.item()`.
//
// State form (unsafe fix): an if/else whose branches rebind the same buffer
// (`self.register_buffer("NAME", V)`), maybe after filling a cache (`if not hasattr(self,
// "A"): self.A[, _] = MAKE`) or converting an attribute to where it already is
// (`self.A = self.A.to(device)`), becomes _graphmend_if_state(TEST, self, lambda self:
// (...), lambda self: (...)): traced, the buffer is rebound to a torch.where of the two
// values (an equal tensor, not the object the branch named) and a missing cache is computed
// but not stored, so its maker is taken to have no effects. transformers' longrope update
// (modeling_rope_utils.py:50, Phi-3) is the case it was made for.
//
// Fix safety: safe, except the state form. Eagerly, and whenever the test is not a tensor, exactly one branch
// runs, as before. Traced with a one-element tensor test, both branches run and
// torch.where selects; the runtime keeps the original `if` (and its graph break) when
// the branch values differ in kind, shape, dtype or device, when a non-tensor value
// differs between branches, and, for branches that can produce inf/NaN (division, log,
// sqrt, pow, exp, std, ...), when the values require grad. Refused, with the reason:
// statements other than assignments to names (tuple unpacking included), `pass`, a
// final `return`, deferrable messages and buffer counters; other stores into attributes
// or items and in-place updates (module state); calls of code not known to be pure (only
// torch functions and tensor methods without a trailing `_` and not random, and stateless
// torch.nn submodules); a live name with no value before the `if`, or a read of a local
// that may be unbound; a branch setting a Python constant a select could not choose;
// nested ifs in a branch.
#include <functional>

#include "rules/support/scalar_reads.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"
#include "predicated_control_flow.hpp"

namespace graphmend::rules {

namespace control_flow {

const RuleInfo kInfo{"GM201", "predicated-control-flow",
                     "data-dependent if/elif/else under torch.compile, selected with torch.where",
                     {.retried_inside_rewrite = true}};

Site new_site(const Node& n, std::string_view test) {
    const std::string_view prefix = n.is("if_statement") ? "if " : "... if ";
    const std::string_view suffix = n.is("conditional_expression") ? " else ..." : "";
    return rules::new_site(kInfo, n, one_line(fmt::format("{}{}{}", prefix, test, suffix)), "GB0170");
}

}  // namespace control_flow

namespace {

using namespace control_flow;
using analysis::maybe_unbound;

class PredicatedControlFlowRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        const std::size_t first = out.size();
        check_sites(ctx, out);
        for (std::size_t i = first; i < out.size(); ++i) {
            if (!out[i].fix && out[i].help.empty()) out[i].help = refusal_help(out[i].reason);
        }
    }

private:
    static void check_sites(const Context& ctx, std::vector<Site>& out) {
        // The spelling-based tensor locals of each function, computed once per function.
        std::map<std::uint32_t, std::set<std::string>> tensor_names;
        auto tensors_of = [&](const Node& def) -> const std::set<std::string>& {
            auto it = tensor_names.find(def.begin());
            if (it == tensor_names.end()) it = tensor_names.emplace(def.begin(), tensor_locals(def, ctx.values, ctx.file)).first;
            return it->second;
        };
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (n.is("boolean_operator")) {
                if (auto site = value_operator_site(ctx, n)) out.push_back(std::move(*site));
                return true;
            }
            if (!n.is("if_statement") && !n.is("conditional_expression")) return true;
            if (n.is("conditional_expression")) {
                const auto parts = n.named_children();  // body, test, alternative
                if (parts.size() == 3 &&
                    (ctx.values.data_test(ctx.file, parts[1]) || reads_data(parts[1], tensors_of(def), ctx.values, ctx.file))) {
                    const Scope scope = analysis::scope_of(def, n);
                    Site site = site_for_expression(ctx, n, def, parts, scope);
                    with_scalar_reads(site, scalar_reads(ctx, def, {parts[1]}));
                    out.push_back(std::move(site));
                }
                return true;
            }
            if (is_raise_check(n)) return true;
            // A test another rule's fix rewrites (the `if N == 0: continue` of a sorted-slices
            // dispatch), or one in a span another fix replaces (a span loop, whose static form
            // evaluates the test on every separator): left to that fix.
            if (ctx.claims().exact(n.field("condition"), ClaimKind::Rewritten) ||
                ctx.claims().covers(n, ClaimKind::Rewritten)) {
                return true;
            }
            std::vector<Node> tests{n.field("condition")};
            for (const Node& alt : n.children()) {
                if (alt.is("elif_clause")) tests.push_back(alt.field("condition"));
            }
            if (!ctx.values.data_test(ctx.file, n.field("condition")) &&
                !reads_data(n.field("condition"), tensors_of(def), ctx.values, ctx.file)) {
                // A test from a parameter called with functions the analysis cannot settle
                // (`flag = check(x)`, call sites passing different ones): it may break, and
                // nothing shows a select would be right. Reported, not left silent.
                for (const Node& test : tests) {
                    if (auto why = ctx.values.unsettled_callable(ctx.file, test); !why.empty()) {
                        Site site = new_site(n, n.field("condition").text());
                        site.reason = std::move(why);
                        out.push_back(std::move(site));
                        break;
                    }
                }
                return true;
            }
            const Scope scope = analysis::scope_of(def, n);
            Site site = site_for(ctx, n, def, scope);
            with_scalar_reads(site, scalar_reads(ctx, def, tests));
            if (!site.fix) {
                if (auto why = cache_growth(ctx, def, n)) site.reason = std::move(*why);
            }
            out.push_back(std::move(site));
            return true;
        });
    }

    // A cache that grows with a data-dependent length (issue 11, item 5): `if LENGTH >
    // self.ATTR:` whose branch sets `self.ATTR`, itself or through a method of the class
    // (`self._set_cos_sin_cache(seq_len=...)`, the rotary caches of Hub remote code). No select
    // can express it: the branch changes the module's state and the cache's shape. The refusal
    // says what would remove the break.
    static std::optional<std::string> cache_growth(const Context& ctx, const Node& def, const Node& n) {
        const Node test = syntax::without_parens(n.field("condition"));
        if (!test.is("comparison_operator") || test.named_children().size() != 2 || test.child_count() != 3) {
            return std::nullopt;
        }
        const Node op = test.child(1);
        if (!op.is(">") && !op.is(">=") && !op.is("<") && !op.is("<=")) return std::nullopt;
        Node size;
        for (const Node& side : test.named_children()) {
            if (side.is("attribute") && side.field("object").text() == "self") size = side;
        }
        if (!size) return std::nullopt;
        const std::string attr(size.field("attribute").text());
        // The class of the method holding the `if`.
        const Node cls = def.parent().parent();
        if (!cls.is("class_definition")) return std::nullopt;
        const auto& classes = ctx.source().index.classes;
        const auto it = classes.find(std::string(cls.field("name").text()));
        if (it == classes.end()) return std::nullopt;
        auto sets_size = [&](const Node& body) {
            bool found = false;
            syntax::walk(body, [&](const Node& m) {
                if (found) return false;
                if (m.is("assignment") && m.field("left").is("attribute") &&
                    m.field("left").field("object").text() == "self" && m.field("left").field("attribute").text() == attr) {
                    found = true;
                }
                return !found;
            });
            return found;
        };
        std::string how;
        const Node branch = n.field("consequence");
        if (sets_size(branch)) how = fmt::format("sets `self.{}`", attr);
        syntax::walk(branch, [&](const Node& m) {
            if (!how.empty()) return false;
            if (!m.is("call") || !m.field("function").is("attribute") ||
                m.field("function").field("object").text() != "self") {
                return true;
            }
            const auto method = it->second.methods.find(std::string(m.field("function").field("attribute").text()));
            if (method != it->second.methods.end() && sets_size(method->second.field("body"))) {
                how = fmt::format("calls `{}(...)`, which sets `self.{}`", m.field("function").text(), attr);
            }
            return how.empty();
        });
        if (how.empty()) return std::nullopt;
        return fmt::format("a cache that grows with a data-dependent length: the branch {} when `{}` holds, which "
                           "changes the module's state and the cache's shape, so no select can express it. What would "
                           "remove the break: build the cache at its largest size when the module is constructed (the "
                           "configured maximum, such as `config.max_position_embeddings`) and drop the test, or "
                           "compare a length taken from shapes (a Python int) instead of tensor values",
                           how, one_line(test.text()));
    }


    // True when `n` is (part of) the test of an if / elif / while / assert / conditional
    // expression: the statement's own rewrite handles it.
    static bool in_test_position(const Node& n) {
        Node child = n;
        Node p = n.parent();
        while (p && (p.is("boolean_operator") || p.is("not_operator") || p.is("parenthesized_expression"))) {
            child = p;
            p = p.parent();
        }
        if (!p) return false;
        if ((p.is("if_statement") || p.is("elif_clause") || p.is("while_statement")) && p.field("condition") == child) {
            return true;
        }
        if (p.is("assert_statement")) return true;
        if (p.is("conditional_expression")) {
            const auto parts = p.named_children();
            return parts.size() == 3 && parts[1] == child;
        }
        return false;
    }

    // `A and B` / `A or B` used as a value (`return (a >= lo).all() and (a <= hi).all()`),
    // where A is a tensor: Python takes bool(A), a graph break (GB0170). Rewritten to
    // _graphmend_and(A, lambda: B, value=True), which selects `B if A else A` with
    // torch.where when both are tensors of one dtype, shape and device.
    static std::optional<Site> value_operator_site(const Context& ctx, const Node& n) {
        if (n.parent().is("boolean_operator") || in_test_position(n)) return std::nullopt;
        for (Node p = n.parent(); p; p = p.parent()) {
            // A lambda of graphmend's own runtime (a branch of a rewritten `if`) runs where the
            // statement did; any other lambda may run elsewhere, or never.
            if (p.is("lambda") && !(p.parent().is("argument_list") && p.parent().parent().is("call") &&
                                    p.parent().parent().field("function").text().starts_with("_graphmend_"))) {
                return std::nullopt;
            }
            if (p.is("function_definition")) break;
        }
        Node def = analysis::enclosing_function(n);
        while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
        if (!def || !ctx.project.in_scope(ctx.file, def.begin())) return std::nullopt;
        if (!ctx.values.eval(ctx.file, n.field("left")).tensor()) return std::nullopt;
        Site site = new_site(n, n.text());
        site.what = one_line(n.text(), Blanks::Keep, 57);
        Checker checker{ctx, submodules_of(ctx, def), buffers_of(ctx, def)};
        std::string why;
        syntax::walk(n, [&](const Node& c) {
            if (!why.empty()) return false;
            if (c.is("not_operator")) why = "a `not` inside a tensor `and`/`or` used as a value";
            return why.empty();
        });
        if (why.empty()) why = checker.impurity(n.field("right"));
        if (!why.empty()) {
            site.reason = why;
            return site;
        }
        std::function<std::string(const Node&)> emit = [&](const Node& c) -> std::string {
            return rebuild(c, [&](const Node& b) -> std::optional<std::string> {
                if (!b.is("boolean_operator")) return std::nullopt;
                return fmt::format("{}({}, lambda: {}, value=True)",
                                   b.field("operator").text() == "and" ? runtime::name::and_ : runtime::name::or_,
                                   emit(b.field("left")), emit(b.field("right")));
            });
        };
        site.fix = Fix{{{n.begin(), n.end(), emit(n)}}, Applicability::Safe, {runtime::stem::predicated_control_flow}};
        // The runtime's and_/or_ with value=True select only these; otherwise Python decides.
        site.fix->condition =
            "one-element tensor operands of one shape, dtype and device, both or neither requiring grad";
        site.detail = "`and`/`or` on a tensor selected with torch.where";
        return site;
    }

    // `A if TEST else B` -> `_graphmend_if(TEST, lambda: A, lambda: B, grad_safe=...)`.
    static Site site_for_expression(const Context& ctx, const Node& expr, const Node& def,
                                    const std::vector<Node>& parts, const Scope& scope) {
        Site site = new_site(expr, parts[1].text());
        Checker checker{ctx, submodules_of(ctx, def), buffers_of(ctx, def)};
        checker.site_def = def;
        checker.index_guard = index_guard_of(parts[1], parts[0], parts[2]);
        if ((is_literal(parts[0]) || is_literal(parts[2])) && parts[0].text() != parts[2].text()) {
            site.reason = "a branch is a Python constant: a select cannot choose it without making it a tensor";
            return site;
        }
        if (auto clash = value_kind_clash(ctx, parts[0], parts[2]); !clash.empty()) {
            site.reason = "the branches have values of different kinds (" + clash + "): no select can express that";
            return site;
        }
        // Where the value goes: an attribute or item (module state), or a name.
        Node target;
        for (Node c = expr, p = expr.parent(); p; c = p, p = p.parent()) {
            if (p.is("parenthesized_expression")) continue;
            if (p.is("assignment") && p.field("right") == c) target = p.field("left");
            break;
        }
        std::set<std::string> names;
        if (target.is("identifier")) names.insert(std::string(target.text()));
        const Node store = target.is("attribute") || target.is("subscript") ? target : Node();
        if (auto why = alias_refusal(def, expr, {parts[0], parts[2]}, false, names, store); !why.empty()) {
            site.reason = why;
            return site;
        }
        for (const Node& part : parts) {
            const bool branch = !(part == parts[1]);  // parts[0] and parts[2] are the branches
            if (auto why = branch ? checker.branch_impurity(part) : checker.impurity(part, true); !why.empty()) {
                site.reason = why;
                return site;
            }
            if (auto name = maybe_unbound(part, scope, {}); !name.empty()) {
                site.reason = fmt::format("`{}` may have no value here, and both branches would run", name);
                return site;
            }
        }
        // Names one branch reads and the other does not: the select is not taken while they
        // may carry gradients (the untaken side would get zeros where the `if` left None).
        std::vector<Branch> branches{{parts[1], {Statement{Statement::Assign, "", parts[0]}}},
                                     {Node(), {Statement{Statement::Assign, "", parts[2]}}}};
        const std::vector<std::string> one_sided = one_sided_reads(ctx, scope, branches, {{parts[0]}, {parts[2]}}, {});
        const std::string only = only_argument(one_sided);
        const std::string replacement =
            fmt::format("{}({}, lambda: {}, lambda: {}, grad_safe={}{}{}{})", runtime::name::if_, predicate(parts[1]),
                        checker.clamped_text(parts[0]), checker.clamped_text(parts[2]),
                        checker.grad_unsafe ? "False" : "True", checker.costly() ? ", costly=True" : "", only,
                        checker.selectable_argument());
        site.fix = Fix{{{expr.begin(), expr.end(), replacement}}, Applicability::Safe, {runtime::stem::predicated_control_flow}};
        site.detail = "selected with torch.where";
        const bool shown = layouts_shown_equal(ctx, parts[0], parts[2]);
        if (!shown) {
            site.detail += "; only where the branches' values agree at run time (tensors of one shape, dtype and "
                           "device), which the code does not show: elsewhere the expression keeps its graph break";
        }
        site.fix->condition = select_condition(checker.grad_unsafe, one_sided,
                                               shown ? "" : "both branch values of one shape, dtype and device");
        if (!checker.clamped.empty()) {
            site.detail += fmt::format("; `{}` indexes with `{}` clamped at 0, equal to it wherever the test picks "
                                       "that branch, so the other path reads an element that exists",
                                       one_line(checker.clamped.front().text(), Blanks::Fold, 40),
                                       checker.index_guard->index);
            const std::string nonempty = fmt::format("`{}` not empty and `{}` an integer tensor",
                                                     checker.clamped.front().field("value").text(),
                                                     checker.index_guard->index);
            site.fix->condition = site.fix->condition.empty() ? nonempty : site.fix->condition + "; " + nonempty;
        }
        return site;
    }
};

}  // namespace

std::unique_ptr<Rule> make_predicated_control_flow_rule() {
    return std::make_unique<PredicatedControlFlowRule>();
}

}  // namespace graphmend::rules
