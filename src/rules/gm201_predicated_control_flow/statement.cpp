// GM201: a data-dependent if/elif/else statement, step by step (see
// predicated_control_flow.hpp): its branches converted, each refusal in turn, then the
// _graphmend_if call, or the state form (_graphmend_if_state) or the message form
// (_graphmend_when).
#include <algorithm>
#include <array>
#include <functional>

#include "graphmend/emit.hpp"
#include "graphmend/knowledge.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"
#include "predicated_control_flow.hpp"

#include "rules/support/scalar_reads.hpp"

namespace graphmend::rules::control_flow {

using analysis::maybe_unbound;

namespace {

// How two branch values provably differ in kind, or "": None against a tensor, or tuples
// of different lengths (element by element).
std::string kind_clash(const analysis::Value& a, const analysis::Value& b, const std::string& where = "") {
    using analysis::kNone;
    using analysis::kTensor;
    if ((a.only(kNone) && b.tensor()) || (b.only(kNone) && a.tensor())) {
        return fmt::format("None against a tensor{}", where);
    }
    if (!a.items.empty() && !b.items.empty()) {
        if (a.items.size() != b.items.size()) return fmt::format("tuples of {} and {} values{}", a.items.size(), b.items.size(), where);
        for (std::size_t i = 0; i < a.items.size(); ++i) {
            if (auto c = kind_clash(a.items[i], b.items[i], fmt::format(" at position {}", i + 1)); !c.empty()) return c;
        }
    }
    return "";
}

// `if TEST: A else: B` where A and B rebind the same buffers of the module, maybe after
// filling a cache or converting an attribute to where it already is ->
// `_graphmend_if_state(TEST, self, lambda self: (A...), lambda self: (B...))`. Unsafe:
// traced, the buffer becomes a selected copy (equal values, another tensor object) and
// a missing cache is computed but not stored, so methods that make it are assumed pure.
Site state_site(Site site, const Node& stmt, const Node& def, const Scope& scope, const Checker& checker,
                       const std::vector<Branch>& branches) {
    if (branches.size() != 2 || branches[1].test) {
        site.reason = "module state is rebound under an `if` without `else`, or with `elif`";
        return site;
    }
    const auto params = def.field("parameters").named_children();
    if (params.empty() || params[0].text() != "self") {
        site.reason = "module state is rebound in a function whose first parameter is not `self`";
        return site;
    }
    std::array<std::set<std::string>, 2> rebound;
    for (std::size_t i = 0; i < 2; ++i) {
        for (const auto& st : branches[i].body) {
            if (!Checker::is_state(st)) {
                site.reason = "a branch that rebinds module state also assigns names, returns or has effects";
                return site;
            }
            if (st.kind == Statement::Rebind) rebound[i].insert(st.name);
        }
    }
    if (rebound[0] != rebound[1] || rebound[0].empty()) {
        site.reason = "the branches do not rebind the same buffers (register_buffer)";
        return site;
    }
    for (const auto& name : checker.dead_targets) {
        if (scope.read_outside.contains(name)) {
            site.reason = fmt::format("`{}`, unpacked with a cached value, is read after the `if`", name);
            return site;
        }
    }
    std::vector<std::string> pieces{fmt::format("{}({}, self,", runtime::name::if_state, predicate(branches[0].test))};
    for (const auto& b : branches) {  // one piece per statement: a line each where the `if` had them
        for (std::size_t i = 0; i < b.body.size(); ++i) {
            const bool last = i + 1 == b.body.size();
            pieces.push_back(fmt::format("{}{}{}", i == 0 ? "lambda self: (" : "", b.body[i].raw,
                                         !last ? "," : b.body.size() == 1 ? ",)," : "),"));
        }
    }
    site.fix = Fix{{{stmt.begin(), stmt.end(), layout(stmt, stmt.end(), pieces)}}, Applicability::Unsafe,
                   {runtime::stem::predicated_control_flow}};
    std::vector<std::string> names(rebound[0].begin(), rebound[0].end());
    // The runtime's rebind_plan(): otherwise the `if` runs as written, and breaks.
    std::vector<std::string> quoted;
    for (const auto& name : names) quoted.push_back(fmt::format("`{}`", name));
    site.fix->condition = fmt::format("{} of one shape, dtype, device and persistence in both branches, not "
                                      "requiring grad",
                                      fmt::join(quoted, ", "));
    site.detail = fmt::format("buffer {} selected with torch.where; unsafe: under torch.compile the buffer is "
                              "rebound to a selected copy (equal values, not the tensor the branch names)",
                              fmt::join(names, ", "));
    std::set<std::string> caches;
    for (const auto& b : branches) {
        for (const auto& st : b.body) {
            if (st.kind == Statement::Cache) caches.insert("self." + st.name);
        }
    }
    if (!caches.empty()) {
        site.detail += fmt::format(", and a missing {} is computed but not stored", fmt::join(caches, ", "));
    }
    if (!checker.assumed_pure.empty()) {
        std::set<std::string> uniq(checker.assumed_pure.begin(), checker.assumed_pure.end());
        site.detail += fmt::format(" ({} taken to have no effects)", fmt::join(uniq, ", "));
    }
    return site;
}

// `if TEST: <print / logging / warnings calls>` -> one _graphmend_when(TEST, ...) per
// call, on the statement's lines: each message is deferred with the test.
// The `if`'s edit: one `_graphmend_when` per message. Each sits on its message's own line, with
// `lambda: None` for the line (the runtime reads it from the lambda's code), so that the line
// stays right when lines above move; the `if`'s line, left empty, goes from its start. Where the
// messages' lines do not allow that (two on one line), each after the other, their lines as
// numbers.
edits::Edit marked_effects(const Node& stmt, const std::string& test, const std::vector<Statement>& effects) {
    const auto& src = stmt.source();
    const std::uint32_t first = stmt.position().line;
    const std::uint32_t last = first + static_cast<std::uint32_t>(syntax::count_newlines(stmt.text()));
    const std::uint32_t line_start = src.line_start(first);
    const std::string_view before = src.slice(line_start, stmt.begin());
    bool aligned = std::all_of(before.begin(), before.end(), [](char c) { return c == ' ' || c == '\t'; });
    std::uint32_t at = first;
    for (std::size_t i = 0; i < effects.size() && aligned; ++i) {
        aligned = effects[i].line > at - (i == 0 ? 1 : 0) && effects[i].line <= last && !effects[i].marked.empty();
        at = effects[i].line;
    }
    const std::string eol(src.eol());
    const std::string indent = indent_of(stmt);
    if (!aligned) {
        emit::Lines calls(emit::Style::at(stmt), indent);
        for (const auto& s : effects) calls.add(emit::call(runtime::name::when, {test, s.effect}));
        return {stmt.begin(), stmt.end(), keeping_lines(stmt, calls.text())};
    }
    std::string text;
    at = first;
    for (const auto& s : effects) {
        for (; at < s.line; ++at) text += eol;
        text += indent + emit::call(runtime::name::when, {test, s.marked});
    }
    return {line_start, stmt.end(), keeping_lines(stmt, std::move(text))};
}

Site effects_site(Site site, const Node& stmt, const std::vector<Branch>& branches) {
    const bool only_effects = std::all_of(branches[0].body.begin(), branches[0].body.end(),
                                          [](const Statement& s) { return s.kind == Statement::Effect; });
    if (branches.size() != 1 || !only_effects) {
        site.reason = "a branch mixes deferred messages with values, or the `if` has an elif/else";
        return site;
    }
    const std::string test = predicate(branches[0].test);
    site.fix = Fix{{marked_effects(stmt, test, branches[0].body)}, Applicability::Safe,
                   {runtime::stem::deferred_effects, runtime::stem::predicated_control_flow}};
    for (const auto& s : branches[0].body) {
        if (!s.condition.empty()) site.fix->condition = s.condition;  // the runtime's when() keeps the `if`
    }
    site.detail = "each message deferred together with the test";
    return site;
}

// True when a statement of some branch satisfies `pred`.
template <typename Pred>
bool any_statement(const std::vector<Branch>& branches, Pred pred) {
    return std::any_of(branches.begin(), branches.end(),
                       [&](const Branch& b) { return std::any_of(b.body.begin(), b.body.end(), pred); });
}

// Every branch converted; the elif tests and the `if` test pure.
std::string convert_branches(Checker& checker, const Node& stmt, Plan& plan) {
    auto& branches = plan.branches;
    branches.push_back({stmt.field("condition"), {}, false});
    std::string why = checker.convert(stmt.field("consequence"), branches.back());
    for (const Node& alt : stmt.children()) {
        if (!why.empty()) break;
        if (alt.is("elif_clause")) {
            branches.push_back({alt.field("condition"), {}, false});
            why = checker.convert(alt.field("consequence"), branches.back());
            if (why.empty()) why = checker.impurity(alt.field("condition"));
        } else if (alt.is("else_clause")) {
            branches.push_back({Node(), {}, false});
            plan.has_else = true;
            why = checker.convert(alt.field("body"), branches.back());
        }
    }
    if (why.empty()) {
        if (auto impure = checker.impurity(stmt.field("condition"), true); !impure.empty()) why = "the test " + impure;
    }
    return why;
}

// `if TEST: ... return A` followed by the rest of the function ending in a return: the
// rest is the false branch.
std::string take_rest(Checker& checker, const Node& stmt, const Node& def, Plan& plan) {
    plan.span_end = stmt.end();
    const bool early_return = !plan.has_else && plan.branches.size() == 1 && plan.branches[0].returns;
    if (!early_return || !(stmt.parent() == def.field("body"))) return "";
    std::vector<Node> rest;
    for (const Node& s : stmt.parent().named_children()) {
        if (s.begin() > stmt.begin() && !s.is("comment")) rest.push_back(s);
    }
    Branch after{Node(), {}, false};
    if (auto why = checker.convert(rest, after); !why.empty()) return "the code after the early return: " + why;
    if (!after.returns) return "the code after the early return does not end in a return";
    plan.span_end = rest.back().end();
    plan.branches.push_back(std::move(after));
    plan.has_else = true;
    return "";
}

// A read of a local that may have no value, now that both branches run.
std::string unbound_read(const Scope& scope, const Plan& plan) {
    for (const auto& b : plan.branches) {
        std::set<std::string> assigned;
        for (const auto& st : b.body) {
            const std::string name = st.value ? maybe_unbound(st.value, scope, assigned) : "";
            if (!name.empty()) return fmt::format("`{}` may have no value here, and both branches would run", name);
            if (st.kind == Statement::Assign) assigned.insert(st.name);
        }
    }
    return "";
}

// Every branch returns, or none does; returned values that a select can choose between.
std::string check_returns(const Context& ctx, Plan& plan) {
    const auto& branches = plan.branches;
    const auto returns = [](const Branch& b) { return b.returns; };
    plan.all_return = plan.has_else && std::all_of(branches.begin(), branches.end(), returns);
    plan.any_return = std::any_of(branches.begin(), branches.end(), returns);
    if (plan.any_return && !plan.all_return) return "a branch returns while another falls through";
    if (!plan.all_return) return "";
    // Values that provably differ in kind (None against a tensor, tuples of other
    // lengths) cannot be selected: the runtime would evaluate both branches and then
    // fall back to the `if`, breaking the graph more than before.
    const Branch* first = nullptr;
    analysis::Value first_value;
    for (const auto& b : branches) {
        const auto ret = std::find_if(b.body.begin(), b.body.end(),
                                      [](const Statement& st) { return st.kind == Statement::Return; });
        const analysis::Value v = ret->value ? ctx.values.eval(ctx.file, ret->value)
                                             : analysis::Value::of(analysis::kNone);
        if (first == nullptr) {
            first = &b;
            first_value = v;
            continue;
        }
        if (auto clash = kind_clash(first_value, v); !clash.empty()) {
            return "the branches return values of different kinds (" + clash + "): no select can express that";
        }
    }
    return "";
}

// Conditional counters (self.BUFFER += INT): one `if` without else, and no value in it may
// read the buffer. Taken out of the branch: they become _graphmend_update calls.
std::string take_updates(Plan& plan) {
    auto& branches = plan.branches;
    for (const auto& b : branches) {
        for (const auto& st : b.body) {
            if (st.kind == Statement::Update) plan.updates.push_back(st);
        }
    }
    if (plan.updates.empty()) return "";
    if (plan.has_else || branches.size() != 1 || plan.any_return) {
        return "a buffer update under an `if` with elif/else or a return";
    }
    for (const auto& st : branches[0].body) {
        if (st.kind == Statement::Update || !st.value) continue;
        for (const auto& u : plan.updates) {
            if (std::string_view(st.value.text()).find("self." + u.name) != std::string_view::npos) {
                return fmt::format("a value in the branch reads the updated buffer self.{}", u.name);
            }
        }
    }
    std::erase_if(branches[0].body, [](const Statement& s) { return s.kind == Statement::Update; });
    return "";
}

// A live name whose select would be a new tensor where the `if` left the branch's own (a
// name, a view, a conversion to what it is), when the function then changes it in place.
std::string aliased_live(const Node& stmt, const Node& def, const Plan& plan) {
    if (plan.all_return || plan.live.empty()) return "";
    std::vector<Node> values;
    bool keeps_old = !plan.has_else;
    for (const auto& b : plan.branches) {
        for (const auto& name : plan.live) {
            const Statement* last = nullptr;
            for (const auto& st : b.body) {
                if (st.kind == Statement::Assign && st.name == name) last = &st;
            }
            if (last == nullptr) {
                keeps_old = true;
            } else if (last->value) {
                values.push_back(last->value);
            }
        }
    }
    return alias_refusal(def, stmt, values, keeps_old, {plan.live.begin(), plan.live.end()}, Node());
}

// Checks inside a branch fire only when the branch would have run: the test is bound once
// (`(_graphmend_pLINE := TEST)`) and gates them (`_graphmend_and(GATE, ...)`).
std::string gate_checks(const Node& stmt, Plan& plan) {
    auto& branches = plan.branches;
    plan.has_checks = any_statement(branches, [](const Statement& st) { return st.kind == Statement::Check; });
    plan.first_pred = predicate(branches[0].test);
    if (!plan.has_checks) return "";
    if (branches.size() > 2 || (branches.size() == 2 && branches[1].test)) {
        return "a check inside a branch of an if/elif chain";
    }
    const std::string bound = fmt::format("_graphmend_p{}", stmt.position().line);
    branches[0].gate = bound;
    if (branches.size() == 2) branches[1].gate = fmt::format("{}({})", runtime::name::not_, bound);
    plan.first_pred = fmt::format("({} := {})", bound, plan.first_pred);
    return "";
}

// The call: built from the last branch backwards, elif chains nesting in the false lambda;
// buffer updates before it.
Site select_site(Site site, const Context& ctx, const Node& stmt, const Scope& scope, const Checker& checker,
                 const Plan& plan) {
    const auto& branches = plan.branches;
    const auto& live = plan.live;
    std::vector<std::vector<Node>> reads;
    for (const auto& b : branches) {
        reads.emplace_back();
        for (const auto& st : b.body) {
            if (st.value) reads.back().push_back(st.value);
        }
    }
    std::vector<std::string> implicit;  // an `if` without else leaves the live names as they were
    if (!plan.has_else) implicit = live;
    const std::vector<std::string> one_sided = one_sided_reads(ctx, scope, branches, reads, implicit);
    const std::string grad = std::string(checker.grad_unsafe ? "False" : "True") +
                             (checker.costly() ? ", costly=True" : "") + only_argument(one_sided) +
                             (plan.truth.empty() ? "" : ", truth=True");
    std::string value;
    if (!plan.has_else) value = live.size() == 1 ? live[0] : fmt::format("({})", fmt::join(live, ", "));
    std::vector<std::string> pieces;  // of the outermost call, laid out below
    for (auto it = branches.rbegin(); it != branches.rend(); ++it) {
        if (!it->test) {
            value = branch_value(*it, live);
            continue;
        }
        const std::string pred = it->test == branches[0].test ? plan.first_pred : predicate(it->test);
        pieces = {fmt::format("{}{}({},", plan.all_return ? "return " : fmt::format("{} = ", fmt::join(live, ", ")),
                              runtime::name::if_, pred),
                  fmt::format("lambda: {},", branch_value(*it, live)), fmt::format("lambda: {},", value),
                  fmt::format("grad_safe={},", grad)};
        value = fmt::format("{}({}, lambda: {}, lambda: {}, grad_safe={})", runtime::name::if_, pred,
                            branch_value(*it, live), value, grad);
    }
    const std::uint32_t span_end = plan.span_end;
    site.end = span_end;
    std::string updates_text;
    for (const auto& u : plan.updates) {
        updates_text += fmt::format("{}({}, self, \"{}\", \"{}\", {}); ", runtime::name::update,
                                    predicate(branches[0].test), u.name, u.raw, u.value.text());
    }
    if (!plan.updates.empty() && live.empty()) {
        // Only counters: one line of updates, the rest blank.
        std::string out = updates_text.substr(0, updates_text.size() - 2);
        for (auto n = syntax::count_newlines(out); n < syntax::count_newlines(stmt.source().slice(stmt.begin(), span_end)); ++n) {
            out += stmt.source().eol();
        }
        site.fix = Fix{{{stmt.begin(), span_end, out}}, Applicability::Safe, {runtime::stem::predicated_control_flow}};
        site.detail = "the buffer update stays conditional on the data";
        return site;
    }
    if (!pieces.empty()) pieces[0] = updates_text + pieces[0];
    std::vector<std::string> blocks{runtime::stem::predicated_control_flow};
    if (plan.has_checks) blocks.insert(blocks.begin(), runtime::stem::deferred_effects);
    site.fix = Fix{{{stmt.begin(), span_end, layout(stmt, span_end, pieces, plan.hoisted)}}, Applicability::Safe,
                   std::move(blocks)};
    site.detail = checker.grad_unsafe
                      ? "selected with torch.where; the original control flow is kept when the branch values "
                        "require grad (a branch can produce inf/NaN)"
                      : "selected with torch.where";
    if (!plan.hoisted.empty()) {
        site.detail += fmt::format("; the call every branch ends in, `{}(...)`, made once after the select on "
                                   "the selected arguments",
                                   one_line(plan.hoisted.substr(0, plan.hoisted.find('(')), Blanks::Fold, 40));
    }
    const std::string unshown = plan.truth.empty() ? unshown_layout(ctx, plan) : "";
    if (!plan.truth.empty()) {
        site.detail += fmt::format("; `{0}`'s True or False as a one-element bool tensor (the function only tests "
                                   "`{0}` for truth), only where `{0}` is one elsewhere: else the `if` keeps its "
                                   "graph break",
                                   plan.truth);
    }
    if (!unshown.empty()) {
        site.detail += fmt::format("; only where the branches' values of {} agree at run time (tensors of one "
                                   "shape, dtype and device), which the code does not show: elsewhere the `if` "
                                   "keeps its graph break",
                                   unshown);
    }
    site.fix->condition = select_condition(
        checker.grad_unsafe, one_sided,
        !plan.truth.empty() ? fmt::format("`{}` a one-element bool tensor where no branch sets True or False", plan.truth)
        : unshown.empty()   ? ""
                            : fmt::format("{} of one shape, dtype and device in every branch", unshown));
    if (!plan.updates.empty()) site.detail += "; the buffer update stays conditional on the data";
    return site;
}

}  // namespace

std::string value_kind_clash(const Context& ctx, const Node& a, const Node& b) {
    const analysis::Value va = ctx.values.eval(ctx.file, a);
    const analysis::Value vb = ctx.values.eval(ctx.file, b);
    if (auto clash = kind_clash(va, vb); !clash.empty()) return clash;
    constexpr std::uint16_t python = analysis::kNumber | analysis::kBool | analysis::kNone | analysis::kStr;
    if ((va.only(python) && vb.tensor()) || (vb.only(python) && va.tensor())) {
        return fmt::format("a Python {} against a tensor", analysis::describe(va.only(python) ? va : vb));
    }
    return "";
}

Site site_for(const Context& ctx, const Node& stmt, const Node& def, const Scope& scope) {
    Site site = new_site(stmt, stmt.field("condition").text());
    if (site.reason = dynamic_shape_in_test(ctx, stmt.field("condition")); !site.reason.empty()) return site;
    if (auto loop_site = loop_skip_site(ctx, stmt, def, site)) return std::move(*loop_site);
    const auto new_checker = [&] {
        Checker c{ctx, submodules_of(ctx, def), buffers_of(ctx, def)};
        c.site_def = def;
        c.site_stmt = stmt;
        return c;
    };
    // A call every branch ends in, made once after the select; else (or where it cannot be,
    // and each branch can run as it is) the branches as they are.
    Checker hoisting = new_checker();
    Plan plan;
    const auto hoisted = hoist_common_call(hoisting, stmt, scope, plan);
    const bool hoist = hoisted && hoisted->empty();
    Checker checker = hoist ? std::move(hoisting) : new_checker();
    if (!hoist) {
        plan = Plan{};
        site.reason = convert_branches(checker, stmt, plan);
        if (!site.reason.empty() && hoisted) site.reason = *hoisted;
    }
    if (!site.reason.empty()) {
        site.retry = checker.nested;
        return site;
    }
    if (any_statement(plan.branches, Checker::is_state)) {
        return state_site(std::move(site), stmt, def, scope, checker, plan.branches);
    }
    if (any_statement(plan.branches, [](const Statement& s) { return s.kind == Statement::Effect; })) {
        return effects_site(std::move(site), stmt, plan.branches);
    }
    const std::function<std::string()> steps[] = {
        [&] { return take_rest(checker, stmt, def, plan); },
        [&] { return checker.check_fresh(); },
        [&] { return unbound_read(scope, plan); },
        [&] { return check_returns(ctx, plan); },
        [&] { return take_updates(plan); },
        [&] { return find_live(ctx, def, scope, plan); },
        [&] { return aliased_live(stmt, def, plan); },
        [&] { return none_on_a_path(stmt, plan); },
        [&] { return gate_checks(stmt, plan); },
    };
    for (const auto& step : steps) {
        site.reason = step();
        if (!site.reason.empty()) {
            // The rest of an early return may hold a data-dependent `if` of its own.
            site.retry = checker.nested;
            return site;
        }
    }
    return select_site(std::move(site), ctx, stmt, scope, checker, plan);
}

}  // namespace graphmend::rules::control_flow
