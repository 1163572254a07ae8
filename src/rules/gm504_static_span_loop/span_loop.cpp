// Matching a loop over the separators of a 2-D mask that writes the spans between them (see
// src/rules/gm504_static_span_loop/span_loop.hpp, SpanLoop, for the form and why the static form equals it).
//
// What is proven here, syntactically:
//   - IDX is bound once, before the loop, by nonzero/argwhere of one tensor, and read only by
//     the loop's iterable and `ROW, COL = IDX[I]`;
//   - I, ROW and COL are read only in the loop, PREV only in the loop and in its one binding
//     before it, in the loop's own block; so the static form, which runs no iteration, leaves
//     nothing unbound that is read later;
//   - the body is `ROW, COL = IDX[I]`, then writes and `if`s of writes, then `PREV = COL`;
//     a test is comparisons, each reading ROW, COL or PREV (so each is a bool tensor), of
//     names bound before the loop, ints, attributes of other names and `+`, `-`, `*`, joined
//     by `and`/`or`/`not` (written `&`, `|`, `~`: the static form evaluates every test at every
//     position, which is why nothing in a test may raise, `//` and `%` included);
//   - a write is `X[ROW, P]` or `X[ROW, P, P]` with P `COL` or `PREV + 1 : COL + 1`, of a bool
//     or an int of -128..127 (which masked_fill_ converts as the index store does), or (2-D
//     spans) `torch.arange(0, COL - PREV)` / `torch.arange(COL - PREV)` with at most `device=`;
//     X a name made before the loop by a call that allocates (torch.zeros, eye, full, ...,
//     `.repeat()`, `.clone()`; no `out=`), so no two targets share memory;
//   - no nested function or lambda names IDX, I, ROW, COL or PREV;
//   - where a write may raise (arange of a negative length, when PREV carried over from the
//     row before exceeds COL), the loop is not inside a `try`: the static form raises the same
//     error before any write, and the targets, made in this function, are not seen half-written.
// Shapes, dtypes, devices and grad are checked at run time (src/runtime/span_loop.py), which
// runs the loop as written when they do not fit.
#include "span_loop.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "graphmend/emit.hpp"
#include "graphmend/knowledge.hpp"
#include "graphmend/liveness.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/site.hpp"
#include "rules/support/body.hpp"
#include "span_loop_internal.hpp"

namespace graphmend::rules {

using syntax::Node;
using span_loop_detail::indices_of;
using span_loop_detail::Matcher;
using span_loop_detail::squeezed;

using body::assignment_of;
using body::inside;
using body::occurrences;
using body::statements;

namespace {

// The name that `range(IDX.shape[0])`, `range(len(IDX))` or `range(IDX.size(0))` counts, or "".
std::string counted(const Context& ctx, const Node& iterable) {
    const Node r = syntax::without_parens(iterable);
    if (!r.is("call") || r.field("function").text() != "range" || ctx.source().index.find_import("range") != nullptr) {
        return "";
    }
    const auto args = r.field("arguments").named_children();
    if (args.size() != 1) return "";
    const std::string a = squeezed(args[0].text());
    for (const char* suffix : {".shape[0]", ".size(0)"}) {
        const std::string s = suffix;
        if (a.size() > s.size() && a.ends_with(s)) return a.substr(0, a.size() - s.size());
    }
    if (a.starts_with("len(") && a.ends_with(")") && ctx.source().index.find_import("len") == nullptr) {
        return a.substr(4, a.size() - 5);
    }
    return "";
}

// `torch.nonzero(M)`, `torch.argwhere(M)` or `M.nonzero()`: M, or invalid.
Node index_mask(const Context& ctx, const Node& e) {
    const Node call = syntax::without_parens(e);
    if (!call.is("call")) return {};
    const auto args = call.field("arguments").named_children();
    const Node fn = call.field("function");
    const std::string ext = ctx.project.external_name(ctx.file, fn);
    if ((ext == "torch.nonzero" || ext == "torch.argwhere") && args.size() == 1 && !args[0].is("keyword_argument")) {
        return args[0];
    }
    if (fn.is("attribute") && fn.field("attribute").text() == "nonzero" && args.empty() &&
        ctx.values.eval(ctx.file, fn.field("object")).tensor()) {
        return fn.field("object");
    }
    return {};
}

// The call that binds `name` last before `before` at the top level of `block`, or invalid.
Node last_binding(const Node& block, const std::string& name, std::uint32_t before) {
    Node found;
    for (const Node& s : statements(block)) {
        if (s.begin() >= before) break;
        const Node a = assignment_of(s);
        if (a && a.field("left").is("identifier") && a.field("left").text() == name) found = a;
    }
    return found;
}

bool allocates(const Context& ctx, const Node& e) {
    const Node call = syntax::without_parens(e);
    if (!call.is("call")) return false;
    for (const Node& arg : call.field("arguments").named_children()) {
        if (arg.is("keyword_argument") && arg.field("name").text() == "out") return false;  // the caller's tensor
    }
    const Node fn = call.field("function");
    if (knowledge::allocating_function(ctx.project.external_name(ctx.file, fn))) return true;
    return fn.is("attribute") && knowledge::allocating_method(fn.field("attribute").text());
}

// The loop's form before any check: `for I in range(IDX.shape[0])` whose body starts with
// `ROW, COL = IDX[I]`, IDX bound once before the loop by nonzero/argwhere of the mask.
struct Form {
    std::string idx;          // IDX
    std::string loop_var;     // I
    std::vector<Node> steps;  // the loop body's statements
    Node first;               // `ROW, COL = IDX[I]`
    Node unpacked;            // `ROW, COL`
    Node source;              // `IDX[I]`
    Node binding;             // `IDX = ...`
    Node mask;                // the mask
};

std::optional<Form> form_of(const Context& ctx, const Node& def, const Node& loop) {
    if (!loop.is("for_statement") || !loop.field("left").is("identifier")) return std::nullopt;
    const std::string idx = counted(ctx, loop.field("right"));
    if (idx.empty()) return std::nullopt;
    const auto steps = statements(loop.field("body"));
    if (steps.empty()) return std::nullopt;
    const Node first = assignment_of(steps[0]);
    if (!first) return std::nullopt;
    const Node unpacked = first.field("left");
    const Node source = syntax::without_parens(first.field("right"));
    if (!(unpacked.is("pattern_list") || unpacked.is("tuple_pattern")) || unpacked.named_children().size() != 2 ||
        !source.is("subscript") || text(source.field("value")) != idx) {
        return std::nullopt;
    }
    const auto picked = indices_of(source);
    const std::string loop_var = text(loop.field("left"));
    if (picked.size() != 1 || text(picked[0]) != loop_var) return std::nullopt;
    // IDX: one binding in the function, before the loop, by nonzero/argwhere.
    Node binding;
    std::size_t bindings = 0;
    for (const Node& o : occurrences(def, idx)) {
        if (body::bound_here(o)) {
            ++bindings;
            binding = o.parent();
        }
    }
    if (bindings != 1 || !binding.is("assignment") || binding.end() > loop.begin()) return std::nullopt;
    const Node mask = index_mask(ctx, binding.field("right"));
    if (!mask) return std::nullopt;
    return Form{idx, loop_var, steps, first, unpacked, source, binding, mask};
}

// Why the loop's names (I, ROW, COL, PREV, IDX) may be seen where the static form does not
// set them: outside the loop, in a nested function, before they are bound ("" when they
// cannot).
std::string names_stay_inside(const Form& form, const Node& def, const Node& loop, const Matcher& m,
                              const Node& prev_init) {
    const std::string& idx = form.idx;
    const std::string& loop_var = form.loop_var;
    const Node& binding = form.binding;
    const Node& source = form.source;
    // The names the loop binds: read nowhere outside it (PREV: bound once before it, too).
    for (const std::string& name : {loop_var, m.row, m.col, m.prev}) {
        if (name.empty()) continue;
        for (const Node& o : occurrences(def, name)) {
            if (inside(o, loop)) continue;
            if (prev_init && name == m.prev && o == prev_init.field("left")) continue;
            return fmt::format("line {}: `{}` is used outside the loop, which the static form does not run",
                               o.position().line, name);
        }
    }
    // A nested function or lambda of `def` that names them would read the values the loop leaves.
    bool nested = false;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (nested) return false;
        if (!n.is("function_definition") && !n.is("lambda") && !n.is("class_definition")) return true;
        syntax::walk(n, [&](const Node& id) {
            if (id.is("identifier") && (id.text() == loop_var || id.text() == idx || m.separator_name(id.text()))) {
                nested = true;
            }
            return !nested;
        });
        return false;
    });
    if (nested) {
        return fmt::format("line {}: a nested function or lambda names the loop's variables or its index",
                           loop.position().line);
    }
    const analysis::Scope scope = analysis::scope_of(def, loop);
    for (const Node& f : m.free) {
        const std::string name = text(f);
        if (scope.locals.contains(name) && !scope.bound_before.contains(name)) {
            return fmt::format("line {}: `{}` may have no value when the loop starts", f.position().line,
                               name);
        }
    }
    for (const char* builtin : {"range", "len"}) {
        if (scope.locals.contains(builtin)) {
            return fmt::format("line {}: `{}` is a local name", loop.position().line, builtin);
        }
    }
    if (!m.prev.empty() && !prev_init) {
        return fmt::format("line {}: `{}` is not set just before the loop", loop.position().line, m.prev);
    }
    for (const Node& o : occurrences(def, idx)) {
        if (o == binding.field("left") || inside(o, loop.field("right")) || o == source.field("value")) continue;
        return fmt::format("line {}: `{}` is used other than by the loop", o.position().line, idx);
    }
    return "";
}

// Why a target of the loop's writes may be read, or seen half-written, other than by the static
// form's writes: each must be made just before the loop by a call that allocates it ("" when
// all are).
std::string targets_fresh(const Context& ctx, const Node& def, const Node& loop, const Matcher& m, const Node& mask) {
    // Inside the loop, the names are read only where the matcher placed them; a target is
    // written only (its own reads are the index's, checked above).
    for (const std::string& x : m.targets) {
        if (x == text(mask) || (!m.prev.empty() && x == m.prev)) {
            return fmt::format("line {}: `{}` is both written and read by the loop", loop.position().line, x);
        }
        const Node made = last_binding(loop.parent(), x, loop.begin());
        if (!made || !allocates(ctx, made.field("right"))) {
            return fmt::format("line {}: `{}` is not made just before the loop by a call that allocates it "
                               "(torch.zeros, torch.eye, .repeat(), .clone(), ...; without `out=`)",
                               loop.position().line, x);
        }
        for (const Node& o : occurrences(def, x)) {
            if (inside(o, loop) && !(o.parent().is("subscript") && o.parent().field("value") == o &&
                                     o.parent().parent().is("assignment") &&
                                     o.parent().parent().field("left") == o.parent())) {
                return fmt::format("line {}: `{}` is read in the loop", o.position().line, x);
            }
            if (o.begin() > made.end() && o.end() < loop.begin() && !inside(o, made)) {
                return fmt::format("line {}: `{}` is used between where it is made and the loop",
                                   o.position().line, x);
            }
        }
    }
    if (m.raises) {
        for (Node p = loop.parent(); p && !(p == def); p = p.parent()) {
            if (p.is("try_statement")) {
                return fmt::format("line {}: a write may raise inside a `try`, where the targets would be "
                                   "seen half-written",
                                   loop.position().line);
            }
        }
    }
    return "";
}

}  // namespace

std::optional<SpanLoop> match_span_loop(const Context& ctx, const Node& def, const Node& loop) {
    const auto form = form_of(ctx, def, loop);
    if (!form) return std::nullopt;
    const auto& [idx, loop_var, steps, first, unpacked, source, binding, mask] = *form;

    SpanLoop d;
    d.loop = loop;
    d.index_call = syntax::without_parens(binding.field("right"));
    d.mask = mask;
    d.index = idx;
    auto refuse = [&](std::string why) {
        if (d.refused.empty()) d.refused = std::move(why);
        return d;
    };
    const auto names = unpacked.named_children();
    if (!names[0].is("identifier") || !names[1].is("identifier") || names[0].text() == names[1].text()) {
        return refuse(fmt::format("line {}: the separator is not unpacked into two names", first.position().line));
    }
    if (loop.named_children().back().is("else_clause")) {
        return refuse(fmt::format("line {}: the loop has an `else`", loop.position().line));
    }
    Matcher m{ctx, def, text(names[0]), text(names[1]), "", idx, loop_var, {}, {}, {}, false, ""};
    // `PREV = COL` last, PREV bound once before the loop in the loop's block.
    std::size_t last = steps.size();
    if (const Node a = assignment_of(steps.back());
        steps.size() > 1 && a && a.field("left").is("identifier") && text(a.field("right")) == m.col) {
        m.prev = text(a.field("left"));
        last = steps.size() - 1;
    }
    for (const std::string& name : {m.row, m.col, m.prev}) {
        if (name == idx || name == loop_var) return refuse(fmt::format("line {}: `{}` is bound twice", first.position().line, name));
    }
    if (!m.prev.empty() && (m.prev == m.row || m.prev == m.col)) {
        return refuse(fmt::format("line {}: `{}` is bound twice", first.position().line, m.prev));
    }
    if (!m.block(std::vector<Node>(steps.begin() + 1, steps.begin() + static_cast<std::ptrdiff_t>(last)), "")) {
        return refuse(m.why);
    }
    if (m.stores.empty()) return refuse(fmt::format("line {}: the loop writes nothing", loop.position().line));
    Node prev_init;
    if (!m.prev.empty()) prev_init = last_binding(loop.parent(), m.prev, loop.begin());
    if (std::string why = names_stay_inside(*form, def, loop, m, prev_init); !why.empty()) return refuse(why);
    if (std::string why = targets_fresh(ctx, def, loop, m, mask); !why.empty()) return refuse(why);
    d.prev = m.prev;
    d.raises = m.raises;
    d.iterable = emit::call(runtime::name::span_range,
                            {idx, m.prev.empty() ? "0" : m.prev,
                             emit::lambda({m.row, m.col, m.prev.empty() ? "_graphmend_prev" : m.prev},
                                          emit::tuple(m.stores, true)),
                             m.raises ? runtime::name::check : "None"});
    return d;
}

}  // namespace graphmend::rules
