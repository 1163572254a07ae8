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
//     may transformers 5.x's loop over the rows of `C.nonzero()` (rows_hit_header below).
// index_add_ adds each row's contributions in the order of the pairs, which the static form
// keeps (torch.where lists pairs in row-major order, as does the static form).
#include "expert_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "graphmend/liveness.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/rowwise.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {


// The statements of a block, without comments.
std::vector<Node> statements(const Node& block) {
    std::vector<Node> out;
    for (const Node& s : block.named_children()) {
        if (!s.is("comment")) out.push_back(s);
    }
    return out;
}

// The first line of a statement's text.
std::string head_line(const Node& s) {
    const std::string_view t = s.text();
    return std::string(t.substr(0, t.find('\n')));
}

// `A, B = CALL`: the assignment, when the statement is one.
Node assignment_of(const Node& stmt) {
    if (!stmt.is("expression_statement")) return {};
    const auto parts = stmt.named_children();
    return parts.size() == 1 && parts[0].is("assignment") ? parts[0] : Node();
}

// The mask of `torch.where(M)`, `torch.nonzero(M, as_tuple=True)` or `M.nonzero(as_tuple=True)`.
Node pairs_mask(const Context& ctx, const Node& call) {
    if (!call.is("call")) return {};
    const Node fn = call.field("function");
    const auto args = call.field("arguments").named_children();
    auto as_tuple = [&](const Node& a) {
        return a.is("keyword_argument") && a.field("name").text() == "as_tuple" && a.field("value").text() == "True";
    };
    const std::string ext = ctx.project.external_name(ctx.file, fn);
    if (ext == "torch.where" && args.size() == 1 && !args[0].is("keyword_argument")) return args[0];
    if (ext == "torch.nonzero" && args.size() == 2 && as_tuple(args[1])) return args[0];
    if (fn.is("attribute") && fn.field("attribute").text() == "nonzero" && args.size() == 1 && as_tuple(args[0]) &&
        ext.empty()) {
        return fn.field("object");
    }
    return {};
}

// `I.shape[0]`, `I.size(0)`, `I.numel()`, `len(I)` with I an index name: that name.
std::string size_of_index(const Node& e, const std::set<std::string>& index) {
    const Node n = syntax::without_parens(e);
    if (n.is("subscript") && n.field("value").is("attribute") && n.field("value").field("attribute").text() == "shape" &&
        n.field("subscript").text() == "0") {
        const Node obj = n.field("value").field("object");
        return index.contains(text(obj)) ? text(obj) : "";
    }
    if (n.is("call")) {
        const Node fn = n.field("function");
        const auto args = n.field("arguments").named_children();
        if (fn.is("identifier") && fn.text() == "len" && args.size() == 1 && index.contains(text(args[0]))) {
            return text(args[0]);
        }
        if (fn.is("attribute") && index.contains(text(fn.field("object"))) &&
            ((fn.field("attribute").text() == "numel" && args.empty()) ||
             (fn.field("attribute").text() == "size" && args.size() == 1 && args[0].text() == "0"))) {
            return text(fn.field("object"));
        }
    }
    return "";
}

enum class Emptiness { None, Empty, NonEmpty };

// `SIZE == 0` / `not SIZE` (Empty), `SIZE > 0` / `SIZE != 0` / `SIZE` (NonEmpty).
Emptiness emptiness_test(const Node& test, const std::set<std::string>& index) {
    const Node t = syntax::without_parens(test);
    if (!size_of_index(t, index).empty()) return Emptiness::NonEmpty;
    if (t.is("not_operator") && !size_of_index(t.field("argument"), index).empty()) return Emptiness::Empty;
    if (t.is("comparison_operator")) {
        const auto parts = t.named_children();
        const auto ops = t.children();
        if (parts.size() != 2 || parts[1].text() != "0" || size_of_index(parts[0], index).empty()) {
            return Emptiness::None;
        }
        for (const Node& o : ops) {
            if (o.named()) continue;
            if (o.is("==")) return Emptiness::Empty;
            if (o.is(">") || o.is("!=")) return Emptiness::NonEmpty;
        }
    }
    return Emptiness::None;
}

class Matcher {
public:
    Matcher(const Context& ctx, const Node& def, ExpertDispatch& d)
        : ctx_(ctx), def_(def), d_(d), flow_(ctx, ctx.file, def, owner_of(def)) {}

    // Checks the statements after the pairs statement; false with d_.refused set.
    bool body_after(const std::vector<Node>& stmts, std::size_t from) {
        for (std::size_t i = from; i < stmts.size(); ++i) {
            const Node& s = stmts[i];
            if (s.is("pass_statement")) continue;
            if (s.is("if_statement")) {
                if (!guard(s)) return false;
                continue;
            }
            if (const Node a = assignment_of(s)) {
                const Node left = a.field("left");
                if (left.is("identifier") && flow_.masks.contains(text(left))) continue;  // the mask itself
                if (left.is("subscript") && flow_.mask_position(left) >= 0) {
                    if (!put(a)) return false;
                    continue;
                }
                const Node right = syntax::without_parens(a.field("right"));
                if (a.field("left").is("identifier") && right.is("identifier") && flow_.index.contains(text(right))) {
                    flow_.index.insert(text(a.field("left")));
                    assigned_.insert(text(a.field("left")));
                    continue;
                }
                if (!flow_.assignment(a)) return refuse(flow_.why());
                if (a.field("left").is("identifier")) assigned_.insert(text(a.field("left")));
                for (const Node& t : a.field("left").named_children()) {  // `gate, up = ...chunk(2, dim=-1)`
                    if (t.is("identifier")) assigned_.insert(text(t));
                }
                continue;
            }
            if (s.is("expression_statement") && s.named_children().size() == 1 &&
                s.named_children()[0].is("augmented_assignment")) {
                const Node a = s.named_children()[0];
                if (!flow_.assignment(a)) return refuse(flow_.why());
                if (a.field("left").is("identifier")) assigned_.insert(text(a.field("left")));
                continue;
            }
            if (s.is("expression_statement") && s.named_children().size() == 1 && scatter(s.named_children()[0])) {
                continue;
            }
            if (!d_.refused.empty()) return false;
            return refuse(fmt::format("line {}: `{}` would run for every candidate pair, not only the mask's",
                                      s.position().line, first_line(s)));
        }
        return true;
    }

    bool refuse(std::string why) {
        if (d_.refused.empty()) d_.refused = std::move(why);
        return false;
    }

    [[nodiscard]] const std::set<std::string>& assigned() const { return assigned_; }
    RowFlow& flow() { return flow_; }

private:
    static std::string first_line(const Node& s) {
        const std::string_view t = s.text();
        return std::string(t.substr(0, t.find('\n')));
    }

    // `if SIZE == 0: continue` or `if SIZE > 0: <the rest>`; or an `if` whose tests read no
    // rows (`if self.training:`), each branch checked as the rest of the body.
    bool guard(const Node& s) {
        const Emptiness e = emptiness_test(s.field("condition"), flow_.index);
        if (e == Emptiness::None && !flow_.reads_row_values(s.field("condition"))) {
            std::vector<Node> blocks{s.field("consequence")};
            for (const Node& c : s.named_children()) {
                if (c.is("elif_clause")) {
                    if (flow_.reads_row_values(c.field("condition"))) {
                        return refuse(fmt::format("line {}: an `elif` that tests the rows", c.position().line));
                    }
                    blocks.push_back(c.field("consequence"));
                } else if (c.is("else_clause")) {
                    blocks.push_back(c.field("body"));
                }
            }
            const std::set<std::string> rows_before = flow_.rows;
            std::set<std::string> rows_after;
            for (const Node& b : blocks) {
                flow_.rows = rows_before;
                if (!body_after(statements(b), 0)) return false;
                rows_after.insert(flow_.rows.begin(), flow_.rows.end());
            }
            flow_.rows = rows_after;
            return true;
        }
        for (const Node& c : s.named_children()) {
            if (c.is("elif_clause") || c.is("else_clause")) return refuse("an `if` with elif/else tests the pairs");
        }
        const auto body = statements(s.field("consequence"));
        if (e == Emptiness::Empty && body.size() == 1 && body[0].is("continue_statement")) return true;
        if (e == Emptiness::NonEmpty) return body_after(body, 0);
        if (flow_.holds_rows(s.field("condition"))) {
            return refuse(fmt::format("line {}: an `if` that tests the pairs for more than being empty",
                                      s.position().line));
        }
        return refuse(fmt::format("line {}: an `if` inside the dispatch", s.position().line));
    }

    // `Y[..., M, ...] = V`: a write of the rows the mask picks.
    bool put(const Node& a) {
        const Node left = a.field("left");
        if (flow_.holds_rows(left.field("value"))) {
            return refuse(fmt::format("line {}: a write into rows", a.position().line));
        }
        if (!flow_.expr(a.field("right"))) return refuse(flow_.why());
        d_.puts.emplace_back(a, flow_.mask_position(left));
        return true;
    }

    // `Y.index_add_(0, I, SRC)`.
    bool scatter(const Node& call) {
        if (!call.is("call") || !call.field("function").is("attribute") ||
            call.field("function").field("attribute").text() != "index_add_") {
            return false;
        }
        const auto args = call.field("arguments").named_children();
        if (args.size() < 3 || args[0].text() != "0" || !flow_.index.contains(text(args[1])) ||
            args[2].is("keyword_argument")) {
            return refuse(fmt::format("line {}: an index_add_ that is not `Y.index_add_(0, INDEX, SOURCE)`",
                                      call.position().line));
        }
        if (flow_.holds_rows(call.field("function").field("object"))) {
            return refuse(fmt::format("line {}: index_add_ into rows", call.position().line));
        }
        if (d_.scatter) return refuse(fmt::format("line {}: a second index_add_", call.position().line));
        const auto src = flow_.expr(args[2]);
        if (!src) return refuse(flow_.why());
        for (std::size_t i = 3; i < args.size(); ++i) {
            if (flow_.holds_rows(args[i])) return refuse("index_add_'s alpha computed from the rows");
        }
        d_.scatter = call;
        d_.source = args[2];
        return true;
    }

    const Context& ctx_;
    Node def_;
    ExpertDispatch& d_;
    RowFlow flow_;
    std::set<std::string> assigned_;
};

// True when `node` lies inside `outer`.
bool inside(const Node& node, const Node& outer) { return outer.begin() <= node.begin() && node.end() <= outer.end(); }

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

// True when `n` holds a call.
bool has_call(const Node& n) {
    bool found = false;
    syntax::walk(n, [&](const Node& x) {
        found = found || x.is("call");
        return !found;
    });
    return found;
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

// `BASE[:, ..., e, :, ...]` or `BASE[..., e]`: BASE's name and the dimension e indexes (-1 for
// the last), or {"", 0}.
std::pair<std::string, int> stacked_mask(const Node& mask, const std::string& loop_var) {
    const Node m = syntax::without_parens(mask);
    if (!m.is("subscript") || !m.field("value").is("identifier") || loop_var.empty()) return {"", 0};
    std::vector<Node> parts;
    for (const Node& i : m.named_children()) {
        if (!(i == m.field("value")) && !i.is("comment")) parts.push_back(i);
    }
    auto colon = [](const Node& n) { return n.is("slice") && n.named_children().empty(); };
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (!(parts[i].is("identifier") && parts[i].text() == loop_var)) continue;
        bool before = true, after = true;
        for (std::size_t k = 0; k < i; ++k) before = before && colon(parts[k]);
        for (std::size_t k = i + 1; k < parts.size(); ++k) after = after && colon(parts[k]);
        if (before && after) return {text(m.field("value")), static_cast<int>(i)};
        if (i == parts.size() - 1 && i == 1 && parts[0].is("ellipsis")) return {text(m.field("value")), -1};
        return {"", 0};
    }
    return {"", 0};
}

// `for e in HIT` with `HIT = C.nonzero(as_tuple=True)[0].tolist()` just before it (read only
// by the loop), where the loop's mask is `BASE[..., e, ...]`: the static form runs over every
// index of C instead, and gates each expert's pairs with `C[e] != 0`, which is what put e in
// HIT; so it equals the loop for any C. Sets hit_list/hits/stacked/dim/steps.
bool rows_hit_header(const Context& ctx, const Node& def, const Node& loop, const Node& mask, ExpertDispatch& d);
bool hit_picks(const Node& loop, const std::string& index, bool row_reads, const Node& rebind, const Node& mask,
               ExpertDispatch& d);
bool first_of(const Node& e, const std::string& row);

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

// `row[0]`: true when `e` is that subscript of the name `row`.
bool first_of(const Node& e, const std::string& row) {
    const Node n = syntax::without_parens(e);
    if (!n.is("subscript") || !n.field("value").is("identifier") || n.field("value").text() != row) return false;
    const auto parts = n.named_children();
    return parts.size() == 2 && parts[1].is("integer") && parts[1].text() == "0";
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

// The last assignment of `name` in `def` before `loop`, in a block around the loop, or invalid.
Node value_before(const Node& def, const Node& loop, const std::string& name) {
    Node found;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (n.begin() >= loop.begin()) return false;
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("assignment") && n.field("left").is("identifier") && n.field("left").text() == name &&
            n.field("right")) {
            Node block = n.parent();
            while (block && !block.is("block")) block = block.parent();
            if (block && inside(loop, block)) found = n.field("right");
        }
        return true;
    });
    return found;
}

// True when `name` holds a boolean tensor when `loop` starts: `X.bool()`, a comparison, or
// `~` / `&` / `|` of such.
bool boolean_before(const Node& def, const Node& loop, const std::string& name) {
    Node v = syntax::without_parens(value_before(def, loop, name));
    if (!v) return false;
    if (v.is("comparison_operator")) return true;
    if (v.is("call") && v.field("function").is("attribute") && v.field("function").field("attribute").text() == "bool" &&
        v.field("arguments").named_children().empty()) {
        return true;
    }
    return v.is("unary_operator") && v.field("operator").text() == "~";
}

// The masks of a loop without pairs: `M = BASE[..., e, ...]` at the top of its body, and
// `BASE[..., e, ...]` written inline as an index of an assignment's target, with BASE a
// boolean tensor. Fills `masks` with their texts; returns the first one's expression.
Node boolean_masks(const Node& def, const Node& loop, const std::string& loop_var, std::set<std::string>& masks) {
    Node first;
    auto is_mask = [&](const Node& e) {
        const auto [base, dim] = stacked_mask(e, loop_var);
        (void)dim;
        return !base.empty() && boolean_before(def, loop, base);
    };
    for (const Node& s : statements(loop.field("body"))) {
        const Node a = assignment_of(s);
        if (a && a.field("left").is("identifier") && is_mask(a.field("right"))) {
            masks.insert(text(a.field("left")));
            if (!first) first = a.field("right");
        }
    }
    syntax::walk(loop.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("lambda")) return false;
        if (n.is("assignment") && n.field("left").is("subscript")) {
            for (const Node& part : n.field("left").named_children()) {
                if (part == n.field("left").field("value")) continue;
                if (is_mask(part)) {
                    masks.insert(text(part));
                    if (!first) first = part;
                }
            }
        }
        return true;
    });
    return first;
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

}  // namespace

std::optional<ExpertDispatch> match_expert_dispatch(const Context& ctx, const Node& def, const Node& loop) {
    if (!loop.is("for_statement")) return std::nullopt;
    const auto stmts = statements(loop.field("body"));
    ExpertDispatch d;
    d.loop = loop;
    d.loop_var = loop_index(loop);
    std::size_t at = 0;  // the first statement checked as part of the dispatch
    std::string pairs_under;  // the `with` the pairs are taken under, if any
    for (std::size_t i = 0; i < stmts.size(); ++i) {
        Node a = assignment_of(stmts[i]);
        if (stmts[i].is("with_statement")) {  // `with torch.no_grad(): idx, top_x = torch.where(M)` (DBRX)
            const auto inner = statements(stmts[i].field("body"));
            a = inner.size() == 1 ? assignment_of(inner[0]) : Node();
            pairs_under = a ? head_line(stmts[i]) : "";
        } else {
            pairs_under.clear();
        }
        if (!a || !(a.field("left").is("pattern_list") || a.field("left").is("tuple_pattern"))) continue;
        if (const Node mask = pairs_mask(ctx, syntax::without_parens(a.field("right")))) {
            d.pairs = stmts[i];
            d.pairs_call = syntax::without_parens(a.field("right"));
            d.mask = mask;
            d.anchor = d.pairs_call;
            at = i + 1;
            break;
        }
    }
    Matcher m(ctx, def, d);
    m.flow().loop_var = d.loop_var;
    if (d.pairs && !pairs_under.empty()) {
        m.refuse(fmt::format("the pairs are taken under `{}`: the choice of the static form there would not see the "
                             "grad mode of the computation on the rows",
                             pairs_under));
        return d;
    }
    if (const Node right = loop.field("right"); right.is("call") && right.field("function").text() == "enumerate" &&
                                               right.field("arguments").named_children().size() == 1) {
        const auto names = loop.field("left").named_children();
        if (names.size() == 2 && names[1].is("identifier")) {
            m.flow().elements.emplace(text(names[1]), right.field("arguments").named_children()[0]);
        }
    }
    Node loop_mask = d.mask;
    if (d.pairs) {
        for (const Node& t : d.pairs.named_children()[0].field("left").named_children()) {
            if (!t.is("identifier")) {
                m.refuse("the pairs are not unpacked into plain names");
                return d;
            }
            m.flow().index.insert(text(t));
        }
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
    // The trip count: `range(...)`, a container of modules, or the experts a mask hits.
    const Node iterable = loop.field("right");
    bool hit = false;
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
        return d;
    }
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
            return d;
        }
    }
    if (!m.body_after(stmts, at)) return d;
    d.gathers = m.flow().mask_gathers;
    d.needs_eval = m.flow().needs_eval;
    if (d.pairs && !d.scatter) {
        m.refuse("no `Y.index_add_(0, INDEX, SOURCE)` takes the results back");
        return d;
    }
    if (!d.pairs && d.puts.empty()) {
        m.refuse("no `Y[..., MASK, ...] = VALUE` takes the results back");
        return d;
    }
    if (d.needs_eval && owner_of(def).empty()) {
        m.refuse("a Dropout in the computation, outside a module method whose eval mode could be checked");
        return d;
    }
    if (hit) {
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
        if (!d.refused.empty()) return d;
    }
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
    if (const Node read = read_outside(def, loop, inner)) {
        m.refuse(fmt::format("line {}: `{}` is read after the loop, where the static form leaves other values",
                             read.position().line, read.text()));
        return d;
    }
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
    return d;
}

}  // namespace graphmend::rules
