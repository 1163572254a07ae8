// Expert dispatch loops over the experts a mask hits (see expert_dispatch_match.hpp,
// hit_list_header): a hit list `HIT = C.nonzero(as_tuple=True)[0].tolist()`, or transformers
// 5.x's rows of `C.nonzero()`, and what the expert's index picks in such a loop.
#include <fmt/format.h>

#include <tuple>

#include "expert_dispatch_match.hpp"
#include "graphmend/liveness.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/body.hpp"

namespace graphmend::rules::expert_match {

using body::assignment_of;
using body::inside;
using body::statements;

namespace {

// The statement before `stmt` in its block (comments skipped), or invalid.
Node previous_statement(const Node& stmt) {
    const Node block = stmt.parent();
    Node prev;
    for (const Node& s : block.named_children()) {
        if (s == stmt) return prev;
        if (!s.is("comment")) prev = s;
    }
    return {};
}

// The 1-D tensor C of `C.nonzero(as_tuple=True)[0].tolist()` or
// `torch.nonzero(C, as_tuple=True)[0].tolist()`, or invalid.
Node nonzero_list_of(const Context& ctx, const Node& rhs) {
    const Node call = syntax::without_parens(rhs);
    if (!call.is("call") || !call.field("function").is("attribute") ||
        call.field("function").field("attribute").text() != "tolist" ||
        !call.field("arguments").named_children().empty()) {
        return {};
    }
    const Node first = syntax::without_parens(call.field("function").field("object"));
    if (!first.is("subscript") || first.field("subscript").text() != "0") return {};
    const Node nz = syntax::without_parens(first.field("value"));
    if (!nz.is("call")) return {};
    return pairs_mask(ctx, nz);  // the same three spellings as the pairs
}

// The tensor C of `C.nonzero()` or `torch.nonzero(C)` (without as_tuple: a tensor of index
// rows, transformers 5.x's `expert_hit = torch.greater(M.sum(dim=(-1, -2)), 0).nonzero()`), or
// invalid.
Node nonzero_rows_of(const Context& ctx, const Node& rhs) {
    const Node call = syntax::without_parens(rhs);
    if (!call.is("call")) return {};
    const Node fn = call.field("function");
    const auto args = call.field("arguments").named_children();
    const std::string ext = ctx.project.external_name(ctx.file, fn);
    if (ext == "torch.nonzero" && args.size() == 1 && !args[0].is("keyword_argument") && !args[0].is("list_splat")) {
        return args[0];
    }
    if (fn.is("attribute") && fn.field("attribute").text() == "nonzero" && args.empty() && ext.empty()) {
        return fn.field("object");
    }
    return {};
}

// The statement `HIT = C.nonzero()` a loop `for row in HIT:` runs over: before the loop, or
// the last statement of a `with torch.no_grad():` block before it, with only statements
// `NAME = EXPR` between that call nothing and assign neither HIT nor a name C reads (the
// static form evaluates `.nonzero()` at the loop instead). The assignment, or invalid.
Node rows_hit_assignment(const Context& ctx, const Node& loop, const std::string& hit) {
    Node prev = previous_statement(loop);
    std::set<std::string> between;
    while (prev) {
        const Node a = assignment_of(prev);
        if (!a || !a.field("left").is("identifier") || a.field("left").text() == hit || has_call(a.field("right"))) {
            break;
        }
        between.insert(text(a.field("left")));
        prev = previous_statement(prev);
    }
    if (prev && prev.is("with_statement")) {
        const Node clause = prev.named_children().empty() ? Node() : prev.named_children()[0];
        const auto items = clause && clause.is("with_clause") ? clause.named_children() : std::vector<Node>{};
        const Node value = items.size() == 1 && items[0].is("with_item") && items[0].named_children().size() == 1
                               ? syntax::without_parens(items[0].named_children()[0])
                               : Node();
        if (!value || !value.is("call") || !value.field("arguments").named_children().empty() ||
            ctx.project.external_name(ctx.file, value.field("function")) != "torch.no_grad") {
            return {};
        }
        const auto body = statements(prev.field("body"));
        if (body.empty()) return {};
        prev = body.back();
    }
    const Node a = prev ? assignment_of(prev) : Node();
    if (!a || !a.field("left").is("identifier") || a.field("left").text() != hit) return {};
    const Node c = nonzero_rows_of(ctx, a.field("right"));
    if (!c) return {};
    bool reads = false;
    syntax::walk(c, [&](const Node& n) {
        reads = reads || (n.is("identifier") && between.contains(text(n)));
        return !reads;
    });
    return reads ? Node() : a;
}

// `row[0]`: true when `e` is that subscript of the name `row`.
bool first_of(const Node& e, const std::string& row) {
    const Node n = syntax::without_parens(e);
    if (!n.is("subscript") || !n.field("value").is("identifier") || n.field("value").text() != row) return false;
    const auto parts = n.named_children();
    return parts.size() == 2 && parts[1].is("integer") && parts[1].text() == "0";
}

// The picks of the expert's index in a hit-list loop: every read of `index` in the loop's body
// (every `row[0]` when `row_reads`; only after `rebind` when there is one) that indexes
// something, `X[e]`, `X[f"..{e}.."]` or `getattr(X, f"..{e}..")`, becomes
// `_graphmend_has(X, KEY)` in a lambda of `param`. The static form runs every index of the
// hit mask, which may have more experts than X (`one_hot(..., num_classes=n + 1)` over n
// modules): the runtime takes it only when every index picks. Sets d.picks, or refuses (a pick
// among several indices, an f-string used otherwise, an X that calls or that the loop assigns).
bool hit_picks(const Node& loop, const std::string& index, bool row_reads, const Node& rebind, const Node& mask,
               ExpertDispatch& d) {
    const std::string mask_text(syntax::without_parens(mask).text());
    std::vector<std::string> checks;
    std::string why;
    // `if TEST: continue` at the top of the body (`if expert_idx == self.num_experts: continue`,
    // transformers 5.x over `num_classes=n + 1`): a pick after it is reached only where TEST is
    // false, so its check is `TEST or _graphmend_has(...)`. TEST calls nothing and reads no name
    // the loop assigns other than the index.
    std::vector<Node> skips;
    for (const Node& st : statements(loop.field("body"))) {
        if (!st.is("if_statement") || st.field("alternative")) continue;
        const auto body = statements(st.field("consequence"));
        if (body.size() != 1 || !body[0].is("continue_statement")) continue;
        bool plain = true;
        syntax::walk(st.field("condition"), [&](const Node& n) {
            if (n.is("call") || n.is("lambda") || n.is("named_expression")) plain = false;
            if (n.is("identifier") && !(n.parent().is("attribute") && n.parent().field("attribute") == n) &&
                text(n) != index && analysis::binds(loop.field("body"), text(n))) {
                plain = false;
            }
            return plain;
        });
        if (plain) skips.push_back(st);
    }
    auto guarded = [&](const Node& at, std::string check) {
        std::string tests;
        for (const Node& st : skips) {
            if (st.end() <= at.begin()) tests += fmt::format("({}) or ", syntax::without_parens(st.field("condition")).text());
        }
        return tests + check;
    };
    auto sole_index = [](const Node& sub, const Node& u) {
        const auto parts = sub.named_children();
        return sub.is("subscript") && parts.size() == 2 && parts[1] == u;
    };
    auto container = [&](const Node& x) {
        bool ok = true;
        syntax::walk(x, [&](const Node& n) {
            if (n.is("call") || n.is("lambda") || n.is("named_expression")) ok = false;
            if (n.is("identifier") && !(n.parent().is("attribute") && n.parent().field("attribute") == n) &&
                (text(n) == index || analysis::binds(loop.field("body"), text(n)))) {
                ok = false;
            }
            return ok;
        });
        if (!ok && why.empty()) {
            why = fmt::format("line {}: `{}` is picked by the expert's index, and graphmend cannot check before the "
                              "loop that every index of the hit mask picks an element of it",
                              x.position().line, x.text());
        }
        return ok;
    };
    syntax::walk(loop.field("body"), [&](const Node& n) {
        if (!why.empty()) return false;
        if (!n.is("identifier") || text(n) != index || !analysis::is_read(n)) return true;
        if (rebind && n.begin() < rebind.end()) return true;
        Node u = n;
        if (row_reads) {
            if (!first_of(n.parent(), index)) return true;
            u = n.parent();
        }
        // The key: the index itself, an f-string holding it, or `"...".format(..., e, ...)`.
        Node key = u;
        if (u.parent().is("interpolation")) {
            key = u.parent();
            while (key && !key.is("string")) key = key.parent();
        } else if (const Node al = u.parent(); al.is("argument_list") && al.parent().is("call") &&
                                               al.parent().field("function").is("attribute") &&
                                               al.parent().field("function").field("attribute").text() == "format" &&
                                               al.parent().field("function").field("object").is("string")) {
            key = al.parent();
        }
        if (!key) return true;
        const Node p = key.parent();
        if (p.is("subscript") && !(p.field("value") == key)) {
            if (p.text() == mask_text) return true;  // the loop's mask: as long as the hit mask
            if (!sole_index(p, key)) {
                why = fmt::format("line {}: `{}` picks by the expert's index among other indices", p.position().line,
                                  p.text());
            } else if (container(p.field("value"))) {
                checks.push_back(guarded(p, fmt::format("{}({}, {})", runtime::name::has, p.field("value").text(),
                                                        key.text())));
            }
        } else if (p.is("argument_list") && p.parent().field("function").text() == "getattr" &&
                   p.named_children().size() == 2 && p.named_children()[1] == key) {
            if (container(p.named_children()[0])) {
                checks.push_back(guarded(p, fmt::format("{}({}, {}, True)", runtime::name::has,
                                                        p.named_children()[0].text(), key.text())));
            }
        } else if (!(key == u)) {
            why = fmt::format("line {}: the expert's index is formatted into `{}`, which graphmend does not see pick "
                              "an element",
                              key.position().line, key.text());
        }
        return true;
    });
    if (!why.empty()) {
        d.refused = why;
        return false;
    }
    if (!checks.empty()) {
        std::string body;
        for (const std::string& c : checks) body += c + ", ";
        d.picks = fmt::format("lambda {}: ({})", index, body.substr(0, body.size() - 1));
        d.picks_row = row_reads;
    }
    return true;
}

// The transformers 5.x form: `for row in HIT:` over `HIT = C.nonzero()` (rows of one index
// each), the expert's index taken as `e = row[0]` first in the body or read as `row[0]`, and
// the loop's mask `BASE[..., e, ...]` or `BASE[row].squeeze(0)`. The static form runs over the
// one-element lists `[e]` of every index of C, each gated by `C[e] != 0` as before: `row[0]`
// is then the Python int e where the loop had a 0-d tensor of the same value, and
// `BASE[[e]]` is `BASE[row]`. So the index may only pick (`X[e]`, an element of a module
// container), be formatted (`f"expert_{e}"`, the same digits) or be compared (a `continue`
// test before the pairs), where the two give the same result.
bool rows_hit_header(const Context& ctx, const Node& def, const Node& loop, const Node& mask, ExpertDispatch& d) {
    const Node iterable = loop.field("right");
    if (!iterable.is("identifier") || !loop.field("left").is("identifier")) return false;
    const Node a = rows_hit_assignment(ctx, loop, text(iterable));
    if (!a) return false;
    const Node stmt = a.parent();
    const Node hits = nonzero_rows_of(ctx, a.field("right"));
    const std::string row = text(loop.field("left"));
    const Node body = loop.field("body");
    const auto stmts = statements(body);
    std::string index;
    Node rebind;
    if (const Node r = stmts.empty() ? Node() : assignment_of(stmts[0]);
        r && r.field("left").is("identifier") && first_of(r.field("right"), row)) {
        index = text(r.field("left"));
        rebind = r;
    }
    std::string base;
    int dim = 0;
    Node mask_row;  // `row` in `BASE[row].squeeze(0)`
    if (!index.empty()) {
        std::tie(base, dim) = stacked_mask(mask, index);
    } else if (const Node m = syntax::without_parens(mask); m.is("call") && m.field("function").is("attribute") &&
                                                             m.field("function").field("attribute").text() == "squeeze") {
        const auto args = m.field("arguments").named_children();
        const Node sub = syntax::without_parens(m.field("function").field("object"));
        if (args.size() == 1 && args[0].text() == "0" && sub.is("subscript") && sub.field("value").is("identifier") &&
            sub.named_children().size() == 2 && sub.named_children()[1].is("identifier") &&
            sub.named_children()[1].text() == row) {
            base = text(sub.field("value"));
            mask_row = sub.named_children()[1];
        }
    }
    if (base.empty()) {
        d.refused = fmt::format("the loop runs over the rows of `{}`, and its mask is neither `BASE[..., e, ...]` with "
                                "`e = {}[0]` first nor `BASE[{}].squeeze(0)`",
                                a.field("right").text(), row, row);
        return false;
    }
    // Every read of the row and of the index, and no other assignment of either.
    bool ok = true;
    auto index_use = [&](const Node& u) {
        const Node p = u.parent();
        const bool picks = p.is("subscript") && !(p.field("value") == u);
        const bool tested = p.is("comparison_operator") && p.parent().is("if_statement");
        ok = ok && (picks || p.is("interpolation") || tested);
    };
    syntax::walk(body, [&](const Node& n) {
        if (!ok || n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if ((n.is("assignment") || n.is("augmented_assignment")) && !(n == rebind)) {
            syntax::walk(n.field("left"), [&](const Node& t) {
                ok = ok && !(t.is("identifier") && (t.text() == row || (!index.empty() && t.text() == index)));
                return ok;
            });
        }
        if (!n.is("identifier") || !analysis::is_read(n)) return true;
        const bool after_rebind = rebind && n.begin() >= rebind.end();
        if (n.text() == row && !(index == row && after_rebind)) {
            if (rebind && inside(n, rebind.field("right"))) return true;
            if (mask_row && n == mask_row) return true;
            if (index.empty() && first_of(n.parent(), row)) {
                index_use(n.parent());
                return true;
            }
            ok = false;
        } else if (!index.empty() && n.text() == index && after_rebind) {
            index_use(n);
        }
        return true;
    });
    if (!ok) {
        d.refused = fmt::format("the loop runs over the rows of `{}`, and reads a row other than as `row[0]` or in its "
                                "mask, or an index other than to pick, format or test it (the static form gives a "
                                "list and an int there)",
                                a.field("right").text());
        return false;
    }
    int reads = 0;  // of the list, after its statement
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (n.is("identifier") && n.text() == iterable.text() && analysis::is_read(n) && n.begin() >= stmt.end()) {
            ++reads;
        }
        return true;
    });
    if (reads != 1) return false;
    if (!hit_picks(loop, index.empty() ? row : index, index.empty(), rebind, mask, d)) return false;
    d.hit_list = stmt;
    d.hit_rows = true;
    d.hits_node = hits;
    d.hits = text(hits);
    d.hit_index = index.empty() ? row + "[0]" : index;
    if (!index.empty()) d.loop_var = index;
    d.stacked = base;
    d.dim = dim;
    d.steps = fmt::format("{}.shape[{}]", base, dim);
    return true;
}

}  // namespace

// `for e in HIT` with `HIT = C.nonzero(as_tuple=True)[0].tolist()` just before it (read only
// by the loop), where the loop's mask is `BASE[..., e, ...]`: the static form runs over every
// index of C instead, and gates each expert's pairs with `C[e] != 0`, which is what put e in
// HIT; so it equals the loop for any C. Sets hit_list/hits/stacked/dim/steps.
bool hit_list_header(const Context& ctx, const Node& def, const Node& loop, const Node& mask, ExpertDispatch& d) {
    const Node iterable = loop.field("right");
    const Node prev = previous_statement(loop);
    const Node a = prev ? assignment_of(prev) : Node();
    const Node hits = a && a.field("left").is("identifier") && a.field("left").text() == iterable.text()
                          ? nonzero_list_of(ctx, a.field("right"))
                          : Node();
    if (!hits) return rows_hit_header(ctx, def, loop, mask, d);
    const auto [base, dim] = stacked_mask(mask, d.loop_var);
    if (base.empty()) return false;
    int reads = 0;  // of the list: after its statement (the statement itself may read C by that name)
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (n.is("identifier") && n.text() == iterable.text() && analysis::is_read(n) && n.begin() >= prev.end()) {
            ++reads;
        }
        return true;
    });
    if (reads != 1) return false;
    if (!hit_picks(loop, d.loop_var, false, Node(), mask, d)) return false;
    d.hit_list = prev;
    d.hits = text(hits);
    d.hit_index = d.loop_var;
    d.stacked = base;
    d.dim = dim;
    d.steps = fmt::format("{}.shape[{}]", base, dim);
    return true;
}

}  // namespace graphmend::rules::expert_match
