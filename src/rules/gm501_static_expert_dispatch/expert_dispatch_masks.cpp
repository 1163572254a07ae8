// The masks of expert dispatch loops (see expert_dispatch_match.hpp): the mask the pairs are
// taken from, and the boolean masks that pick rows in a loop without pairs (Switch, NLLB-MoE).
#include "expert_dispatch_match.hpp"
#include "rules/support/body.hpp"

namespace graphmend::rules::expert_match {

using body::assignment_of;
using body::inside;
using body::statements;

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

namespace {

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

}  // namespace

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

}  // namespace graphmend::rules::expert_match
