// Matching expert dispatch loops (see src/rules/gm501_static_expert_dispatch/expert_dispatch.hpp).
//
// The static form takes every candidate pair of the mask instead of the pairs it holds,
// and masks what each pair adds. It equals the loop when:
//   - the pairs feed only gathers (`X[I]`, `X[None, I]`, `W[I, J, None]`), size tests that
//     skip an expert with no pairs, and the index of one `Y.index_add_(0, I, SRC)`;
//   - the gathered rows go through row-wise computation only (rowwise.cpp) into SRC: each
//     pair's row comes out as it did, and the pairs the mask does not hold add a zero
//     (torch.where, so an inf or NaN in them cannot leak);
//   - no value computed from the pairs is read after the loop, and nothing else in the
//     body has an effect the extra pairs would repeat;
//   - a loop over the experts a mask hits (`hit = (M.sum(...) > 0).nonzero(...)[0].tolist()`
//     with M a one_hot) may run over every expert: the others hold no pair and add zeros; so
//     may transformers 5.x's loop over the rows of `C.nonzero()` (rows_hit_header,
//     expert_dispatch_hits.cpp).
// index_add_ adds each row's contributions in the order of the pairs, which the static form
// keeps (torch.where lists pairs in row-major order, as does the static form).
#include "expert_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "expert_dispatch_match.hpp"
#include "graphmend/liveness.hpp"
#include "rules/support/body.hpp"

namespace graphmend::rules {

using syntax::Node;

// True when `n` holds a call.
bool expert_match::has_call(const Node& n) {
    bool found = false;
    syntax::walk(n, [&](const Node& x) {
        found = found || x.is("call");
        return !found;
    });
    return found;
}

using body::assignment_of;
using body::inside;
using body::statements;
using expert_match::boolean_masks;
using expert_match::has_call;
using expert_match::hit_list_header;
using expert_match::Matcher;
using expert_match::pairs_mask;

namespace {

// A read of any of `names` in `def`, outside `loop`, that can see a value the loop left:
// after the loop with no assignment of the name in between that always runs before the read
// (one in a block around the read), or before the loop inside a loop around both.
Node read_outside(const Node& def, const Node& loop, const std::set<std::string>& names) {
    std::vector<Node> assignments;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition")) return false;
        if ((n.is("assignment") || n.is("augmented_assignment")) && n.field("left").is("identifier") &&
            names.contains(text(n.field("left"))) && !inside(n, loop)) {
            assignments.push_back(n);
        }
        return true;
    });
    auto overwritten = [&](const Node& read) {
        for (const Node& a : assignments) {
            if (a.is("assignment") && a.field("left").text() == read.text() && a.begin() > loop.end() &&
                a.end() <= read.begin()) {
                Node block = a.parent();
                while (block && !block.is("block")) block = block.parent();
                if (block && inside(read, block)) return true;
            }
        }
        return false;
    };
    auto loop_around_both = [&](const Node& read) {
        for (Node p = loop.parent(); p && !(p == def); p = p.parent()) {
            if ((p.is("for_statement") || p.is("while_statement")) && inside(read, p)) return true;
        }
        return false;
    };
    Node found;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (found || n == loop) return false;
        if (n.is("function_definition") || n.is("class_definition")) return false;
        if (n.is("identifier") && names.contains(text(n)) && analysis::is_read(n)) {
            if (n.begin() > loop.end() ? !overwritten(n) : loop_around_both(n)) found = n;
        }
        return !found;
    });
    return found;
}

// True when `name` is assigned anywhere inside `node`.
bool assigned_in(const Node& node, const std::string& name) {
    bool found = false;
    syntax::walk(node, [&](const Node& n) {
        if ((n.is("assignment") || n.is("augmented_assignment")) && n.field("left").text() == name) found = true;
        return !found;
    });
    return found;
}

// `if TEST: continue` with a TEST that calls nothing and reads no rows: before the pairs it
// skips an expert for its index alone, which has the same value in the static form; an expert
// the static form adds and skips would only have added zeros.
bool skip_test(const Node& stmt, RowFlow& flow) {
    if (!stmt.is("if_statement")) return false;
    for (const Node& c : stmt.named_children()) {
        if (c.is("elif_clause") || c.is("else_clause")) return false;
    }
    const auto body = statements(stmt.field("consequence"));
    return body.size() == 1 && body[0].is("continue_statement") && !has_call(stmt.field("condition")) &&
           !flow.holds_rows(stmt.field("condition"));
}

// The loop's index variable: `for e in ...`, or the first name of `for e, x in enumerate(...)`.
std::string loop_index(const Node& loop) {
    const Node left = loop.field("left");
    if (left.is("identifier")) return text(left);
    const Node right = loop.field("right");
    if ((left.is("pattern_list") || left.is("tuple_pattern")) && right.is("call") &&
        right.field("function").text() == "enumerate" && !left.named_children().empty() &&
        left.named_children()[0].is("identifier")) {
        return text(left.named_children()[0]);
    }
    return "";
}

// The pairs statement `A, B = torch.where(M)` (or `nonzero(as_tuple=True)`) among `stmts`, the
// loop's body: sets d.pairs, d.pairs_call, d.mask and d.anchor, and returns the index of the
// statement after it (0 when there is none). `pairs_under` gets the head of the `with` the pairs
// are taken under, if any.
std::size_t find_pairs(const Context& ctx, const std::vector<Node>& stmts, ExpertDispatch& d,
                       std::string& pairs_under) {
    for (std::size_t i = 0; i < stmts.size(); ++i) {
        Node a = assignment_of(stmts[i]);
        if (stmts[i].is("with_statement")) {  // `with torch.no_grad(): idx, top_x = torch.where(M)` (DBRX)
            const auto inner = statements(stmts[i].field("body"));
            a = inner.size() == 1 ? assignment_of(inner[0]) : Node();
            pairs_under = a ? expert_match::head_line(stmts[i]) : "";
        } else {
            pairs_under.clear();
        }
        if (!a || !(a.field("left").is("pattern_list") || a.field("left").is("tuple_pattern"))) continue;
        if (const Node mask = pairs_mask(ctx, syntax::without_parens(a.field("right")))) {
            d.pairs = stmts[i];
            d.pairs_call = syntax::without_parens(a.field("right"));
            d.mask = mask;
            d.anchor = d.pairs_call;
            return i + 1;
        }
    }
    return 0;
}

// `for i, x in enumerate(C)`: x is an element of C for the row flow.
void bind_enumerated(const Node& loop, RowFlow& flow) {
    if (const Node right = loop.field("right"); right.is("call") && right.field("function").text() == "enumerate" &&
                                               right.field("arguments").named_children().size() == 1) {
        const auto names = loop.field("left").named_children();
        if (names.size() == 2 && names[1].is("identifier")) {
            flow.elements.emplace(text(names[1]), right.field("arguments").named_children()[0]);
        }
    }
}

// The names the pairs are unpacked into become index names of the row flow; false (refused)
// when one is not a plain name.
bool bind_pair_names(const ExpertDispatch& d, Matcher& m) {
    for (const Node& t : d.pairs.named_children()[0].field("left").named_children()) {
        if (!t.is("identifier")) {
            m.refuse("the pairs are not unpacked into plain names");
            return false;
        }
        m.flow().index.insert(text(t));
    }
    return true;
}

// The trip count: `range(...)`, a container of modules, or the experts a mask hits (`hit`
// set, and the hit list's fields of d: hit_list_header). Sets d.steps; false when refused.
bool trip_count(const Context& ctx, const Node& def, const Node& loop, const Node& loop_mask, ExpertDispatch& d,
                Matcher& m, bool& hit) {
    const Node iterable = loop.field("right");
    if (iterable.is("call") && iterable.field("function").text() == "range") {
        const auto args = iterable.field("arguments").named_children();
        d.steps = args.size() == 1 ? text(args[0]) : fmt::format("len({})", iterable.text());
    } else if (iterable.is("identifier") && hit_list_header(ctx, def, loop, loop_mask, d)) {
        hit = true;
        m.flow().loop_var = d.loop_var;
    } else if (iterable.is("call") && iterable.field("function").text() == "enumerate" &&
               iterable.field("arguments").named_children().size() == 1 &&
               !ctx.values.eval(ctx.file, iterable.field("arguments").named_children()[0]).tensor()) {
        d.steps = fmt::format("len({})", iterable.field("arguments").named_children()[0].text());
    } else {
        m.refuse(fmt::format("the loop runs over `{}`, not a range, enumerate() or the experts a mask hits",
                             iterable.text()));
        return false;
    }
    return true;
}

// The statements before the pairs (the first `at - 1` of `stmts`): `continue` tests of the
// index, and assignments of names; false when refused.
bool before_pairs(const std::vector<Node>& stmts, std::size_t at, bool hit, const ExpertDispatch& d, Matcher& m) {
    // Before the pairs: in the hit-list form every expert now runs them, so no calls.
    for (std::size_t i = 0; d.pairs && i + 1 < at; ++i) {
        if (skip_test(stmts[i], m.flow())) continue;
        const Node a = assignment_of(stmts[i]);
        bool calls = false;
        syntax::walk(stmts[i], [&](const Node& n) {
            calls = calls || n.is("call");
            return !calls;
        });
        if (!a || (hit && calls) || !a.field("left").is("identifier")) {
            m.refuse(fmt::format("line {}: a statement before the pairs that the static form would run for more "
                                 "experts",
                                 stmts[i].position().line));
            return false;
        }
    }
    return true;
}

// After the check of the body: the results are taken back, and a Dropout's eval mode can be
// checked (`def` a module method); false when refused.
bool results_taken_back(const Node& def, const ExpertDispatch& d, Matcher& m) {
    if (d.pairs && !d.scatter) {
        m.refuse("no `Y.index_add_(0, INDEX, SOURCE)` takes the results back");
        return false;
    }
    if (!d.pairs && d.puts.empty()) {
        m.refuse("no `Y[..., MASK, ...] = VALUE` takes the results back");
        return false;
    }
    if (d.needs_eval && owner_of(def).empty()) {
        m.refuse("a Dropout in the computation, outside a module method whose eval mode could be checked");
        return false;
    }
    return true;
}

// The hit-list form: false (refused) when the body has an effect on experts the loop skipped.
bool skipped_experts_untouched(const Node& loop, const ExpertDispatch& d, Matcher& m) {
    // Every expert now runs the body: calls outside the row computation must be harmless,
    // and nothing but the writes of the rows may store state.
    syntax::walk(loop.field("body"), [&](const Node& n) {
        if ((n.is("assignment") || n.is("augmented_assignment")) && !n.field("left").is("identifier") &&
            !n.field("left").is("pattern_list") &&
            std::none_of(d.puts.begin(), d.puts.end(), [&](const auto& p) { return p.first == n; })) {
            m.refuse(fmt::format("line {}: `{}` stores state for experts the loop skipped", n.position().line,
                                 n.field("left").text()));
        }
        if (!n.is("call") || n == d.pairs_call || m.flow().holds_rows(n)) return true;
        const Node fn = n.field("function");
        const bool harmless = fn.text() == "getattr" || fn.text() == "len" ||
                              (fn.is("attribute") && fn.field("attribute").text() == "format") ||
                              (d.hit_rows && n == syntax::without_parens(d.mask));  // `BASE[row].squeeze(0)`
        if (!harmless) {
            m.refuse(fmt::format("line {}: `{}` would run for experts the loop skipped", n.position().line,
                                 fn.text()));
        }
        return true;
    });
    return d.refused.empty();
}

// The names whose values after the loop the static form changes: those the checked statements
// assign and the pairs' index names; in the hit-list form also the loop's targets and every
// name a statement of the body (`stmts`) assigns.
std::set<std::string> names_left(const Node& loop, const std::vector<Node>& stmts, bool hit, Matcher& m) {
    std::set<std::string> inner = m.assigned();
    inner.insert(m.flow().index.begin(), m.flow().index.end());
    if (hit) {  // the static form runs more iterations: the loop's last values differ
        syntax::walk(loop.field("left"), [&](const Node& n) {
            if (n.is("identifier")) inner.insert(text(n));
            return true;
        });
        for (const Node& st : stmts) {
            if (const Node a = assignment_of(st); a && a.field("left").is("identifier")) inner.insert(text(a.field("left")));
        }
    }
    return inner;
}

// Refuses a loop whose range reads the pairs or a name the loop assigns (`inner`, and the
// names the statements before the pairs assign), or, in the hit-list form, one that assigns
// the stacked mask.
void check_range(const Node& loop, const std::vector<Node>& stmts, std::size_t at, bool hit,
                 const std::set<std::string>& inner, const ExpertDispatch& d, Matcher& m) {
    const Node iterable = loop.field("right");
    // The steps expression must mean the same at every pair statement.
    std::set<std::string> body_names = inner;
    for (std::size_t i = 0; d.pairs && i + 1 < at; ++i) {
        if (const Node a = assignment_of(stmts[i])) body_names.insert(text(a.field("left")));
    }
    if (!hit && m.flow().holds_rows(iterable)) m.refuse("the loop's range reads the pairs");
    syntax::walk(iterable, [&](const Node& n) {
        if (n.is("identifier") && body_names.contains(text(n)) &&
            !(n.parent().is("attribute") && n.parent().field("attribute") == n)) {
            m.refuse("the loop's range reads a name the loop assigns");
        }
        return true;
    });
    if (hit && assigned_in(loop, d.stacked)) m.refuse(fmt::format("the loop assigns `{}`", d.stacked));
}
}  // namespace

std::optional<ExpertDispatch> match_expert_dispatch(const Context& ctx, const Node& def, const Node& loop) {
    if (!loop.is("for_statement")) return std::nullopt;
    const auto stmts = statements(loop.field("body"));
    ExpertDispatch d;
    d.loop = loop;
    d.loop_var = loop_index(loop);
    std::string pairs_under;  // the `with` the pairs are taken under, if any
    // The first statement checked as part of the dispatch.
    const std::size_t at = find_pairs(ctx, stmts, d, pairs_under);
    Matcher m(ctx, def, d);
    m.flow().loop_var = d.loop_var;
    if (d.pairs && !pairs_under.empty()) {
        m.refuse(fmt::format("the pairs are taken under `{}`: the choice of the static form there would not see the "
                             "grad mode of the computation on the rows",
                             pairs_under));
        return d;
    }
    bind_enumerated(loop, m.flow());
    Node loop_mask = d.mask;
    if (d.pairs) {
        if (!bind_pair_names(d, m)) return d;
    } else {
        d.kind = ExpertDispatch::Kind::Mask;
        loop_mask = boolean_masks(def, loop, d.loop_var, m.flow().masks);
        if (!loop_mask) return std::nullopt;
        d.anchor = loop_mask;
    }
    if (loop.named_children().back().is("else_clause")) {
        m.refuse("the loop has an `else`");
        return d;
    }
    bool hit = false;  // the loop runs over the experts a mask hits
    if (!trip_count(ctx, def, loop, loop_mask, d, m, hit)) return d;
    if (!before_pairs(stmts, at, hit, d, m)) return d;
    if (!m.body_after(stmts, at)) return d;
    d.gathers = m.flow().mask_gathers;
    d.needs_eval = m.flow().needs_eval;
    if (!results_taken_back(def, d, m)) return d;
    if (hit && !skipped_experts_untouched(loop, d, m)) return d;
    const std::set<std::string> inner = names_left(loop, stmts, hit, m);
    if (const Node read = read_outside(def, loop, inner)) {
        m.refuse(fmt::format("line {}: `{}` is read after the loop, where the static form leaves other values",
                             read.position().line, read.text()));
        return d;
    }
    check_range(loop, stmts, at, hit, inner, d, m);
    return d;
}

}  // namespace graphmend::rules
