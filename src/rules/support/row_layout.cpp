// Strict row layout: the row-wise check of rowwise.cpp made exact for the row-subset rule
// (GM502). There the rows an index list picks, `X[I, ...]`, go through per-row code and
// are written back; the static form sends every row through the same code, so each
// expression must keep row r of its result a function of row r of its inputs alone, with
// the rows in dimension 0, whatever their count. Known here (rank: number of dimensions):
//   - a gather `X[I, ...]` (I first; then slices, integer literals, `...`): rows of X's rank;
//   - `R[:, ...]` (then slices, integer literals, None, `...`);
//   - elementwise methods and functions, arithmetic and comparisons, where the operands that
//     hold rows have one exact rank and every other operand is a Python number or has a rank
//     no higher (broadcasting then never lines dimension 0 up with another dimension);
//   - `B, C, H, W = R.shape` / `R.size()`, `R.shape[k]`, `R.size(k)`: B (dimension 0) is the
//     row count; it may only be the first size of a view or reshape, alone (`R.view(B, ...)`:
//     rows) or in a product (`R.view(B * C, ...)`: blocks, C entries of dimension 0 per row,
//     in row order). The other sizes are the same for every row;
//   - a `view` of a local assigned from `.contiguous()`, or one that only splits dimension 0
//     (its sizes after the second are the names unpacked from the receiver's shape[1:]): a
//     view that merges dimension 0 of a strided tensor may work on one row and fail on more;
//     `reshape` always;
//   - permute with 0 first, transpose of two dimensions but 0, flatten(s) / unsqueeze(d) with
//     s, d >= 1, F.pad of fewer dimensions than the rank in "constant" mode;
//   - torch.nn modules reached through `self`: activations, Identity, Dropout (eval mode),
//     Linear (rank >= 2), Conv1d/2d/3d on batched input (rank >= 3/4/5; each sample alone),
//     BatchNorm1d/2d/3d (eval mode with running statistics: the runtime checks both),
//     AdaptiveAvgPool / AvgPool (each plane alone), nn.Sequential of these;
//   - project modules and functions whose body does only the above, on one path (rows
//     assigned under an `if` are refused).
#include <fmt/format.h>

#include <algorithm>

#include "row_layout.hpp"

namespace graphmend::rules {

using namespace layout;
using Layout = RowFlow::Layout;

namespace {

std::pair<std::uint32_t, std::uint32_t> key(const Node& n) {
    const Node u = syntax::without_parens(n);
    return {u.begin(), u.end()};
}

}  // namespace

Rank RowFlow::rank_of(const Node& e) const {
    const auto it = node_ranks_.find(key(e));
    return it == node_ranks_.end() ? Rank{} : it->second;
}

bool RowFlow::is_blocks(const Node& e) const { return node_blocks_.contains(key(e)); }

std::optional<bool> RowFlow::note(const Node& e, const Layout& l) {
    if (!l.rows) return false;
    node_ranks_[key(e)] = l.rank;
    if (l.blocks) node_blocks_.insert(key(e));
    return true;
}

std::optional<Layout> RowFlow::sub(const Node& e) {
    const auto r = expr(e);
    if (!r) return std::nullopt;
    if (!*r) return Layout{};
    return Layout{true, is_blocks(e), rank_of(e)};
}

std::optional<bool> RowFlow::strict_expr(const Node& e) {
    const auto l = layout(e);
    if (!l) return std::nullopt;
    return note(e, *l);
}

std::optional<Layout> RowFlow::layout(const Node& e) {
    const std::string name = e.is("identifier") ? text(e) : "";
    if (e.is("identifier")) {
        if (rows.contains(name) || blocks.contains(name)) {
            const auto it = ranks.find(name);
            return Layout{true, blocks.contains(name), it == ranks.end() ? Rank{} : it->second};
        }
        if (counts.contains(name)) {
            fail(e, fmt::format("the row count `{}` is used other than as the first size of a view or reshape "
                                "(it differs in the static form)",
                                name));
        } else if (block_counts.contains(name)) {
            fail(e, fmt::format("`{}` holds dimension 0 of blocks of rows (the row count times a size)", name));
        } else {
            fail(e, fmt::format("`{}` holds the index outside a gather `X[{}, ...]`", name, name));
        }
        return std::nullopt;
    }
    if (e.is("subscript")) return strict_subscript(e);
    if (e.is("attribute")) {
        const std::string attr = text(e.field("attribute"));
        if (!expr(e.field("object"))) return std::nullopt;
        if (attr == "dtype" || attr == "device" || attr == "ndim" || attr == "is_cuda") return Layout{};
        fail(e, fmt::format("`.{}` of the rows (only unpacked, or read one size at a time)", attr));
        return std::nullopt;
    }
    if (e.is("binary_operator")) {
        if (e.field("operator").text() == "@") {
            fail(e, "a matrix product on the rows (its ranks are not checked)");
            return std::nullopt;
        }
        return strict_operands(e, {e.field("left"), e.field("right")});
    }
    if (e.is("comparison_operator")) {
        for (const Node& op : e.children()) {
            if (!op.named() && (op.is("is") || op.is("in") || op.is("not") || op.is("is not") || op.is("not in"))) {
                fail(e, "an identity or membership test on the rows");
                return std::nullopt;
            }
        }
        return strict_operands(e, e.named_children());
    }
    if (e.is("unary_operator")) {
        const auto l = sub(e.field("argument"));
        if (!l) return std::nullopt;
        return *l;
    }
    if (e.is("conditional_expression")) {
        const auto parts = e.named_children();
        if (parts.size() != 3 || holds_rows(parts[1])) {
            fail(e, "a conditional expression that tests the rows");
            return std::nullopt;
        }
        const auto a = sub(parts[0]);
        const auto b = sub(parts[2]);
        if (!a || !b) return std::nullopt;
        if (a->rows != b->rows || a->blocks != b->blocks) {
            fail(e, "a conditional expression that holds rows on one side only");
            return std::nullopt;
        }
        const bool same = a->rank.exact && b->rank.exact && a->rank.n == b->rank.n;
        return Layout{true, a->blocks, same ? a->rank : Rank{}};
    }
    if (e.is("call")) {
        row_calls_.insert(key(e));
        return strict_call(e);
    }
    fail(e, fmt::format("`{}` on the rows", e.type()));
    return std::nullopt;
}

// Broadcasting: operands holding rows share one exact rank (or there is one of them), the
// others are Python numbers or have a rank no higher than the rows'.
std::optional<Layout> RowFlow::strict_operands(const Node& e, const std::vector<Node>& operands) {
    std::vector<std::pair<Node, Layout>> seen;
    for (const Node& op : operands) {
        const auto l = sub(op);
        if (!l) return std::nullopt;
        seen.emplace_back(op, *l);
    }
    std::optional<Layout> row;
    for (const auto& [op, l] : seen) {
        if (!l.rows) continue;
        if (!row) {
            row = l;
            continue;
        }
        if (l.blocks || row->blocks) {
            fail(e, "blocks of rows combined with other rows (their sizes in dimension 0 may differ)");
            return std::nullopt;
        }
        if (!l.rank.exact || !row->rank.exact || l.rank.n != row->rank.n) {
            fail(e, "operands of rows whose ranks cannot be shown equal: broadcasting could line the rows up "
                    "with another dimension");
            return std::nullopt;
        }
    }
    if (!row) return Layout{};
    for (const auto& [op, l] : seen) {
        if (l.rows) continue;
        if (ctx_.values.eval(file_, op).only(analysis::kNumber | analysis::kBool)) continue;
        const Rank r = plain_rank(op);
        if (!r.exact || !row->rank.known() || r.n > row->rank.n) {
            fail(op, fmt::format("`{}` may have more dimensions than the rows: broadcasting could move them out "
                                 "of dimension 0",
                                 op.text()));
            return std::nullopt;
        }
    }
    return row;
}

std::optional<Layout> RowFlow::strict_subscript(const Node& e) {
    const Node value = e.field("value");
    std::vector<Node> parts;
    for (const Node& i : e.named_children()) {
        if (!(i == value) && !i.is("comment")) parts.push_back(i);
    }
    if (parts.size() == 1 && syntax::without_parens(parts[0]).is("tuple")) parts = syntax::without_parens(parts[0]).named_children();
    // `R.shape[k]`: a size of the rows.
    if (value.is("attribute") && value.field("attribute").text() == "shape" && holds_rows(value.field("object"))) {
        const auto obj = sub(value.field("object"));
        if (!obj) return std::nullopt;
        const auto k = parts.size() == 1 ? int_literal(parts[0]) : std::nullopt;
        const auto d = k ? resolve_dim(*k, obj->rank) : std::nullopt;
        if (d && *d >= 1) return Layout{};
        fail(e, "dimension 0 of the rows (their count) read outside a view's first size");
        return std::nullopt;
    }
    auto basic = [&](const Node& p, bool allow_none) {
        const Node q = syntax::without_parens(p);
        if (holds_rows(q)) return false;
        return q.is("slice") || q.is("ellipsis") || int_literal(q).has_value() || (allow_none && q.is("none"));
    };
    int ints = 0, nones = 0;
    for (std::size_t i = 1; i < parts.size(); ++i) {
        ints += int_literal(parts[i]).has_value() ? 1 : 0;
        nones += syntax::without_parens(parts[i]).is("none") ? 1 : 0;
    }
    if (!holds_rows(value)) {  // a gather
        const Node first = parts.empty() ? Node() : syntax::without_parens(parts[0]);
        if (!first || !first.is("identifier") || !index.contains(text(first))) {
            fail(e, "an index that picks rows other than first, as in `X[I, ...]`");
            return std::nullopt;
        }
        for (std::size_t i = 1; i < parts.size(); ++i) {
            if (!basic(parts[i], false)) {
                fail(parts[i], "an index beside the rows' that is not a slice, an integer or `...`");
                return std::nullopt;
            }
        }
        const Rank source = plain_rank(value);
        bool ellipsis = false;
        for (const Node& p : parts) ellipsis = ellipsis || syntax::without_parens(p).is("ellipsis");
        Rank r = source.exact ? exact(source.n - ints)
                              : Rank{std::max<int>(source.n, static_cast<int>(parts.size()) - (ellipsis ? 1 : 0)) - ints,
                                     false};
        gathers.push_back(e);
        return Layout{true, false, r};
    }
    const auto v = sub(value);
    if (!v) return std::nullopt;
    const Node first = parts.empty() ? Node() : syntax::without_parens(parts[0]);
    if (!first || !first.is("slice") || !first.named_children().empty()) {
        fail(e, "an index that does not keep every row (`R[:, ...]`)");
        return std::nullopt;
    }
    for (std::size_t i = 1; i < parts.size(); ++i) {
        if (!basic(parts[i], true)) {
            fail(parts[i], "an index of the rows that is not a slice, an integer, None or `...`");
            return std::nullopt;
        }
    }
    const Rank r = v->rank.known() ? Rank{v->rank.n - ints + nones, v->rank.exact} : Rank{};
    return Layout{true, v->blocks, r};
}

}  // namespace graphmend::rules
