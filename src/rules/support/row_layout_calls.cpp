// Strict row layout (see row_layout.cpp): calls on the rows. Methods of the rows (permutes,
// sizes, elementwise methods) and torch.nn modules reached through `self` (nn.Sequential
// followed item by item); views, torch functions and project functions are in
// row_layout_functions.cpp.
#include <fmt/format.h>

#include <algorithm>

#include "graphmend/knowledge.hpp"
#include "row_layout.hpp"

namespace graphmend::rules {

using namespace layout;
using Layout = RowFlow::Layout;

namespace {

// The value of the one `self.NAME = VALUE` in the methods of class `cls` of `file`, or invalid.
Node only_self_assignment(const Context& ctx, std::size_t file, const std::string& cls, std::string_view name) {
    const auto& classes = ctx.project.files()[file].index.classes;
    const auto it = classes.find(cls);
    if (it == classes.end()) return {};
    Node found;
    int count = 0;
    for (const auto& [method, fn] : it->second.methods) {
        syntax::walk(fn.field("body"), [&](const Node& n) {
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if (n.is("assignment")) {
                const Node left = n.field("left");
                if (left.is("attribute") && left.field("object").text() == "self" &&
                    left.field("attribute").text() == name) {
                    ++count;
                    found = n.field("right");
                }
            }
            return true;
        });
    }
    return count == 1 ? found : Node();
}

}  // namespace

std::optional<Layout> RowFlow::strict_call(const Node& e) {
    const Node fn = syntax::without_parens(e.field("function"));
    const auto args = e.field("arguments").named_children();
    for (const Node& a : args) {
        if ((a.is("list_splat") || a.is("dictionary_splat")) && holds_rows(a)) {
            fail(a, "rows passed through * or **");
            return std::nullopt;
        }
    }
    if (fn.is("attribute") && holds_rows(fn.field("object"))) {
        return strict_method(e, fn.field("object"), text(fn.field("attribute")));
    }
    const std::string ext = ctx_.project.external_name(file_, fn);
    if (starts(ext, "torch.") && !starts(ext, "torch.nn.")) return strict_torch(e, last_part(ext));
    if (starts(ext, "torch.nn.functional.")) return strict_torch(e, last_part(ext));
    const Callable c = callable_of(ctx_, file_, def_, owner_, fn, 0);
    if (c.kind == Callable::Method || c.kind == Callable::Function) {
        return strict_function(e, c.file, c.function, c.kind == Callable::Method);
    }
    if (c.kind == Callable::None) {
        fail(e, ext.empty() ? fmt::format("`{}` could not be resolved to code graphmend can read", fn.text())
                            : fmt::format("`{}` is not known to work row by row", ext));
        return std::nullopt;
    }
    if (!starts(fn.text(), "self.")) {
        fail(e, fmt::format("`{}` is not a module reached through `self`, whose mode the static form checks",
                            fn.text()));
        return std::nullopt;
    }
    // nn.Sequential: each item in turn.
    const auto pos = positional(args);
    if (fn.is("attribute") && fn.field("object").text() == "self" && !owner_.empty()) {
        const Node made = syntax::without_parens(only_self_assignment(ctx_, file_, owner_, fn.field("attribute").text()));
        if (made.is("call") && last_part(ctx_.project.external_name(file_, made.field("function"))) == "Sequential") {
            if (pos.size() != 1 || pos.size() != args.size()) {
                fail(e, fmt::format("`{}` called with other than one argument", fn.text()));
                return std::nullopt;
            }
            auto cur = sub(pos[0]);
            if (!cur) return std::nullopt;
            for (const Node& item : made.field("arguments").named_children()) {
                if (item.is("keyword_argument") || item.is("list_splat") || item.is("comment")) {
                    fail(item, "an nn.Sequential built other than from modules one by one");
                    return std::nullopt;
                }
                cur = strict_module(e, callable_of(ctx_, file_, Node(), owner_, item, 0), *cur);
                if (!cur) return std::nullopt;
            }
            return cur;
        }
    }
    if (c.kind == Callable::Class) {
        const auto forward = ctx_.project.find_method(c.file, c.cls, "forward");
        if (!forward) {
            fail(e, fmt::format("`{}` has no forward graphmend can read", c.cls));
            return std::nullopt;
        }
        return strict_function(e, forward->file, forward->node, true);
    }
    if (pos.size() != 1 || pos.size() != args.size()) {
        fail(e, fmt::format("`{}` called with other than one argument", fn.text()));
        return std::nullopt;
    }
    const auto in = sub(pos[0]);
    if (!in) return std::nullopt;
    return strict_module(e, c, *in);
}

// One torch.nn module (or an ACT2FN activation) applied to `in`.
std::optional<Layout> RowFlow::strict_module(const Node& e, const Callable& c, const Layout& in) {
    if (!in.rows) return in;
    if (c.kind == Callable::Activation) return in;
    if (c.kind != Callable::External || !starts(c.external, "torch.nn.")) {
        fail(e, fmt::format("`{}` is not a torch.nn module known to work row by row", e.field("function").text()));
        return std::nullopt;
    }
    const std::string_view leaf = last_part(c.external);
    const int n = spatial_dims(leaf);
    auto at_least = [&](int k, std::string_view why) {
        if (in.rank.known() && in.rank.n >= k) return true;
        fail(e, fmt::format("`{}` on rows of a rank not shown to be at least {} ({})", leaf, k, why));
        return false;
    };
    if (knowledge::elementwise_module(leaf)) return in;
    if (leaf == "Dropout") {
        needs_eval = true;
        return in;
    }
    if (leaf == "Linear") return at_least(2, "of rank 1, the rows would be its features") ? std::optional(in) : std::nullopt;
    if (n > 0 && (leaf.starts_with("Conv") && leaf.size() == 6)) {
        if (!at_least(n + 2, "unbatched, it would mix the rows as channels")) return std::nullopt;
        return Layout{true, in.blocks, Rank{n + 2, true}};
    }
    if (n > 0 && leaf.starts_with("BatchNorm")) {
        if (!at_least(2, "a batch norm needs a batch")) return std::nullopt;
        needs_eval = true;  // batch statistics in training; the runtime also checks running statistics
        return in;
    }
    if (n > 0 && (leaf.starts_with("AdaptiveAvgPool") || leaf.starts_with("AvgPool"))) {
        if (!at_least(n + 1, "pooling works on each plane")) return std::nullopt;
        return in;
    }
    fail(e, fmt::format("`{}` is not known to work row by row", c.external));
    return std::nullopt;
}

std::optional<Layout> RowFlow::strict_method(const Node& e, const Node& recv, const std::string& m) {
    const auto args = e.field("arguments").named_children();
    if (m == "size" && args.size() == 1 && int_literal(args[0])) {
        const auto r = sub(recv);
        if (!r) return std::nullopt;
        const auto d = resolve_dim(*int_literal(args[0]), r->rank);
        if (d && *d >= 1) return Layout{};
        fail(e, "dimension 0 of the rows (their count) read outside a view's first size");
        return std::nullopt;
    }
    if (m == "dim" || m == "ndimension") {
        if (!sub(recv)) return std::nullopt;
        return Layout{};
    }
    if (m == "view" || m == "reshape") return strict_view(e, recv, m);
    auto r = sub(recv);
    if (!r) return std::nullopt;
    if (!r->rows) return Layout{};
    for (const Node& a : args) {
        if (holds_rows(a) && !knowledge::broadcast_method(m) && m != "to" && m != "type_as") {
            fail(a, fmt::format("rows passed to `.{}()`", m));
            return std::nullopt;
        }
    }
    const auto pos = positional(args);
    if (m == "permute") {
        const auto dims = sizes_of(pos);
        if (dims.empty() || int_literal(dims[0]) != 0) {
            fail(e, "a permute that moves the rows out of dimension 0");
            return std::nullopt;
        }
        for (const Node& d : dims) {
            if (!int_literal(d)) {
                fail(d, "a permute by sizes that are not integer literals");
                return std::nullopt;
            }
        }
        return Layout{true, r->blocks, Rank{static_cast<int>(dims.size()), true}};
    }
    if (m == "transpose" || m == "swapaxes") {
        const auto a = pos.size() == 2 ? int_literal(pos[0]) : std::nullopt;
        const auto b = pos.size() == 2 ? int_literal(pos[1]) : std::nullopt;
        const auto da = a ? resolve_dim(*a, r->rank) : std::nullopt;
        const auto db = b ? resolve_dim(*b, r->rank) : std::nullopt;
        if (da && db && *da >= 1 && *db >= 1) return *r;
        fail(e, "a transpose not shown to leave dimension 0 in place");
        return std::nullopt;
    }
    if (m == "flatten" || m == "unsqueeze") {
        const Node s = pos.empty() ? keyword(args, m == "flatten" ? "start_dim" : "dim") : pos[0];
        const auto v = s ? int_literal(s) : std::nullopt;
        const auto d = v ? resolve_dim(*v, m == "unsqueeze" ? Rank{r->rank.n + 1, r->rank.exact} : r->rank)
                         : std::nullopt;
        const Node end = pos.size() > 1 ? pos[1] : keyword(args, "end_dim");
        if (!d || *d < 1 || (end && end.text() != "-1")) {
            fail(e, fmt::format("a {} not shown to leave dimension 0 in place", m));
            return std::nullopt;
        }
        if (m == "unsqueeze") return Layout{true, r->blocks, r->rank.known() ? Rank{r->rank.n + 1, r->rank.exact} : Rank{}};
        return Layout{true, r->blocks, Rank{*d + 1, true}};
    }
    if (knowledge::broadcast_method(m)) {
        std::vector<Node> operands{recv};
        for (const Node& a : pos) operands.push_back(a);
        for (const Node& a : args) {
            if (a.is("keyword_argument") && holds_rows(a)) {
                fail(a, "rows passed by keyword");
                return std::nullopt;
            }
        }
        return strict_operands(e, operands);
    }
    if (is_elementwise_method(m)) {
        for (const Node& a : args) {
            if (holds_rows(a) && !sub(a)) return std::nullopt;
        }
        return *r;
    }
    fail(e, fmt::format("`.{}()` on the rows is not known to work row by row", m));
    return std::nullopt;
}

}  // namespace graphmend::rules
