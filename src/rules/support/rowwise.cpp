// Row-wise computation: which expressions compute row by row, so that running them on
// more rows (every candidate pair of an expert dispatch) leaves each original row's
// result as it was. Known row-wise:
//   - elementwise arithmetic and comparisons, and elementwise tensor methods and torch /
//     torch.nn.functional functions (activations, dtype casts, clamp, pow, ...);
//   - `R @ W`, `R.matmul(W)`, `torch.matmul(R, W)`, `F.linear(R, W, b)` with W free of rows;
//   - `R.reshape(-1, ...)` / `R.view(-1, ...)`, `R.unsqueeze(d)` with d a non-zero literal,
//     `R[:, ...]` / `R[..., ...]` (the rows kept);
//   - calls of torch.nn modules that work on the last dimension (Linear, LayerNorm,
//     RMSNorm, activations, Identity) and of transformers' ACT2FN activations;
//   - calls of project modules and functions whose body does only the above (followed 4
//     calls deep), with the rows passed where the call passes them.
// Dropout is not row-wise here: in training mode it draws one random number per element,
// so more rows would change the numbers every original row gets.
// (rowwise_internal.hpp says which file holds which part.)
#include "rowwise.hpp"

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"
#include "rowwise_internal.hpp"
#include "site.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace graphmend::rules {

using syntax::Node;
using namespace rowwise_detail;

namespace {

// The one `NAME = VALUE` of a local in `def` (not counting nested functions), or invalid.
Node only_assignment(const Node& def, std::string_view name) {
    Node found;
    int count = 0;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if ((n.is("assignment") || n.is("augmented_assignment") || n.is("for_statement")) &&
            n.field("left").is("identifier") && n.field("left").text() == name) {
            ++count;
            if (n.is("assignment")) found = n.field("right");
        }
        return true;
    });
    return count == 1 ? found : Node();
}

// The default of parameter `name` of `__init__` method `fn` of class `cls` (file `file`) when no
// construction of the class in the project passes that parameter, or invalid.
Node unpassed_default(const Context& ctx, std::size_t file, const Node& fn, const std::string& cls,
                      std::string_view name) {
    if (!fn || fn.field("name").text() != "__init__") return {};
    Node value;
    int position = -1;  // among the parameters after self
    int i = -1;
    for (const Node& p : fn.field("parameters").named_children()) {
        ++i;
        if ((p.is("default_parameter") || p.is("typed_default_parameter")) && p.field("name").text() == name) {
            value = p.field("value");
            position = i - 1;
        }
    }
    if (!value || position < 0) return {};
    bool passed = false;
    for (std::size_t f = 0; f < ctx.project.files().size() && !passed; ++f) {
        // Only a file whose text names the class can pass the parameter (both tests below need
        // the name): the others are skipped without a walk (this runs once per query, over
        // every file of the project).
        if (!ctx.project.visible(f, file)) continue;  // another folder project's `cls` is another class
        if (!analysis::mentions(ctx.project.files()[f], cls)) continue;
        syntax::walk(ctx.project.tree_of(f).root(), [&](const Node& n) {
            if (passed) return false;
            // The class named other than in a call of it or its own definition (a subclass, an
            // alias, functools.partial): constructions graphmend cannot see.
            if (n.is("identifier") && n.text() == cls) {
                const Node p = n.parent();
                const bool callee = p.is("call") && p.field("function") == n;
                const bool defined = p.is("class_definition") && p.field("name") == n;
                const bool import = p.is("dotted_name") || p.is("aliased_import");
                // `isinstance(m, C)` / `issubclass(...)`, alone or in a tuple of classes: a test, no construction.
                Node args = p.is("tuple") ? p.parent() : p;
                const bool tested = args.is("argument_list") && args.parent().is("call") &&
                                    (args.parent().field("function").text() == "isinstance" ||
                                     args.parent().field("function").text() == "issubclass");
                if (!callee && !defined && !import && !tested) passed = true;
                return true;
            }
            if (!n.is("call") || n.field("function").text().find(cls) == std::string_view::npos) return true;
            const auto named = ctx.project.class_named(f, n.field("function"));
            if (!named || named->first != file || named->second != cls) return true;
            const auto args = n.field("arguments").named_children();
            int positional = 0;
            for (const Node& a : args) {
                if (a.is("keyword_argument")) {
                    passed = passed || a.field("name").text() == name;
                } else if (a.is("list_splat") || a.is("dictionary_splat")) {
                    passed = true;
                } else {
                    ++positional;
                }
            }
            passed = passed || positional > position;
            return true;
        });
    }
    return passed ? Node() : value;
}

}  // namespace

bool is_elementwise_method(std::string_view name) { return knowledge::elementwise_method(name); }
bool is_elementwise_function(std::string_view name) { return knowledge::elementwise_function(name); }

std::string owner_of(const Node& function) {
    for (Node p = function.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) return std::string(p.field("name").text());
        if (p.is("function_definition")) break;
    }
    return {};
}

// What a maker function returns, when every `return VALUE` of its own body (not of a nested
// function) makes a torch.nn module that the row-wise check takes alike for one argument (a leaf
// of kRowwiseModules: an activation picked by name, say): the first of them, which stands for
// all. A `raise` may stand beside them (an unknown name fails where the module is built, not
// where it runs). Anything else (a bare `return`, another module, a yield): None.
Callable made_module(const Context& ctx, const analysis::FunctionRef& maker, int depth) {
    Callable first;
    bool other = false;
    syntax::walk(maker.node.field("body"), [&](const Node& n) {
        if (other || n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("yield")) other = true;
        if (!n.is("return_statement")) return !other;
        const auto parts = n.named_children();
        // A module made there (`nn.GELU()`), not a class handed back (`nn.GELU`).
        const Callable c = parts.size() == 1 && syntax::without_parens(parts[0]).is("call")
                               ? callable_of(ctx, maker.file, maker.node, owner_of(maker.node), parts[0], depth + 1)
                               : Callable{};
        if (c.kind != Callable::External || !c.external.starts_with("torch.") ||
            !knowledge::rowwise_module(last_part(c.external))) {
            other = true;
        } else if (first.kind == Callable::None) {
            first = c;
        }
        return false;
    });
    return other ? Callable{} : first;
}

Callable callable_of(const Context& ctx, std::size_t file, const Node& def, const std::string& owner,
                     const Node& expr, int depth) {
    const Node e = syntax::without_parens(expr);
    if (!e || depth > 8) return {};
    if (e.is("identifier")) {
        if (def && e.text() != "self") {
            if (const Node value = only_assignment(def, e.text())) return callable_of(ctx, file, def, owner, value, depth + 1);
        }
        if (auto cls = ctx.project.class_named(file, e)) return {Callable::Class, cls->first, cls->second, {}, {}, {}};
        const std::string ext = ctx.project.external_name(file, e);
        if (!ext.empty()) return {Callable::External, file, {}, ext, {}, {}};
        // A parameter of __init__ no construction of the class passes: its default.
        if (const Node fn = analysis::enclosing_function(e); fn && !owner.empty()) {
            if (const Node value = unpassed_default(ctx, file, fn, owner, e.text())) {
                return callable_of(ctx, file, Node(), owner, value, depth + 1);
            }
        }
        if (auto fn = ctx.project.callee(file, e.parent(), owner); fn && e.parent().is("call")) {
            return {Callable::Function, fn->file, {}, {}, fn->node, {}};
        }
        return {};
    }
    if (e.is("attribute")) {
        if (e.field("object").text() == "self" && !owner.empty()) {
            const auto values = self_assignments(ctx, file, owner, text(e.field("attribute")));
            if (values.size() != 1) {
                if (auto m = ctx.project.find_method(file, owner, text(e.field("attribute")))) {
                    return {Callable::Method, m->file, {}, {}, m->node, {}};
                }
                return {};
            }
            const std::string cls_owner = owner;
            const Node value = syntax::without_parens(values[0].second);
            const std::string made =
                value.is("call") ? ctx.project.external_name(values[0].first, value.field("function")) : std::string();
            const std::string_view leaf = last_part(made);
            if ((leaf == "ModuleDict" || leaf == "ModuleList") && value.field("arguments").named_children().empty()) {
                // Filled item by item: `self.NAME[key] = C(...)`, every item of one class.
                const auto items = self_item_assignments(ctx, values[0].first, owner, text(e.field("attribute")));
                return one_class_list(ctx, values[0].first, cls_owner, items, file, depth);
            }
            Callable built = callable_of(ctx, values[0].first, Node(), cls_owner, values[0].second, depth + 1);
            if (built.kind == Callable::ListOf && container_changed(ctx, values[0].first, owner, text(e.field("attribute")))) {
                return {};  // `self.experts.append(Other())` elsewhere: not every element is of one class
            }
            return built;
        }
        if (auto cls = ctx.project.class_named(file, e)) return {Callable::Class, cls->first, cls->second, {}, {}, {}};
        const std::string ext = ctx.project.external_name(file, e);
        if (!ext.empty()) return {Callable::External, file, {}, ext, {}, {}};
        return {};
    }
    if (e.is("subscript")) {
        const Node value = syntax::without_parens(e.field("value"));
        if (value.text() == "ACT2FN") return {Callable::Activation, file, {}, {}, {}, {}};
        // `self[KEY]` in a ModuleDict / ModuleList subclass that fills itself.
        if (value.is("identifier") && value.text() == "self" && !owner.empty()) {
            const Callable items = self_items(ctx, file, owner, e.field("subscript"), depth);
            if (items.kind == Callable::ListOf && items.element) return *items.element;
            return {};
        }
        // An element of a ModuleList / ModuleDict / list of modules.
        Callable list = callable_of(ctx, file, def, owner, value, depth + 1);
        if (list.kind == Callable::ListOf && list.element) return *list.element;
        return {};
    }
    if (e.is("call")) {
        const Node fn = syntax::without_parens(e.field("function"));
        const auto args = e.field("arguments").named_children();
        if (fn.text() == "get_activation" || fn.text().ends_with("ACT2FN.get")) return {Callable::Activation, file, {}, {}, {}, {}};
        // `getattr(CONTAINER, key)`: an element of the container.
        if (fn.is("identifier") && fn.text() == "getattr" && args.size() == 2) {
            Callable list = callable_of(ctx, file, def, owner, args[0], depth + 1);
            if (list.kind == Callable::ListOf && list.element) return *list.element;
            return {};
        }
        // `CONTAINER.values()`: the same elements.
        if (fn.is("attribute") && fn.field("attribute").text() == "values" && args.empty()) {
            Callable list = callable_of(ctx, file, def, owner, fn.field("object"), depth + 1);
            if (list.kind == Callable::ListOf) return list;
            return {};
        }
        const std::string ext = ctx.project.external_name(file, fn);
        const std::string_view leaf = last_part(ext);
        if ((leaf == "ModuleList" || leaf == "ModuleDict" || leaf == "list") && args.size() == 1) {
            Node items = syntax::without_parens(args[0]);
            if (items.is("list_comprehension") || items.is("generator_expression")) {
                items = items.field("body");
            } else if (items.is("list") && !items.named_children().empty()) {
                items = items.named_children()[0];  // checked alike below
                for (const Node& other : syntax::without_parens(args[0]).named_children()) {
                    if (!other.is("call") || other.field("function").text() != items.field("function").text()) return {};
                }
            } else {
                return {};
            }
            Callable element = callable_of(ctx, file, Node(), owner, items, depth + 1);
            if (element.kind == Callable::None) return {};
            Callable out{Callable::ListOf, file, {}, {}, {}, {}};
            out.element = std::make_shared<Callable>(std::move(element));
            return out;
        }
        // `C(...)` makes a module of class C.
        if (auto cls = ctx.project.class_named(file, fn)) return {Callable::Class, cls->first, cls->second, {}, {}, {}};
        if (!ext.empty()) return {Callable::External, file, {}, ext, {}, {}};
        if (fn.is("identifier")) {  // a class held by a local or a parameter with a known default
            Callable c = callable_of(ctx, file, def, owner, fn, depth + 1);
            if (c.kind == Callable::Class || c.kind == Callable::External) return c;
        }
        // A project function or method that makes the module: `self.act_fn =
        // self._get_activation_fn(name)`, whose every return is `nn.GELU()`, `nn.ReLU()`, ...
        if (auto maker = ctx.project.callee(file, e, owner)) return made_module(ctx, *maker, depth);
        return {};
    }
    return {};
}

}  // namespace graphmend::rules
