// Matching row subsets (see src/rules/gm502_static_row_subset/row_subset.hpp).
//
// The static form keeps the mask instead of the index list, sends every row through the
// code inside each `if len(I) > 0:` and writes back only the rows the mask picks (with
// torch.where, so what the other rows compute cannot leak). It equals the original when:
//   - the index is only passed to functions of the same file and, there and where it was
//     made, only read inside `if` statements that test it for being non-empty (no elif or
//     else, not in a loop), as the first index of gathers `X[I, ...]` and writes
//     `Y[I, ...] = V` (the other indices slices, integer literals or `...`);
//   - inside those `if`s every statement is an assignment of a local, a write `Y[I] = V` or
//     an `if` on something other than the rows, and the code is row-wise in the strict sense
//     of row_layout.cpp: each row's result depends on that row alone, the rows stay in
//     dimension 0, and the written value has the rank of the rows it is written to;
//   - no local the `if` assigns is read after it (the static form runs it when the mask picks
//     no row, and with other counts), and X and Y are locals it does not assign.
// Each row is picked at most once (the runtime takes the static form only when the mask has
// one element per row), so a write's order does not matter.
#include "row_subset.hpp"

#include <fmt/format.h>

#include <set>

#include "graphmend/liveness.hpp"
#include "rules/support/rowwise.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {


bool inside(const Node& node, const Node& outer) { return outer.begin() <= node.begin() && node.end() <= outer.end(); }

// The one assignment or augmented assignment of an expression statement, or invalid.
Node assignment_of(const Node& stmt) {
    if (!stmt.is("expression_statement")) return {};
    const auto parts = stmt.named_children();
    return parts.size() == 1 && (parts[0].is("assignment") || parts[0].is("augmented_assignment")) ? parts[0] : Node();
}

// `torch.where(M)[0]`, `torch.nonzero(M, as_tuple=True)[0]`, `M.nonzero(as_tuple=True)[0]`:
// the call and M.
std::pair<Node, Node> index_call(const Context& ctx, const Node& rhs) {
    const Node s = syntax::without_parens(rhs);
    if (!s.is("subscript") || s.field("subscript").text() != "0") return {};
    const Node call = syntax::without_parens(s.field("value"));
    if (!call.is("call")) return {};
    const Node fn = call.field("function");
    const auto args = call.field("arguments").named_children();
    auto as_tuple = [](const Node& a) {
        return a.is("keyword_argument") && a.field("name").text() == "as_tuple" && a.field("value").text() == "True";
    };
    const std::string ext = ctx.project.external_name(ctx.file, fn);
    if (ext == "torch.where" && args.size() == 1 && !args[0].is("keyword_argument")) return {call, args[0]};
    if (ext == "torch.nonzero" && args.size() == 2 && as_tuple(args[1])) return {call, args[0]};
    if (ext.empty() && fn.is("attribute") && fn.field("attribute").text() == "nonzero" && args.size() == 1 &&
        as_tuple(args[0])) {
        return {call, fn.field("object")};
    }
    return {};
}

// Reads of `name` in `fn`'s body, nested functions and classes included (a lambda or a nested
// function reading it counts as a read there).
std::vector<Node> reads_of(const Node& fn, const std::string& name) {
    std::vector<Node> out;
    syntax::walk(fn.field("body"), [&](const Node& n) {
        if (n.is("identifier") && n.text() == name && analysis::is_read(n)) out.push_back(n);
        return true;
    });
    return out;
}

// `len(I)`, `I.shape[0]`, `I.size(0)`, `I.numel()`.
bool size_of(const Node& node, const std::string& name) {
    const Node e = syntax::without_parens(node);
    if (e.is("call")) {
        const Node fn = e.field("function");
        const auto args = e.field("arguments").named_children();
        if (fn.text() == "len" && args.size() == 1 && args[0].text() == name) return true;
        if (fn.is("attribute") && fn.field("object").text() == name) {
            const std::string_view m = fn.field("attribute").text();
            return (m == "numel" && args.empty()) || (m == "size" && args.size() == 1 && args[0].text() == "0");
        }
        return false;
    }
    return e.is("subscript") && e.field("subscript").text() == "0" && e.field("value").is("attribute") &&
           e.field("value").field("attribute").text() == "shape" && e.field("value").field("object").text() == name;
}

// `SIZE`, `SIZE > 0`, `SIZE != 0`, `SIZE >= 1`, `0 < SIZE`: true when non-empty.
bool nonempty_test(const Node& test, const std::string& name) {
    const Node t = syntax::without_parens(test);
    if (size_of(t, name)) return true;
    if (!t.is("comparison_operator")) return false;
    const auto parts = t.named_children();
    Node op;
    for (const Node& c : t.children()) {
        if (!c.named()) op = c;
    }
    if (parts.size() != 2) return false;
    if (size_of(parts[0], name)) {
        return (parts[1].text() == "0" && (op.is(">") || op.is("!="))) || (parts[1].text() == "1" && op.is(">="));
    }
    return size_of(parts[1], name) && parts[0].text() == "0" && (op.is("<") || op.is("!="));
}

// The `if` around `read` that tests `name` for being non-empty, with `read` in its test or its
// body, or invalid.
Node guard_of(const Node& read, const Node& fn, const std::string& name) {
    for (Node p = read.parent(); p && !(p == fn); p = p.parent()) {
        if (p.is("if_statement") && nonempty_test(p.field("condition"), name) &&
            (inside(read, p.field("condition")) || inside(read, p.field("consequence")))) {
            return p;
        }
    }
    return {};
}

// The name a call argument binds in `fn` (a method when `method`), or "".
std::string parameter_for(const Node& call, const Node& arg, const Node& fn, bool method) {
    std::vector<Node> params;
    for (const Node& p : fn.field("parameters").named_children()) params.push_back(p);
    if (method && !params.empty()) params.erase(params.begin());
    auto name_of = [](const Node& p) -> std::string {
        if (p.is("identifier")) return text(p);
        if (p.is("typed_parameter")) return text(p.named_children()[0]);
        if (p.is("default_parameter") || p.is("typed_default_parameter")) return text(p.field("name"));
        return "";
    };
    if (arg.parent().is("keyword_argument")) {
        const std::string kw = text(arg.parent().field("name"));
        for (const Node& p : params) {
            if (name_of(p) == kw) return kw;
        }
        return "";
    }
    std::size_t i = 0;
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("list_splat") || a.is("dictionary_splat") || a.is("keyword_argument")) return "";
        if (a == arg) return i < params.size() ? name_of(params[i]) : "";
        ++i;
    }
    return "";
}

}  // namespace

bool check_guard(const Context& ctx, std::size_t file, RowSubset::Guard& g, std::string& why);

std::optional<RowSubset> match_row_subset(const Context& ctx, const Node& def, const Node& stmt) {
    const Node a = assignment_of(stmt);
    if (!a || !a.is("assignment") || !a.field("left").is("identifier")) return std::nullopt;
    const auto [call, mask] = index_call(ctx, a.field("right"));
    if (!call) return std::nullopt;
    RowSubset s;
    s.statement = stmt;
    s.call = call;
    s.index = a.field("right");
    s.mask = mask;
    s.name = text(a.field("left"));
    const auto reads = reads_of(def, s.name);
    const std::string owner = owner_of(def);
    bool claimed = false;  // tested for being empty, or passed to project code
    for (const Node& r : reads) {
        const Node list = r.parent().is("keyword_argument") ? r.parent().parent() : r.parent();
        if (list.is("argument_list") && list.parent().is("call")) {
            const auto k = callable_of(ctx, ctx.file, def, owner, list.parent().field("function")).kind;
            claimed = claimed || k == Callable::Class || k == Callable::Method || k == Callable::Function;
        }
        claimed = claimed || guard_of(r, def, s.name);
    }
    if (!claimed) return std::nullopt;
    auto refuse = [&](std::string why) {
        s.refused = std::move(why);
        return s;
    };
    // Where the rows are read: (function, name there).
    std::vector<std::pair<Node, std::string>> users;
    auto add_user = [&](const Node& fn, const std::string& p) {
        for (const auto& [f, q] : users) {
            if (f == fn && q == p) return;
        }
        users.emplace_back(fn, p);
    };
    for (const Node& r : reads) {
        if (guard_of(r, def, s.name)) {
            add_user(def, s.name);
            continue;
        }
        const Node list = r.parent().is("keyword_argument") ? r.parent().parent() : r.parent();
        if (!list.is("argument_list") || !list.parent().is("call") ||
            (r.parent().is("keyword_argument") && !(r.parent().field("value") == r))) {
            return refuse(fmt::format("line {}: `{}` is read other than passed to a function or tested for being "
                                      "empty around the rows it picks",
                                      r.position().line, s.name));
        }
        const Node c = list.parent();
        const Callable callee = callable_of(ctx, ctx.file, def, owner, c.field("function"));
        std::optional<analysis::FunctionRef> fn;
        if (callee.kind == Callable::Class) fn = ctx.project.find_method(callee.file, callee.cls, "forward");
        if (callee.kind == Callable::Method || callee.kind == Callable::Function) {
            fn = analysis::FunctionRef{callee.file, callee.function};
        }
        if (!fn) {
            return refuse(fmt::format("line {}: `{}` is passed to `{}`, which graphmend cannot read", r.position().line,
                                      s.name, c.field("function").text()));
        }
        if (fn->file != ctx.file) {
            return refuse(fmt::format("line {}: `{}` is passed to `{}`, defined in another file", r.position().line,
                                      s.name, c.field("function").text()));
        }
        const bool method = callee.kind != Callable::Function;
        const std::string p = parameter_for(c, r, fn->node, method);
        if (p.empty()) {
            return refuse(fmt::format("line {}: the parameter `{}` is passed to cannot be told", r.position().line,
                                      s.name));
        }
        add_user(fn->node, p);
    }
    for (const auto& [fn, p] : users) {
        for (const Node& r : reads_of(fn, p)) {
            const Node g = guard_of(r, fn, p);
            if (!g && fn == def) continue;  // passed on: checked above
            if (g && fn == def && g.begin() < stmt.end()) {
                return refuse(fmt::format("line {}: `{}` is tested before it is made", r.position().line, p));
            }
            if (!g) {
                return refuse(fmt::format("line {}: `{}` is read outside an `if` that tests it for being empty",
                                          r.position().line, p));
            }
            bool seen = false;
            for (const auto& other : s.guards) seen = seen || other.guard == g;
            if (seen) continue;
            RowSubset::Guard guard;
            guard.fn = fn;
            guard.param = p;
            guard.guard = g;
            std::string why;
            if (!check_guard(ctx, ctx.file, guard, why)) return refuse(why);
            s.guards.push_back(std::move(guard));
        }
    }
    return s;
}

}  // namespace graphmend::rules
