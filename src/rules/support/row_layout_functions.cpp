// Strict row layout (see row_layout.cpp): views and reshapes of the rows, torch functions
// (elementwise, pad, conv, linear), and project modules and functions, checked in a strict
// RowFlow of their own.
#include <fmt/format.h>

#include <algorithm>

#include "row_layout.hpp"

namespace graphmend::rules {

using namespace layout;
using Layout = RowFlow::Layout;

// `R.view(B, ...)`, `R.view(B * C, ...)`, `R.reshape(...)` with B the row count.
std::optional<Layout> RowFlow::strict_view(const Node& e, const Node& recv, const std::string& m) {
    const auto r = sub(recv);
    if (!r) return std::nullopt;
    const auto args = e.field("arguments").named_children();
    const auto sizes = sizes_of(args);
    if (sizes.empty() || sizes.size() != positional(sizes).size()) {
        fail(e, fmt::format("a {} with no sizes", m));
        return std::nullopt;
    }
    // The first size: the count alone (rows) or a product with one count in it (blocks).
    bool alone = count_expr(sizes[0]);
    int found = alone ? 1 : 0;
    if (!alone) {
        std::vector<Node> todo{syntax::without_parens(sizes[0])};
        bool product = true;
        while (!todo.empty() && product) {
            const Node f = syntax::without_parens(todo.back());
            todo.pop_back();
            if (count_expr(f)) {
                ++found;
            } else if (f.is("binary_operator") && f.field("operator").text() == "*") {
                todo.push_back(f.field("left"));
                todo.push_back(f.field("right"));
            } else if (holds_rows(f)) {
                product = false;
            }
        }
        if (!product) found = 0;
    }
    if (found != 1) {
        fail(e, fmt::format("a {} whose first size is not the row count, alone or times sizes (`{}(-1, ...)` "
                            "keeps the rows apart only when the other sizes hold whole rows)",
                            m, m));
        return std::nullopt;
    }
    for (std::size_t i = 1; i < sizes.size(); ++i) {
        if (holds_rows(sizes[i])) {
            fail(sizes[i], fmt::format("a size of the {} that reads the rows or their count", m));
            return std::nullopt;
        }
    }
    if (m == "view" && r->rows) {
        const Node rv = syntax::without_parens(recv);
        bool fine = (rv.is("identifier") && contiguous.contains(text(rv))) ||
                    (rv.is("call") && rv.field("function").is("attribute") &&
                     rv.field("function").field("attribute").text() == "contiguous" &&
                     rv.field("arguments").named_children().empty());
        if (!fine && alone && rv.is("identifier") && dims.contains(text(rv))) {
            const auto& names = dims.at(text(rv));
            fine = names.size() + 2 == sizes.size();
            for (std::size_t i = 0; fine && i < names.size(); ++i) {
                fine = syntax::without_parens(sizes[i + 2]).is("identifier") && sizes[i + 2].text() == names[i];
            }
        }
        if (!fine) {
            fail(e, "a view of rows not shown contiguous that may merge dimension 0 (on one row it can work where "
                    "on more it fails)");
            return std::nullopt;
        }
    }
    if (!r->rows) return Layout{};
    return Layout{true, !alone, Rank{static_cast<int>(sizes.size()), true}};
}

std::optional<Layout> RowFlow::strict_torch(const Node& e, std::string_view leaf) {
    const auto args = e.field("arguments").named_children();
    const auto pos = positional(args);
    for (const Node& a : args) {
        if (a.is("keyword_argument") && holds_rows(a)) {
            fail(a, "rows passed by keyword");
            return std::nullopt;
        }
    }
    if (is_elementwise_function(leaf) || (leaf == "where" && pos.size() == 3)) return strict_operands(e, pos);
    auto only_first = [&]() -> std::optional<Layout> {
        if (pos.empty()) return Layout{};
        for (std::size_t i = 1; i < pos.size(); ++i) {
            if (holds_rows(pos[i])) {
                fail(pos[i], fmt::format("rows passed to `{}` other than as its input", leaf));
                return std::nullopt;
            }
        }
        return sub(pos[0]);
    };
    const auto in = only_first();
    if (!in || !in->rows) return in;
    if (leaf == "pad") {
        const Node pads = pos.size() > 1 ? syntax::without_parens(pos[1]) : syntax::without_parens(keyword(args, "pad"));
        const Node mode = pos.size() > 2 ? pos[2] : keyword(args, "mode");
        const bool constant = !mode || mode.text() == "\"constant\"" || mode.text() == "'constant'";
        const int padded = (pads.is("tuple") || pads.is("list")) ? static_cast<int>(pads.named_children().size()) : -1;
        if (padded < 0 || padded % 2 != 0 || !constant || !in->rank.known() || padded / 2 >= in->rank.n) {
            fail(e, "a pad not shown to leave dimension 0 alone (a literal tuple of fewer dimensions than the "
                    "rows', in \"constant\" mode)");
            return std::nullopt;
        }
        return in;
    }
    const int n = (leaf.size() == 6 && leaf.starts_with("conv")) ? leaf[4] - '0' : 0;
    if (n >= 1 && n <= 3) {
        if (in->rank.known() && in->rank.n >= n + 2) return Layout{true, in->blocks, Rank{n + 2, true}};
        fail(e, fmt::format("`{}` on rows of a rank not shown batched", leaf));
        return std::nullopt;
    }
    if (leaf == "linear" && in->rank.known() && in->rank.n >= 2) return in;
    fail(e, fmt::format("`torch...{}` is not known to work row by row", leaf));
    return std::nullopt;
}

// A project function or method called with rows: checked in a strict RowFlow of its own.
std::optional<Layout> RowFlow::strict_function(const Node& call, std::size_t file, const Node& fn, bool method) {
    if (depth_ >= 4) {
        fail(call, "the computation on the rows goes more than 4 calls deep");
        return std::nullopt;
    }
    std::vector<Node> params;
    for (const Node& p : fn.field("parameters").named_children()) params.push_back(p);
    if (method && !params.empty()) params.erase(params.begin());
    auto param_name = [](const Node& p) -> std::string {
        if (p.is("identifier")) return text(p);
        if (p.is("typed_parameter")) return text(p.named_children()[0]);
        if (p.is("default_parameter") || p.is("typed_default_parameter")) return text(p.field("name"));
        return "";
    };
    RowFlow inner(ctx_, file, fn, method ? owner_of(fn) : std::string(), depth_ + 1);
    inner.strict = true;
    inner.root = fn.field("body");
    const auto call_args = call.field("arguments").named_children();
    for (std::size_t i = 0; i < call_args.size(); ++i) {
        const bool kw = call_args[i].is("keyword_argument");
        const Node value = kw ? call_args[i].field("value") : call_args[i];
        const auto l = sub(value);
        if (!l) return std::nullopt;
        std::string name = kw ? text(call_args[i].field("name")) : i < params.size() ? param_name(params[i]) : "";
        if (kw && std::none_of(params.begin(), params.end(), [&](const Node& p) { return param_name(p) == name; })) {
            name.clear();  // into **kwargs, which the check does not follow
        }
        if (name.empty()) {
            if (!l->rows) continue;
            fail(call, "rows passed to a parameter graphmend cannot match");
            return std::nullopt;
        }
        const Rank r = l->rows ? l->rank : plain_rank(value);
        if (r.known()) inner.ranks[name] = r;
        if (l->rows) (l->blocks ? inner.blocks : inner.rows).insert(name);
    }
    auto out = inner.block(fn.field("body"));
    if (out && !inner.strict_effects(fn.field("body"))) out = std::nullopt;
    needs_eval = needs_eval || inner.needs_eval;
    if (!out) {
        fail(call, fmt::format("in `{}`: {}", fn.field("name").text(), inner.why()));
        return std::nullopt;
    }
    // What it returns: rows on every path or on none; one kind, one rank if all agree.
    std::optional<Layout> result;
    bool plain = false, differ = false;
    syntax::walk(fn.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (!n.is("return_statement")) return true;
        const auto parts = n.named_children();
        if (parts.empty() || !inner.node_ranks_.contains({syntax::without_parens(parts[0]).begin(), syntax::without_parens(parts[0]).end()})) {
            plain = true;
            return false;
        }
        const Layout l{true, inner.is_blocks(parts[0]), inner.rank_of(parts[0])};
        if (!result) {
            result = l;
        } else if (result->blocks != l.blocks) {
            differ = true;
        } else if (!(result->rank.exact && l.rank.exact && result->rank.n == l.rank.n)) {
            result->rank = Rank{};
        }
        return false;
    });
    if (result && (plain || differ)) {
        fail(call, fmt::format("`{}` returns rows on some paths only, or rows and blocks of rows",
                               fn.field("name").text()));
        return std::nullopt;
    }
    return result ? *result : Layout{};
}

}  // namespace graphmend::rules
