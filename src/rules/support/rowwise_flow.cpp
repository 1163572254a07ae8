// RowFlow on expressions: which hold rows, which compute row by row (see rowwise.cpp for what
// is row-wise, rowwise_calls.cpp for calls and statements).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"
#include "rowwise_internal.hpp"
#include "site.hpp"

namespace graphmend::rules {

using syntax::Node;
using namespace rowwise_detail;

RowFlow::RowFlow(const Context& ctx, std::size_t file, Node def, std::string owner, int depth)
    : ctx_(ctx), file_(file), def_(def), owner_(std::move(owner)), depth_(depth) {}

bool RowFlow::fail(const Node& at, std::string why) {
    if (why_.empty()) why_ = fmt::format("line {}: {}", at.position().line, std::move(why));
    return false;
}

bool RowFlow::holds_rows(const Node& e) const {
    bool found = false;
    syntax::walk(e, [&](const Node& n) {
        if (found || n.is("lambda")) return false;
        if (n.is("subscript") && (mask_position(n) >= 0 || row_nodes.contains({n.begin(), n.end()}))) {
            found = true;
            return false;
        }
        if (n.is("identifier") && (rows.contains(std::string(n.text())) || index.contains(std::string(n.text())) ||
                                   masks.contains(std::string(n.text())) || row_lists.contains(std::string(n.text())) ||
                                   counts.contains(std::string(n.text())) ||
                                   blocks.contains(std::string(n.text())) ||
                                   block_counts.contains(std::string(n.text())))) {
            const Node p = n.parent();
            if (!(p.is("attribute") && p.field("attribute") == n) && !(p.is("keyword_argument") && p.field("name") == n)) {
                found = true;
            }
        }
        return !found;
    });
    return found;
}

std::optional<bool> RowFlow::expr(const Node& expr_node) {
    const Node e = syntax::without_parens(expr_node);
    if (!e) return false;
    if (!holds_rows(e)) {
        // It holds no rows, but the static form may run it for experts or rows the loop
        // skipped: it must have no effect and draw no random numbers.
        if (!strict && !pure(e)) return std::nullopt;
        return false;
    }
    if (strict) return strict_expr(e);  // row_layout.cpp
    if (row_nodes.contains({e.begin(), e.end()})) return true;  // a slice the static form reads whole
    if (e.is("subscript") && e.field("value").is("identifier") && row_lists.contains(text(e.field("value"))) &&
        e.named_children().size() == 2 && !loop_var.empty() && e.field("subscript").text() == loop_var) {
        return true;  // the loop's slice of the rows
    }
    if (e.is("subscript") && mask_position(e) >= 0 && !holds_rows(e.field("value"))) {
        mask_gathers.emplace_back(e, mask_position(e));
        return true;
    }
    if (e.is("identifier")) {
        if (rows.contains(text(e))) return true;
        fail(e, fmt::format("`{}` holds the dispatch's indices outside a gather", e.text()));
        return std::nullopt;
    }
    if (e.is("binary_operator")) {
        const auto l = expr(e.field("left"));
        const auto r = expr(e.field("right"));
        if (!l || !r) return std::nullopt;
        if (e.field("operator").text() == "@" && *r) {
            fail(e, "a matrix product over the rows");
            return std::nullopt;
        }
        return *l || *r;
    }
    if (e.is("unary_operator")) return expr(e.field("argument"));
    if (e.is("comparison_operator")) {
        for (const Node& c : e.named_children()) {
            if (!expr(c)) return std::nullopt;
        }
        return true;
    }
    if (e.is("conditional_expression")) {
        const auto parts = e.named_children();
        if (parts.size() != 3 || holds_rows(parts[1])) {
            fail(e, "a conditional expression that tests the rows");
            return std::nullopt;
        }
        const auto a = expr(parts[0]);
        const auto b = expr(parts[2]);
        if (!a || !b) return std::nullopt;
        return *a || *b;
    }
    if (e.is("attribute")) {
        const std::string attr = text(e.field("attribute"));
        if (!expr(e.field("object"))) return std::nullopt;
        if (attr == "dtype" || attr == "device" || attr == "ndim" || attr == "is_cuda") return false;
        fail(e, fmt::format("`.{}` of the rows (their count differs in the static form)", attr));
        return std::nullopt;
    }
    if (e.is("subscript")) return subscript(e);
    if (e.is("call")) return call(e);
    fail(e, fmt::format("`{}` on the rows", e.type()));
    return std::nullopt;
}

std::optional<bool> RowFlow::subscript(const Node& e) {
    const Node value = e.field("value");
    std::vector<Node> parts;  // each index of `value[a, b]` is a `subscript` field of its own
    for (const Node& i : e.named_children()) {
        if (!(i == value) && !i.is("comment")) parts.push_back(i);
    }
    if (parts.size() == 1 && syntax::without_parens(parts[0]).is("tuple")) parts = syntax::without_parens(parts[0]).named_children();
    const auto v = expr(value);
    if (!v) return std::nullopt;
    if (*v) {  // rows sliced: the first index keeps every row
        if (parts.empty() || (!(parts[0].is("slice") && parts[0].named_children().empty()) && !parts[0].is("ellipsis"))) {
            fail(e, "an index that picks rows out of the rows");
            return std::nullopt;
        }
        for (const Node& p : parts) {
            if (holds_rows(p)) {
                fail(p, "an index computed from the rows");
                return std::nullopt;
            }
        }
        return true;
    }
    // A gather: `X[I]`, `X[None, I]`, `X[I, J, None]`: the first index that is not None is one
    // of the dispatch's, so the rows come first (after the Nones).
    bool gathered = false;
    bool before_rows = true;
    for (const Node& p : parts) {
        const Node q = syntax::without_parens(p);
        if (q.is("identifier") && index.contains(text(q))) {
            gathered = true;
            before_rows = false;
            continue;
        }
        if (before_rows && !q.is("none")) {
            fail(q, "an index before the dispatch's indices: the rows would not come first");
            return std::nullopt;
        }
        if (q.is("none") || (q.is("slice") && q.named_children().empty()) || q.is("ellipsis")) continue;
        if (holds_rows(q)) {
            fail(q, "an index that is neither the dispatch's indices nor a constant");
            return std::nullopt;
        }
    }
    if (!gathered) {
        fail(e, "an index that is neither the dispatch's indices nor a constant");
        return std::nullopt;
    }
    return true;
}

bool RowFlow::reads_row_values(const Node& e) const {
    bool found = false;
    syntax::walk(e, [&](const Node& n) {
        if (found || n.is("lambda")) return false;
        if (n.is("attribute")) {
            const std::string_view attr = n.field("attribute").text();
            if (attr == "dtype" || attr == "device" || attr == "ndim" || attr == "is_cuda") return false;
        }
        if ((n.is("identifier") || n.is("subscript")) && holds_rows(n)) {
            const Node p = n.parent();
            if (!(p.is("attribute") && p.field("attribute") == n)) found = true;
        }
        return !found;
    });
    return found;
}

bool RowFlow::pure(const Node& e) {
    bool ok = true;
    syntax::walk(e, [&](const Node& n) {
        if (!ok || n.is("lambda")) return false;
        if (!n.is("call")) return true;
        const Node fn = syntax::without_parens(n.field("function"));
        const std::string_view name = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
        // Random draws: the static form may run them more often, or on other shapes.
        if (knowledge::random_op(name) || knowledge::in_place(name)) {
            ok = fail(n, fmt::format("`{}` draws random numbers or changes a tensor in place", fn.text()));
            return false;
        }
        if (fn.is("identifier")) {
            if (knowledge::pure_builtin(name)) return true;
            const std::string ext = ctx_.project.external_name(file_, fn);
            if (ext.starts_with("torch.")) return true;
            ok = fail(n, fmt::format("`{}(...)` may have effects the static form would repeat", fn.text()));
            return false;
        }
        if (fn.is("attribute")) {
            if (knowledge::mutating_method(name)) {
                ok = fail(n, fmt::format("`{}` changes its receiver", fn.text()));
                return false;
            }
            if (name == "format") return true;
            const std::string ext = ctx_.project.external_name(file_, fn);
            if (ext.starts_with("torch.")) return true;
            // A project function, or a module: its effects are not followed here.
            const Callable c = callable_of(ctx_, file_, def_, owner_, fn, 0);
            if (c.kind != Callable::None || ctx_.project.callee(file_, n, owner_)) {
                ok = fail(n, fmt::format("`{}(...)` may have effects the static form would repeat", fn.text()));
                return false;
            }
            return true;  // a method of a tensor or a Python value
        }
        ok = fail(n, fmt::format("`{}` may have effects the static form would repeat", n.text()));
        return false;
    });
    return ok;
}

int RowFlow::mask_position(const Node& e) const {
    if (!e.is("subscript") || masks.empty()) return -1;
    std::vector<Node> parts;
    for (const Node& i : e.named_children()) {
        if (!(i == e.field("value")) && !i.is("comment")) parts.push_back(i);
    }
    if (parts.size() == 1 && syntax::without_parens(parts[0]).is("tuple")) return -1;  // `x[(a, b)]`: not handled
    int pos = -1;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const Node q = parts[i];
        if (masks.contains(text(q))) {
            if (pos >= 0) return -1;
            pos = static_cast<int>(i);
            continue;
        }
        const bool picks = (q.is("identifier") && !loop_var.empty() && q.text() == loop_var) || q.is("integer");
        const bool keeps = (q.is("slice") && q.named_children().empty()) || q.is("ellipsis");
        // Before the mask only indices that drop a dimension: the rows then come first.
        if (!(picks || (pos >= 0 && keeps))) return -1;
    }
    return pos;
}

}  // namespace graphmend::rules
