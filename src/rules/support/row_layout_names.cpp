// Strict row layout (see row_layout.cpp): what the locals hold. Assignments of rows, of
// counts and of sizes read from `.shape`, what an `if` or a loop makes uncertain, and the rank
// of expressions that hold no rows.
#include <fmt/format.h>

#include <algorithm>

#include "site.hpp"
#include "graphmend/knowledge.hpp"
#include "row_layout.hpp"

namespace graphmend::rules {

using namespace layout;
using Layout = RowFlow::Layout;

// `B` (a count local), `R.shape[0]` or `R.size(0)` with R rows (not blocks).
bool RowFlow::count_expr(const Node& node) const {
    const Node e = syntax::without_parens(node);
    if (e.is("identifier")) return counts.contains(text(e));
    Node obj;
    if (e.is("subscript") && e.field("value").is("attribute") && e.field("value").field("attribute").text() == "shape" &&
        int_literal(e.field("subscript")) == 0) {
        obj = syntax::without_parens(e.field("value").field("object"));
    } else if (e.is("call") && e.field("function").is("attribute") &&
               e.field("function").field("attribute").text() == "size" &&
               e.field("arguments").named_children().size() == 1 &&
               int_literal(e.field("arguments").named_children()[0]) == 0) {
        obj = syntax::without_parens(e.field("function").field("object"));
    }
    return obj && obj.is("identifier") && rows.contains(text(obj));
}

// True when `n` lies under a branch or loop inside the block the check started from.
bool RowFlow::conditional(const Node& n) const {
    const Node stop = root ? root : def_.field("body");
    for (Node p = n.parent(); p && !(p == stop) && !(p == def_); p = p.parent()) {
        if (p.is("if_statement") || p.is("for_statement") || p.is("while_statement") || p.is("try_statement") ||
            p.is("with_statement") || p.is("match_statement")) {
            return true;
        }
    }
    return false;
}

void RowFlow::forget(const std::string& name) {
    rows.erase(name);
    blocks.erase(name);
    counts.erase(name);
    block_counts.erase(name);
    contiguous.erase(name);
    ranks.erase(name);
    dims.erase(name);
    std::erase_if(dims, [&](const auto& kv) {
        return std::find(kv.second.begin(), kv.second.end(), name) != kv.second.end();
    });
}

bool RowFlow::strict_assignment(const Node& a) {
    const Node left = a.field("left");
    const Node right = a.field("right");
    if (left.is("pattern_list") || left.is("tuple_pattern")) {
        if (holds_rows(right)) return strict_shape_read(a);
        for (const Node& t : left.named_children()) {
            if (!t.is("identifier")) {
                return fail(a, fmt::format("a write to `{}`, which the static form would make also when no row is "
                                           "picked",
                                           one_line(t.text())));
            }
            if (holds_rows(t)) return fail(a, fmt::format("`{}`, which holds rows, assigned from a tuple", t.text()));
            forget(text(t));
        }
        return true;
    }
    if (!left.is("identifier")) {  // the static form would make the write also when no row is picked
        if (holds_rows(a)) return fail(a, "rows stored outside a local");
        return fail(a, fmt::format("a write to `{}`, which the static form would make also when no row is picked",
                                   one_line(left.text())));
    }
    const std::string name = text(left);
    const bool was_rows = holds_rows(left);
    std::optional<Layout> l;
    if (a.is("augmented_assignment")) {
        if (counts.contains(name) || block_counts.contains(name)) return fail(a, "the row count changed in place");
        l = strict_operands(a, {left, right});
    } else if (count_expr(right)) {
        if (conditional(a)) return fail(a, "the row count read under an `if`");
        forget(name);
        counts.insert(name);
        return true;
    } else {
        l = sub(right);
    }
    if (!l) return false;
    if (conditional(a) && (l->rows || was_rows)) {
        return fail(a, "rows assigned under an `if` or a loop (the check follows one path)");
    }
    forget(name);
    if (l->rows) {
        (l->blocks ? blocks : rows).insert(name);
        if (l->rank.known()) ranks[name] = l->rank;
        const Node r = syntax::without_parens(right);
        if (r.is("call") && r.field("function").is("attribute") &&
            r.field("function").field("attribute").text() == "contiguous" && r.field("arguments").named_children().empty()) {
            contiguous.insert(name);
        }
    } else if (!conditional(a)) {
        const Rank r = plain_rank(right);
        if (r.known()) ranks[name] = r;
    }
    return true;
}

// `B, C, H, W = R.shape` / `= R.size()`: B the row count (of rows) or dimension 0 of blocks,
// the others the same for every row; R's rank is then the number of names.
bool RowFlow::strict_shape_read(const Node& a) {
    const Node left = a.field("left");
    const Node right = syntax::without_parens(a.field("right"));
    Node obj;
    if (right.is("attribute") && right.field("attribute").text() == "shape") obj = syntax::without_parens(right.field("object"));
    if (right.is("call") && right.field("function").is("attribute") &&
        right.field("function").field("attribute").text() == "size" && right.field("arguments").named_children().empty()) {
        obj = syntax::without_parens(right.field("function").field("object"));
    }
    if (!obj || !obj.is("identifier") || !(rows.contains(text(obj)) || blocks.contains(text(obj)))) {
        return fail(a, "a tuple assigned from the rows other than their `.shape`");
    }
    if (conditional(a)) return fail(a, "the rows' shape read under an `if`");
    const std::string r = text(obj);
    std::vector<std::string> names;
    for (const Node& t : left.named_children()) {
        if (!t.is("identifier") || text(t) == r) return fail(a, "the rows' shape unpacked into other than new names");
        names.push_back(text(t));
    }
    for (const auto& n : names) forget(n);
    if (blocks.contains(r)) {
        block_counts.insert(names[0]);
    } else {
        counts.insert(names[0]);
    }
    ranks[r] = Rank{static_cast<int>(names.size()), true};
    const std::set<std::string> distinct(names.begin(), names.end());
    if (distinct.size() == names.size()) dims[r] = std::vector<std::string>(names.begin() + 1, names.end());
    return true;
}

// The rank of an expression that holds no rows.
Rank RowFlow::plain_rank(const Node& node) const {
    const Node e = syntax::without_parens(node);
    if (e.is("integer") || e.is("float") || e.is("true") || e.is("false")) return exact(0);
    if (e.is("identifier")) {
        const auto it = ranks.find(text(e));
        return it == ranks.end() ? Rank{} : it->second;
    }
    if (e.is("binary_operator") && e.field("operator").text() != "@") {  // broadcasting: the larger rank
        const Rank a = plain_rank(e.field("left"));
        const Rank b = plain_rank(e.field("right"));
        if (!a.known() || !b.known()) return {};
        return Rank{std::max(a.n, b.n), a.exact && b.exact};
    }
    if (e.is("unary_operator")) return plain_rank(e.field("argument"));
    if (e.is("subscript")) {
        std::vector<Node> parts;
        for (const Node& i : e.named_children()) {
            if (!(i == e.field("value")) && !i.is("comment")) parts.push_back(i);
        }
        if (parts.size() == 1 && syntax::without_parens(parts[0]).is("tuple")) parts = syntax::without_parens(parts[0]).named_children();
        int ints = 0, nones = 0, counted = 0;
        for (const Node& p : parts) {
            const Node q = syntax::without_parens(p);
            if (int_literal(q)) {
                ++ints;
            } else if (q.is("none")) {
                ++nones;
            } else if (!q.is("slice") && !q.is("ellipsis")) {
                return {};
            }
            counted += q.is("none") || q.is("ellipsis") ? 0 : 1;
        }
        const Rank v = plain_rank(e.field("value"));
        if (v.exact) return exact(v.n - ints + nones);
        return Rank{std::max(v.n, counted) - ints + nones, false};
    }
    if (!e.is("call")) return {};
    const Node fn = syntax::without_parens(e.field("function"));
    const auto args = e.field("arguments").named_children();
    if (fn.is("attribute")) {
        const std::string m = text(fn.field("attribute"));
        const Rank v = plain_rank(fn.field("object"));
        const bool sizes = args.size() > 1 || (args.size() == 1 && (syntax::without_parens(args[0]).is("tuple") ||
                                                                      syntax::without_parens(args[0]).is("list") ||
                                                                      int_literal(args[0])));
        if ((m == "view" || m == "reshape" || m == "permute") && sizes) {
            return exact(static_cast<int>(sizes_of(args).size()));
        }
        if (m == "contiguous" || m == "clone" || m == "float" || m == "half" || m == "to" || m == "detach") return v;
    }
    if (!starts(fn.text(), "self.")) return {};
    const Callable c = callable_of(ctx_, file_, def_, owner_, fn, 0);
    if (c.kind != Callable::External || args.size() != 1 || args[0].is("keyword_argument")) return {};
    const std::string_view leaf = last_part(c.external);
    const Rank in = plain_rank(args[0]);
    const int n = spatial_dims(leaf);
    if (n > 0 && leaf.starts_with("Conv") && leaf.size() == 6) {
        return in.known() && in.n >= n + 2 ? exact(n + 2) : Rank{n + 1, false};
    }
    if (knowledge::elementwise_module(leaf)) return in;
    return {};
}

// Calls that hold no rows in `body` (the rows' calls are checked as rows): the static form
// makes them also when no row is picked, so they must have no effect. torch functions and
// tensor methods that do not end in `_` (nor start with it, nor draw random numbers), and a few
// builtins; not project code or modules.
bool RowFlow::strict_effects(const Node& body) {
    bool ok = true;
    syntax::walk(body, [&](const Node& n) {
        if (!ok || n.is("function_definition") || n.is("class_definition")) return false;
        if (!n.is("call") || row_calls_.contains({n.begin(), n.end()})) return true;
        const Node fn = syntax::without_parens(n.field("function"));
        const std::string ext = ctx_.project.external_name(file_, fn);
        const std::string_view leaf = last_part(ext.empty() ? std::string_view(fn.text()) : std::string_view(ext));
        bool pure = false;
        const bool random = knowledge::random_op(leaf) || leaf.starts_with("rand") ||
                            leaf.find("seed") != std::string_view::npos || leaf.find("dropout") != std::string_view::npos;
        if (!leaf.empty() && leaf.back() != '_' && leaf.front() != '_' && !random) {
            if (starts(ext, "torch.")) {
                pure = !starts(ext, "torch.nn.") || starts(ext, "torch.nn.functional.");
            } else if (fn.is("identifier")) {
                pure = knowledge::pure_builtin(leaf) && ctx_.project.callee(file_, n, owner_) == std::nullopt &&
                       !ctx_.project.class_named(file_, fn);
            } else if (fn.is("attribute") && !starts(fn.text(), "self.")) {
                const std::string_view m = fn.field("attribute").text();
                pure = is_elementwise_method(m) || m == "size" || m == "dim" || m == "view" || m == "reshape" ||
                       m == "permute" || m == "transpose" || m == "flatten" || m == "unsqueeze" || m == "numel";
            }
        }
        if (!pure) {
            ok = fail(n, fmt::format("`{}(...)` would be called also when no row is picked, and may have an effect",
                                     one_line(fn.text())));
        }
        return ok;
    });
    return ok;
}

}  // namespace graphmend::rules
