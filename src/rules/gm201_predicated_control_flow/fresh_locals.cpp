// GM201: fresh locals, which a branch may change in place on a copy (see
// predicated_control_flow.hpp, Checker::fresh_local). A branch that changes a tensor in place
// (`v.masked_fill_(m, 0)`, `v.copy_(src)`, `v = helper_(v)` where helper_ changes its argument)
// cannot run when not taken, unless the tensor is a local nothing else refers to: then the
// branch changes a clone, binds the name to it, and the select chooses between the clone and
// the tensor as it was. What makes a new tensor is the knowledge layer's (fresh_tensor, may_alias,
// pure_op, new_tensor_module).
#include <algorithm>

#include "predicated_control_flow.hpp"

#include "graphmend/knowledge.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"

namespace graphmend::rules::control_flow {

namespace {

// The constructor call of `self.NAME = CALL(...)` in the __init__ of the class around `function`.
Node constructor_of(const Context& ctx, const Node& function, const std::string& name) {
    Node found;
    if (const Node init = init_of(ctx, function)) {
        syntax::walk(init, [&](const Node& n) {
            if (n.is("assignment") && n.field("left").text() == "self." + name && n.field("right").is("call")) {
                found = n.field("right");
            }
            return !found;
        });
    }
    return found;
}

// The class name a constructor call spells (`nn.Linear(...)` -> Linear).
std::string class_of(const Node& call) {
    const Node fn = call.field("function");
    return text(fn.is("attribute") ? fn.field("attribute") : fn);
}

bool passes_requires_grad(const Node& call) {
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("keyword_argument") && a.field("name").text() == "requires_grad" && a.field("value").text() != "False") {
            return true;
        }
    }
    return false;
}

}  // namespace

std::string Checker::fresh_value(const Node& expr) const {
    const Node e = syntax::without_parens(expr);
    const std::string shown = one_line(e.text(), Blanks::Fold, 50);
    if (e.is("binary_operator") || e.is("unary_operator")) return "";  // a new tensor
    if (e.is("identifier")) return fmt::format("`{}` names a tensor that another name holds too", shown);
    if (!e.is("call")) return fmt::format("`{}` may be a tensor the module or a caller holds", shown);
    const Node fn = e.field("function");
    if (!fn.is("attribute")) return fmt::format("`{}` may return a tensor that something else holds", shown);
    const std::string method = text(fn.field("attribute"));
    const Node receiver = syntax::without_parens(fn.field("object"));
    const bool torch_function = ctx.project.external_name(ctx.file, fn).starts_with("torch");
    if (knowledge::fresh_tensor(method)) {
        if (passes_requires_grad(e)) {
            return fmt::format("`{}` makes a leaf that requires grad, which the original may not change in place",
                               shown);
        }
        return "";
    }
    if (knowledge::may_alias(method) || knowledge::in_place(method)) {
        // A view or a conversion (maybe the tensor itself): fresh when what it is taken of is.
        Node base = receiver;
        if (torch_function) {
            const auto args = e.field("arguments").named_children();
            base = args.empty() ? Node() : args[0];
        }
        if (!base) return fmt::format("`{}` may return a tensor that something else holds", shown);
        if (auto why = fresh_value(base); !why.empty()) {
            return fmt::format("`{}` is a view of `{}` or that tensor itself, and {}", shown,
                               one_line(base.text(), Blanks::Fold, 40), why);
        }
        return "";
    }
    if (receiver.is("identifier") && receiver.text() == "self") {
        const Node made = constructor_of(ctx, site_def, method);
        std::string cls = made ? class_of(made) : "";
        if (cls == "Sequential" && made) {
            // Its last module's output is its output.
            const auto parts = made.field("arguments").named_children();
            cls = !parts.empty() && parts.back().is("call") ? class_of(parts.back()) : "";
        }
        if (!cls.empty() && knowledge::new_tensor_module(cls)) return "";
        return fmt::format("`{}` may return its input or a tensor the module holds", shown);
    }
    if (knowledge::pure_op(method)) return "";
    return fmt::format("`{}` may return a tensor that something else holds", shown);
}

bool Checker::non_aliasing_read(const Node& n) const {
    const Node p = n.parent();
    if (p.is("binary_operator") || p.is("comparison_operator") || p.is("unary_operator")) return true;
    if (p.is("attribute") && p.field("object") == n) {
        const std::string name = text(p.field("attribute"));
        const Node call = p.parent();
        if (!(call.is("call") && call.field("function") == p)) return !knowledge::view_attribute(name);
        return knowledge::number_method(name) ||
               (knowledge::pure_op(name) && !knowledge::may_alias(name) && !knowledge::in_place(name));
    }
    if (p.is("argument_list") && p.parent().is("call")) {
        const Node fn = p.parent().field("function");
        const std::string name = fn.is("attribute") ? text(fn.field("attribute")) : "";
        return ctx.project.external_name(ctx.file, fn).starts_with("torch") && knowledge::pure_op(name) &&
               !knowledge::may_alias(name) && !knowledge::in_place(name);
    }
    return false;
}

std::string Checker::fresh_local(const std::string& name, const std::set<std::uint32_t>& changed) const {
    const Node& def = site_def;
    const Node& stmt = site_stmt;
    const auto params = parameter_names(def);
    if (std::find(params.begin(), params.end(), name) != params.end()) {
        return fmt::format("`{}` is a parameter of the function: the caller may hold it", name);
    }
    std::vector<Node> before;  // the bindings of NAME before the `if`
    std::string why;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (!why.empty() || n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("identifier") && n.text() == name && !analysis::is_read(n) && !n.parent().is("keyword_argument") &&
            !n.parent().is("attribute") && n.end() <= stmt.begin()) {
            Node binder = n.parent();
            while (binder.is("pattern_list") || binder.is("tuple_pattern")) binder = binder.parent();
            before.push_back(binder);
        }
        if (n.is("identifier") && n.text() == name && analysis::is_read(n)) {
            const bool inside = stmt.begin() <= n.begin() && n.end() <= stmt.end();
            const bool between = !before.empty() && n.begin() > before.back().end() && n.begin() < stmt.begin();
            if ((inside && !changed.contains(n.begin()) && !non_aliasing_read(n)) || (between && !non_aliasing_read(n))) {
                why = fmt::format("`{}` is read by `{}`, which may keep a reference to the tensor the branch "
                                  "changes in place",
                                  name, one_line(n.parent().parent().text(), Blanks::Fold, 50));
            }
        }
        return true;
    });
    if (!why.empty()) return why;
    if (before.size() != 1) {
        return before.empty() ? fmt::format("`{}` is not made in this function before the `if`", name)
                              : fmt::format("`{}` is bound more than once before the `if`", name);
    }
    const Node made = before[0];
    if (!made.is("assignment") || !made.field("left").is("identifier") || made.field("right").is("assignment")) {
        return fmt::format("`{}` is bound by `{}`, not by an assignment of a new tensor", name,
                           one_line(made.text(), Blanks::Fold, 50));
    }
    // The assignment runs once before the `if`, on every path to it, outside any loop around it.
    const Node block = made.parent().parent();
    if (!(block.begin() <= stmt.begin() && stmt.end() <= block.end())) {
        return fmt::format("`{}` is made on some paths to the `if` only", name);
    }
    for (Node p = stmt.parent(); p && !(p == block); p = p.parent()) {
        if (p.is("for_statement") || p.is("while_statement")) {
            return fmt::format("`{}` is made outside the loop around the `if`: a reference kept on an earlier pass "
                               "would see the change",
                               name);
        }
    }
    if (auto w = fresh_value(made.field("right")); !w.empty()) return fmt::format("`{}` may not be fresh: {}", name, w);
    return "";
}

std::string Checker::check_fresh() const {
    for (const auto& [name, changed] : changed_in_place) {
        if (auto why = fresh_local(name, changed); !why.empty()) {
            return fmt::format("a branch changes `{}` in place, and {}", name, why);
        }
    }
    return "";
}

}  // namespace graphmend::rules::control_flow
