// GM201: whether the text shows one layout for the branch values (see
// predicated_control_flow.hpp): the select is taken only where it does, or where the layouts
// agree at run time.
#include <optional>

#include "graphmend/knowledge.hpp"
#include "predicated_control_flow.hpp"
#include "rules/support/scalar_reads.hpp"

namespace graphmend::rules::control_flow {

namespace {

// --- One layout for the branch values --------------------------------------------------
// The runtime selects only when the branch values agree in shape, dtype and device; where
// they differ it keeps the `if` and its break. What the text shows: a value has the layout
// of a tensor SOURCE (its spelling) when it is that name unchanged, or an elementwise
// method of it that keeps its dtype, or an arithmetic or bitwise operator with a Python
// literal or with another value of the same source (broadcasting changes nothing then),
// or torch.*_like(SOURCE). Anything else (a product of two tensors from different sources,
// `mask4d & pad` where `pad` adds dimensions, a submodule's output, `.float()`) is not
// shown, and the report says the select holds only where the layouts agree at run time.
// No dtypes are known: math (`sqrt`, `exp`, `/`, `* 0.5`) is taken to keep the dtype, as it
// does for the floating-point tensors of model code; an integer tensor's would become float.
// Which methods and torch functions keep the layout: knowledge::same_layout_method/_function.

bool is_python_literal(const Node& e) {
    if (e.is("unary_operator")) return is_python_literal(e.field("argument"));
    if (e.is("parenthesized_expression")) {
        const auto kids = e.named_children();
        return kids.size() == 1 && is_python_literal(kids[0]);
    }
    return e.is("integer") || e.is("float") || e.is("true") || e.is("false");
}

// The source of `e`'s layout as text, or "" when the text does not show it. `before`: the
// statements of branch `b` that run before `e` (names they bind are followed).
std::string layout_source(const Context& ctx, const Node& e, const Branch* b, std::size_t before, int depth = 0);

// The statement of branch `b`, among its first `before`, that last bound `name`, or -1.
std::ptrdiff_t bound_before(const Branch* b, std::size_t before, std::string_view name) {
    if (b == nullptr) return -1;
    for (std::size_t i = before; i-- > 0;) {
        if (b->body[i].kind == Statement::Assign && b->body[i].name == name) return static_cast<std::ptrdiff_t>(i);
    }
    return -1;
}

// True when the analysis knows `e` is no tensor (a Python value: the runtime selects only the
// very same object).
bool python_value(const Context& ctx, const Node& e) {
    const auto v = ctx.values.eval(ctx.file, e);
    return v.kinds != 0 && !v.tensor() && !(v.kinds & analysis::kUnknown);
}

// A Python number or bool: a literal, `torch.finfo(...).max` and the like, arithmetic of
// those, a name the branch bound to one, or a value the analysis knows is one (no tensor).
bool scalar_operand(const Context& ctx, const Node& e, const Branch* b = nullptr, std::size_t before = 0,
                    int depth = 0) {
    if (!e.valid() || depth > 16) return false;
    if (is_python_literal(e)) return true;
    if (e.is("parenthesized_expression")) {
        const auto kids = e.named_children();
        return kids.size() == 1 && scalar_operand(ctx, kids[0], b, before, depth + 1);
    }
    if (e.is("unary_operator")) return scalar_operand(ctx, e.field("argument"), b, before, depth + 1);
    if (e.is("binary_operator")) {
        return scalar_operand(ctx, e.field("left"), b, before, depth + 1) &&
               scalar_operand(ctx, e.field("right"), b, before, depth + 1);
    }
    if (e.is("attribute")) {
        const Node call = e.field("object");
        if (call.is("call")) {
            const auto fn = call.field("function").text();
            if (fn == "torch.finfo" || fn == "torch.iinfo") return true;
        }
    }
    if (e.is("identifier")) {
        if (const auto i = bound_before(b, before, e.text()); i >= 0) {
            const auto& value = b->body[static_cast<std::size_t>(i)].value;
            return value && scalar_operand(ctx, value, b, static_cast<std::size_t>(i), depth + 1);
        }
    }
    const auto v = ctx.values.eval(ctx.file, e);
    return v.only(analysis::kNumber | analysis::kBool) && !v.data;
}

// The other arguments of a call keep `source`'s layout: Python numbers, dims, or values of
// that layout. Keyword arguments other than the operand ones (`other`, `min`, `max`,
// `exponent`, `value`) are options (dim, dtype is refused by the caller).
bool arguments_keep(const Context& ctx, const std::vector<Node>& args, std::size_t first, const std::string& source,
                    const Branch* b, std::size_t before, int depth) {
    for (std::size_t i = first; i < args.size(); ++i) {
        const Node& a = args[i];
        if (a.is("keyword_argument")) {
            const auto key = a.field("name").text();
            if (key == "dtype" || key == "out") return false;
            if (key != "other" && key != "min" && key != "max" && key != "exponent" && key != "value") continue;
        }
        const Node v = a.is("keyword_argument") ? a.field("value") : a;
        if (scalar_operand(ctx, v, b, before)) continue;
        if (layout_source(ctx, v, b, before, depth + 1) != source) return false;
    }
    return true;
}

std::string layout_source(const Context& ctx, const Node& e, const Branch* b, std::size_t before, int depth) {
    if (!e.valid() || depth > 16) return "";
    if (e.is("parenthesized_expression")) {
        const auto kids = e.named_children();
        return kids.size() == 1 ? layout_source(ctx, kids[0], b, before, depth + 1) : "";
    }
    if (e.is("identifier")) {
        if (const auto i = bound_before(b, before, e.text()); i >= 0) {
            const auto& value = b->body[static_cast<std::size_t>(i)].value;
            return value ? layout_source(ctx, value, b, static_cast<std::size_t>(i), depth + 1) : "";
        }
    }
    const bool self_attribute =
        e.is("attribute") && e.field("object").is("identifier") && e.field("object").text() == "self";
    if (e.is("identifier") || self_attribute) return python_value(ctx, e) ? "" : std::string(e.text());
    if (e.is("expression_list") || e.is("tuple")) {
        std::string out = "(";
        for (const auto& item : e.named_children()) {
            auto source = layout_source(ctx, item, b, before, depth + 1);
            if (source.empty()) return "";
            out += source + ",";
        }
        return out + ")";
    }
    if (e.is("binary_operator")) {
        const Node l = e.field("left");
        const Node r = e.field("right");
        const auto op = e.field("operator").text();
        if (op == "@") return "";
        if (scalar_operand(ctx, r, b, before)) return layout_source(ctx, l, b, before, depth + 1);
        if (scalar_operand(ctx, l, b, before)) return layout_source(ctx, r, b, before, depth + 1);
        auto ls = layout_source(ctx, l, b, before, depth + 1);
        auto rs = layout_source(ctx, r, b, before, depth + 1);
        if (ls.empty() || rs.empty()) return "";
        if (ls == rs) return ls;
        // a reduction of a tensor to one element broadcasts against it: its layout
        if (rs == "reduce(" + ls + ")") return ls;
        if (ls == "reduce(" + rs + ")") return rs;
        // broadcasting and type promotion are symmetric: `a - b` and `b - a` agree
        return fmt::format("{}({},{})", op == "/" ? "truediv" : "bcast", std::min(ls, rs), std::max(ls, rs));
    }
    if (e.is("unary_operator")) return layout_source(ctx, e.field("argument"), b, before, depth + 1);
    if (e.is("call")) {
        const Node fn = e.field("function");
        if (!fn.is("attribute")) return "";
        const auto name = fn.field("attribute").text();
        const Node object = fn.field("object");
        const auto args = e.field("arguments").named_children();
        if (object.is("identifier") && object.text() == "torch") {
            if (args.empty() || args[0].is("keyword_argument")) return "";
            if (name == "zeros_like" || name == "ones_like" || name == "empty_like" || name == "full_like") {
                for (const auto& a : args) {
                    if (a.is("keyword_argument") && a.field("name").text() == "dtype") return "";
                }
                return layout_source(ctx, args[0], b, before, depth + 1);
            }
            if (!knowledge::same_layout_function(name)) return "";
            auto source = layout_source(ctx, args[0], b, before, depth + 1);
            return !source.empty() && arguments_keep(ctx, args, 1, source, b, before, depth) ? source : "";
        }
        if (args.empty() && (name == "mean" || name == "std" || name == "var" || name == "norm" || name == "max" ||
                             name == "min" || name == "amax" || name == "amin" || name == "median")) {
            // the whole tensor to one element of its dtype
            auto source = layout_source(ctx, object, b, before, depth + 1);
            return source.empty() ? "" : "reduce(" + source + ")";
        }
        if (!knowledge::same_layout_method(name)) return "";
        auto source = layout_source(ctx, object, b, before, depth + 1);
        return !source.empty() && arguments_keep(ctx, args, 0, source, b, before, depth) ? source : "";
    }
    return "";
}


}  // namespace

// The live name (or, with every branch returning, the returned value) whose branch values
// the text does not show to share a layout, or "" when every one does.
std::string unshown_layout(const Context& ctx, const Plan& plan) {
    if (plan.all_return) {
        std::optional<std::string> common;
        for (const auto& b : plan.branches) {
            for (std::size_t i = 0; i < b.body.size(); ++i) {
                if (b.body[i].kind != Statement::Return) continue;
                auto source = layout_source(ctx, b.body[i].value, &b, i);
                if (source.empty() || (common && *common != source)) return "the returned value";
                common = source;
            }
        }
        return "";
    }
    std::vector<std::string> names;
    for (const auto& name : plan.live) {
        std::optional<std::string> common;
        bool unshown = false;
        auto meet = [&](const std::string& source) {
            if (source.empty() || (common && *common != source)) unshown = true;
            common = source;
        };
        for (const auto& b : plan.branches) {
            std::size_t last = b.body.size();
            for (std::size_t i = 0; i < b.body.size(); ++i) {
                if (b.body[i].kind == Statement::Assign && b.body[i].name == name) last = i;
            }
            if (last == b.body.size()) {
                meet(name);  // this path leaves the name as it was
            } else {
                meet(b.body[last].value ? layout_source(ctx, b.body[last].value, &b, last) : "");
            }
        }
        if (!plan.has_else) meet(name);
        if (unshown) names.push_back(fmt::format("`{}`", name));
    }
    return fmt::format("{}", fmt::join(names, ", "));
}

bool layouts_shown_equal(const Context& ctx, const Node& a, const Node& b) {
    const std::string la = layout_source(ctx, a, nullptr, 0);
    return !la.empty() && la == layout_source(ctx, b, nullptr, 0);
}

}  // namespace graphmend::rules::control_flow
