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
#include "rowwise.hpp"

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"
#include "site.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace graphmend::rules {

using syntax::Node;

namespace {

std::string text(const Node& n) { return std::string(n.text()); }


// The last component of a dotted name.
std::string_view last_part(std::string_view dotted) {
    const auto dot = dotted.rfind('.');
    return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

// Every `self.NAME = VALUE` in the methods of a class (and of its project bases).
std::vector<std::pair<std::size_t, Node>> self_assignments(const Context& ctx, std::size_t file,
                                                            const std::string& cls, const std::string& name,
                                                            int depth = 0) {
    std::vector<std::pair<std::size_t, Node>> out;
    const auto& classes = ctx.project.files()[file].index.classes;
    const auto it = classes.find(cls);
    if (it == classes.end() || depth > 6) return out;
    for (const auto& [method, fn] : it->second.methods) {
        syntax::walk(fn.field("body"), [&](const Node& n) {
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if (n.is("assignment")) {
                const Node left = n.field("left");
                if (left.is("attribute") && left.field("object").text() == "self" &&
                    left.field("attribute").text() == name && n.field("right")) {
                    out.emplace_back(file, n.field("right"));
                }
            }
            return true;
        });
    }
    if (out.empty()) {
        for (const Node& base : it->second.bases) {
            if (auto b = ctx.project.class_named(file, base)) {
                auto more = self_assignments(ctx, b->first, b->second, name, depth + 1);
                out.insert(out.end(), more.begin(), more.end());
            }
        }
    }
    return out;
}

// Every `self.NAME[KEY] = VALUE` in the methods of a class: a ModuleDict / ModuleList filled
// item by item.
std::vector<Node> self_item_assignments(const Context& ctx, std::size_t file, const std::string& cls,
                                        const std::string& name) {
    std::vector<Node> out;
    const auto& classes = ctx.project.files()[file].index.classes;
    const auto it = classes.find(cls);
    if (it == classes.end()) return out;
    for (const auto& [method, fn] : it->second.methods) {
        syntax::walk(fn.field("body"), [&](const Node& n) {
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if (n.is("assignment") && n.field("left").is("subscript")) {
                const Node target = n.field("left").field("value");
                if (target.is("attribute") && target.field("object").text() == "self" &&
                    target.field("attribute").text() == name && n.field("right")) {
                    out.push_back(n.field("right"));
                }
            }
            return true;
        });
    }
    return out;
}

// A ListOf (in `file`) whose element is what each of `items` (expressions of `item_file`, in
// methods of `cls`) makes, when they all make the same known thing; none otherwise.
Callable one_class_list(const Context& ctx, std::size_t item_file, const std::string& cls,
                        const std::vector<Node>& items, std::size_t file, int depth) {
    if (items.empty()) return {};
    Callable element = callable_of(ctx, item_file, Node(), cls, items[0], depth + 1);
    for (const Node& item : items) {
        const Callable other = callable_of(ctx, item_file, Node(), cls, item, depth + 1);
        if (other.kind != element.kind || other.cls != element.cls || other.external != element.external ||
            element.kind == Callable::None) {
            return {};
        }
    }
    Callable out{Callable::ListOf, file, {}, {}, {}, {}};
    out.element = std::make_shared<Callable>(std::move(element));
    return out;
}

// The items of a ModuleDict / ModuleList subclass `cls` that fills itself in its methods
// (`self[f"expert_{i}"] = C(config)`, transformers 5.x): every item of one class, and nothing
// else adds, removes or replaces items (no other `self.update(...)`, `del self[...]`, no items
// passed to `super().__init__`). A module the class assigns to an attribute of itself is an item
// too (nn.Module.__setattr__ registers it): a ModuleDict's key must then be a string or f-string
// whose literal start no such attribute name has, and a ModuleList may assign none. A ListOf, or
// none.
Callable self_items(const Context& ctx, std::size_t file, const std::string& cls, const Node& key, int depth) {
    const auto& classes = ctx.project.files()[file].index.classes;
    const auto it = classes.find(cls);
    if (it == classes.end()) return {};
    bool container = false;
    for (const Node& base : it->second.bases) {
        const std::string ext = ctx.project.external_name(file, base);
        const std::string_view leaf = last_part(ext);
        container = container || leaf == "ModuleDict" || leaf == "ModuleList";
    }
    if (!container) return {};
    std::string prefix;  // the literal start of a string or f-string key
    if (const Node k = syntax::without_parens(key); k && k.is("string")) {
        for (const Node& part : k.named_children()) {
            if (part.is("string_start")) continue;
            if (part.is("string_content")) prefix = text(part);
            break;
        }
    }
    std::vector<Node> items;
    bool changed = false;
    for (const auto& [method, fn] : it->second.methods) {
        syntax::walk(fn.field("body"), [&](const Node& n) {
            if (changed || n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if (n.is("assignment") && n.field("left").is("subscript") &&
                n.field("left").field("value").text() == "self" && n.field("right")) {
                items.push_back(n.field("right"));
            }
            if (n.is("assignment") && n.field("left").is("attribute") &&
                n.field("left").field("object").text() == "self" &&
                (prefix.empty() || n.field("left").field("attribute").text().starts_with(prefix))) {
                changed = true;  // an attribute that may be a module, registered as an item
            }
            if (n.is("delete_statement") ||
                (n.is("augmented_assignment") && n.field("left").is("subscript") &&
                 n.field("left").field("value").text() == "self")) {
                changed = true;
            }
            if (n.is("call") && n.field("function").is("attribute")) {
                const Node obj = n.field("function").field("object");
                const std::string_view m = n.field("function").field("attribute").text();
                if (obj.text() == "self") {
                    changed = changed || m == "append" || m == "extend" || m == "insert" || m == "update" ||
                              m == "__setitem__" || m == "__delitem__" || m == "add_module" ||
                              m == "register_module" || m == "setdefault" || m == "pop" || m == "clear";
                }
                if (obj.text() == "super()" && m == "__init__" && !n.field("arguments").named_children().empty()) {
                    changed = true;
                }
            }
            return !changed;
        });
    }
    if (changed) return {};
    return one_class_list(ctx, file, cls, items, file, depth);
}

// True when a method of the class calls a mutating method on `self.NAME` (append, extend,
// insert, update, ...) or assigns one of its items.
bool container_changed(const Context& ctx, std::size_t file, const std::string& cls, const std::string& name) {
    const auto& classes = ctx.project.files()[file].index.classes;
    const auto it = classes.find(cls);
    if (it == classes.end()) return false;
    bool changed = false;
    for (const auto& [method, fn] : it->second.methods) {
        syntax::walk(fn.field("body"), [&](const Node& n) {
            if (changed) return false;
            auto is_self_attr = [&](const Node& x) {
                return x.is("attribute") && x.field("object").text() == "self" && x.field("attribute").text() == name;
            };
            if (n.is("call") && n.field("function").is("attribute") && is_self_attr(n.field("function").field("object"))) {
                const std::string_view m = n.field("function").field("attribute").text();
                changed = m == "append" || m == "extend" || m == "insert" || m == "update" || m == "__setitem__" ||
                          m == "add_module" || m == "setdefault";
            }
            if (n.is("assignment") && n.field("left").is("subscript") && is_self_attr(n.field("left").field("value"))) {
                changed = true;
            }
            return !changed;
        });
    }
    return changed;
}

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

// `torch.einsum("b,be->be", w, x)`: row-wise when every operand holding rows has the row
// letter first, the others do not have it, and the output keeps it first.
bool einsum_rowwise(const std::vector<Node>& args, const std::vector<bool>& row_args) {
    if (args.size() < 2 || !args[0].is("string")) return false;
    for (const Node& c : args[0].named_children()) {
        if (c.is("interpolation")) return false;
    }
    std::string eq(args[0].text());
    if (eq.size() < 2 || (eq.front() != '"' && eq.front() != '\'') || eq.find("...") != std::string::npos) return false;
    eq = eq.substr(1, eq.size() - 2);
    eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
    const auto arrow = eq.find("->");
    if (arrow == std::string::npos) return false;
    std::vector<std::string> inputs;
    std::string cur;
    for (char ch : eq.substr(0, arrow)) {
        if (ch == ',') {
            inputs.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    inputs.push_back(cur);
    const std::string out = eq.substr(arrow + 2);
    if (inputs.size() != args.size() - 1 || out.empty()) return false;
    const char row = out[0];
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const bool is_row = row_args[i + 1];
        if (is_row && (inputs[i].empty() || inputs[i][0] != row)) return false;
        if (!is_row && inputs[i].find(row) != std::string::npos) return false;
    }
    return true;
}

// Whether class `cls` of `file`, which inherits `forward` from class `base` of another file,
// makes a `self.NAME` that base's methods read mean something else: a method of that name
// found first on another class, or bindings of NAME that base's own do not account for (the
// name, or ""). The row-wise check reads an inherited forward in its own file, with base's
// bindings and methods.
std::string overridden_across_files(const Context& ctx, std::size_t file, const std::string& cls,
                                    const analysis::FunctionRef& forward, const Node& base_node,
                                    const std::string& base) {
    std::set<std::string> names;
    syntax::walk(base_node.field("body"), [&](const Node& n) {
        if (n.is("attribute") && n.field("object").text() == "self") names.insert(std::string(n.field("attribute").text()));
        return true;
    });
    for (const std::string& name : names) {
        const auto mine = ctx.project.find_method(file, cls, name);
        const auto theirs = ctx.project.find_method(forward.file, base, name);
        if (mine.has_value() != theirs.has_value() || (mine && mine->node != theirs->node)) return name;
        const auto bound = self_assignments(ctx, file, cls, name);
        const auto base_bound = self_assignments(ctx, forward.file, base, name);
        const auto same = [](const auto& a, const auto& b) { return a.first == b.first && a.second == b.second; };
        if (!std::equal(bound.begin(), bound.end(), base_bound.begin(), base_bound.end(), same)) return name;
    }
    return {};
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

Callable modules_or_none(const Context& ctx, std::size_t file, const std::string& owner, const std::string& name,
                         bool& may_hold_none) {
    may_hold_none = false;
    const auto values = self_assignments(ctx, file, owner, name);
    if (values.empty() || container_changed(ctx, file, owner, name)) return {};
    std::optional<Callable> element;
    for (const auto& [f, v] : values) {
        const Node value = syntax::without_parens(v);
        if (!value.is("call") || last_part(ctx.project.external_name(f, value.field("function"))) != "ModuleList") return {};
        const auto args = value.field("arguments").named_children();
        if (args.size() != 1) return {};
        const Node items = syntax::without_parens(args[0]);
        if (!items.is("list_comprehension")) return {};
        Node body = syntax::without_parens(items.field("body"));
        if (body.is("conditional_expression")) {
            const auto parts = body.named_children();  // value, test, alternative
            if (parts.size() != 3) return {};
            const Node a = syntax::without_parens(parts[0]);
            const Node b = syntax::without_parens(parts[2]);
            if (a.is("none") == b.is("none")) return {};
            body = a.is("none") ? b : a;
            may_hold_none = true;
        }
        if (!body.is("call")) return {};
        Callable c = callable_of(ctx, f, Node(), owner, body, 1);
        if (c.kind != Callable::Class) return {};
        if (element && (element->file != c.file || element->cls != c.cls)) return {};
        element = std::move(c);
    }
    return *element;
}

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

std::optional<bool> RowFlow::call(const Node& e) {
    const Node fn = syntax::without_parens(e.field("function"));
    const auto args = e.field("arguments").named_children();
    std::vector<bool> row_args;
    for (const Node& a : args) {
        const Node v = a.is("keyword_argument") ? a.field("value") : a;
        if (a.is("list_splat") || a.is("dictionary_splat")) {
            if (holds_rows(a)) {
                fail(a, "rows passed through * or **");
                return std::nullopt;
            }
            row_args.push_back(false);
            continue;
        }
        const auto r = expr(v);
        if (!r) return std::nullopt;
        row_args.push_back(*r);
    }
    const bool any_row_arg = std::find(row_args.begin(), row_args.end(), true) != row_args.end();
    // A method of the rows.
    if (fn.is("attribute")) {
        const auto recv = expr(fn.field("object"));
        if (!recv) return std::nullopt;
        if (*recv) {
            const std::string m = text(fn.field("attribute"));
            if (knowledge::elementwise_method(m)) return true;
            if ((m == "matmul" || m == "mm") && !any_row_arg) return true;
            // `X[None, I].reshape(-1, D)`: the rows of a 2-D X back in one dimension (Mixtral's idiom).
            // Anywhere else a reshape can merge or split rows.
            const Node obj = syntax::without_parens(fn.field("object"));
            if ((m == "reshape" || m == "view") && args.size() == 2 && args[0].text() == "-1" && !any_row_arg &&
                obj.is("subscript") && obj.named_children().size() == 3 && obj.named_children()[1].is("none")) {
                return true;
            }
            if (m == "unsqueeze" && args.size() == 1 && (args[0].text() == "-1" ||
                                                         (args[0].is("integer") && args[0].text() != "0"))) {
                return true;
            }
            fail(e, fmt::format("`.{}()` on the rows is not known to work row by row", m));
            return std::nullopt;
        }
    }
    if (!any_row_arg) return false;  // computes on values that hold no rows
    // torch.X / F.X.
    const std::string ext = ctx_.project.external_name(file_, fn);
    if (ext.starts_with("torch.")) {
        const std::string_view leaf = last_part(ext);
        if (knowledge::elementwise_function(leaf)) return true;
        if (leaf == "einsum" && einsum_rowwise(args, row_args)) return true;
        if ((leaf == "linear" || leaf == "matmul" || leaf == "layer_norm" || leaf == "rms_norm") && row_args[0] &&
            std::count(row_args.begin(), row_args.end(), true) == 1) {
            return true;
        }
    }
    // A module or project function.
    if (fn.is("identifier") && known.contains(text(fn))) return callable(e, known.at(text(fn)), row_args);
    if (fn.is("identifier") && elements.contains(text(fn))) {
        const Callable list = callable_of(ctx_, file_, def_, owner_, elements.at(text(fn)), 0);
        if (list.kind == Callable::ListOf && list.element) return callable(e, *list.element, row_args);
    }
    const Callable c = callable_of(ctx_, file_, def_, owner_, fn, 0);
    return callable(e, c, row_args);
}

std::optional<bool> RowFlow::callable(const Node& e, const Callable& c, const std::vector<bool>& row_args) {
    switch (c.kind) {
        case Callable::Activation:
            return true;
        case Callable::External: {
            const std::string_view leaf = last_part(c.external);
            if (c.external.starts_with("torch.") && knowledge::rowwise_module(leaf) && row_args.size() == 1) return true;
            if (leaf == "Dropout" && c.external.starts_with("torch.") && row_args.size() == 1) {
                needs_eval = true;  // identity in eval mode; the static form then requires it
                return true;
            }
            if (leaf == "Dropout") {
                fail(e, "a Dropout: in training it draws a random number per element, so more rows change them");
            } else {
                fail(e, fmt::format("`{}` is not known to work row by row", c.external));
            }
            return std::nullopt;
        }
        case Callable::Class: {
            const auto forward = ctx_.project.find_method(c.file, c.cls, "forward");
            if (!forward) {
                fail(e, fmt::format("`{}` has no forward graphmend can read", c.cls));
                return std::nullopt;
            }
            // `self.NAME` in an inherited forward is what the class itself binds: its own
            // `__init__` may bind NAME again, or a method override the base's (the base's
            // bindings alone would miss it). Across files the base's file resolves the names, so
            // the base's class is the owner, and a class that changes what NAME means is refused.
            if (forward->file != c.file) {
                const std::string base = owner_of(forward->node);
                Node base_node;
                for (Node p = forward->node.parent(); p && !base_node; p = p.parent()) {
                    if (p.is("class_definition")) base_node = p;
                }
                if (base != c.cls && base_node) {
                    if (const auto name = overridden_across_files(ctx_, c.file, c.cls, *forward, base_node, base);
                        !name.empty()) {
                        fail(e, fmt::format("`{}` inherits its forward from `{}` in another file and changes what "
                                            "`self.{}` is there",
                                            c.cls, base, name));
                        return std::nullopt;
                    }
                }
            }
            return function(e, forward->file, forward->node, row_args, true,
                            forward->file == c.file ? c.cls : std::string());
        }
        case Callable::Method:
            return function(e, c.file, c.function, row_args, true);
        case Callable::Function:
            return function(e, c.file, c.function, row_args, false);
        default:
            fail(e, fmt::format("`{}` could not be resolved to code graphmend can read", e.field("function").text()));
            return std::nullopt;
    }
}

std::optional<bool> RowFlow::function(const Node& call, std::size_t file, const Node& fn,
                                      const std::vector<bool>& row_args, bool method, const std::string& owner) {
    if (depth_ >= 4) {
        fail(call, "the computation on the rows goes more than 4 calls deep");
        return std::nullopt;
    }
    std::vector<Node> params;
    for (const Node& p : fn.field("parameters").named_children()) params.push_back(p);
    if (method && !params.empty()) params.erase(params.begin());
    const auto call_args = call.field("arguments").named_children();
    RowFlow inner(ctx_, file, fn, !method ? std::string() : owner.empty() ? owner_of(fn) : owner, depth_ + 1);
    for (std::size_t i = 0; i < call_args.size(); ++i) {
        if (!row_args[i]) continue;
        std::string name;
        if (call_args[i].is("keyword_argument")) {
            name = text(call_args[i].field("name"));
            const bool named = std::any_of(params.begin(), params.end(), [&](const Node& p) {
                const Node n = p.is("identifier") ? p : p.field("name") ? p.field("name")
                                                      : p.named_children().empty() ? Node() : p.named_children()[0];
                return n && n.is("identifier") && n.text() == name;
            });
            if (!named) {  // it would land in **kwargs, where the rows are not followed
                fail(call, fmt::format("rows passed as `{}=`, which no parameter names", name));
                return std::nullopt;
            }
        } else if (i < params.size() && (params[i].is("identifier") || params[i].is("typed_parameter"))) {
            name = params[i].is("identifier") ? text(params[i]) : text(params[i].named_children()[0]);
        } else {
            fail(call, "rows passed to a parameter graphmend cannot match");
            return std::nullopt;
        }
        inner.rows.insert(name);
    }
    const auto out = inner.block(fn.field("body"));
    needs_eval = needs_eval || inner.needs_eval;
    if (!out) {
        fail(call, fmt::format("in `{}`: {}", fn.field("name").text(), inner.why()));
        return std::nullopt;
    }
    return *out;
}

std::optional<bool> RowFlow::block(const Node& body) {
    bool returns_rows = false;
    for (const Node& s : body.named_children()) {
        if (s.is("comment") || s.is("pass_statement")) continue;
        if (s.is("expression_statement")) {
            const auto parts = s.named_children();
            if (parts.size() == 1 && parts[0].is("string")) continue;  // a docstring
            if (parts.size() == 1 && (parts[0].is("assignment") || parts[0].is("augmented_assignment"))) {
                if (!assignment(parts[0])) return std::nullopt;
                continue;
            }
            fail(s, "a statement that is not an assignment");
            return std::nullopt;
        }
        if (s.is("return_statement")) {
            const auto parts = s.named_children();
            if (parts.empty()) continue;
            const auto r = expr(parts[0]);
            if (!r) return std::nullopt;
            returns_rows = returns_rows || *r;
            continue;
        }
        if (s.is("if_statement") && !reads_row_values(s.field("condition"))) {
            // Each branch starts from the rows before the `if`; after it, a local holds rows
            // when any branch left rows in it.
            const std::set<std::string> before = rows;
            std::set<std::string> after = rows;
            for (const Node& part : s.named_children()) {
                Node b = part.is("block") ? part : part.field("consequence") ? part.field("consequence") : part.field("body");
                if (part == s.field("condition")) continue;
                if (!b || !b.is("block")) continue;
                rows = before;
                const auto r = block(b);
                if (!r) return std::nullopt;
                returns_rows = returns_rows || *r;
                after.insert(rows.begin(), rows.end());
            }
            rows = after;
            continue;
        }
        fail(s, fmt::format("{} in the computation on the rows", construct_name(s)));
        return std::nullopt;
    }
    return returns_rows;
}

// `A, B = X.chunk(N, dim=D)` with X rows, N the number of names and D a dimension after the
// rows' (D >= 1, or -1 on the output of a matrix product, which has two dimensions at least):
// each part holds the rows' own columns (Mixtral's `gate, up = F.linear(x, w).chunk(2, dim=-1)`).
bool RowFlow::chunk_of_rows(const Node& a) {
    const Node left = a.field("left");
    const Node call = syntax::without_parens(a.field("right"));
    if (!call.is("call") || !call.field("function").is("attribute") ||
        call.field("function").field("attribute").text() != "chunk") {
        return false;
    }
    const auto args = call.field("arguments").named_children();
    if (args.size() != 2 || !args[0].is("integer")) return false;
    const Node dim = args[1].is("keyword_argument") ? args[1].field("value") : args[1];
    if (args[1].is("keyword_argument") && args[1].field("name").text() != "dim") return false;
    std::vector<std::string> names;
    for (const Node& t : left.named_children()) {
        if (!t.is("identifier")) return false;
        names.push_back(text(t));
    }
    if (std::to_string(names.size()) != args[0].text()) return false;
    const Node recv = syntax::without_parens(call.field("function").field("object"));
    const auto r = expr(recv);
    if (!r || !*r) return false;
    bool product = false;
    if (recv.is("call")) {
        const std::string name = ctx_.project.external_name(file_, recv.field("function"));  // outlives `leaf`
        const std::string_view leaf = last_part(name);
        product = leaf == "linear" || leaf == "matmul" ||
                  (recv.field("function").is("attribute") && recv.field("function").field("attribute").text() == "matmul");
    }
    const bool after_rows = (dim.is("integer") && dim.text() != "0") || (dim.text() == "-1" && product);
    if (!after_rows) return false;
    rows.insert(names.begin(), names.end());
    return true;
}

bool RowFlow::assignment(const Node& a) {
    if (strict) return strict_assignment(a);  // row_layout.cpp
    const Node left = a.field("left");
    if (a.is("assignment") && (left.is("pattern_list") || left.is("tuple_pattern")) && holds_rows(a.field("right"))) {
        if (chunk_of_rows(a)) return true;
        const Node r = syntax::without_parens(a.field("right"));
        if (why_.empty() && r.is("call") && r.field("function").is("attribute") &&
            r.field("function").field("attribute").text() == "chunk") {
            return fail(a, "a `.chunk()` of the rows not shown to split their columns (dim >= 1, or -1 on the output "
                           "of a matrix product, into as many names as parts)");
        }
    }
    if (!left.is("identifier")) {
        if (holds_rows(a)) return fail(a, "rows stored outside a local");
        // In a function the rows are passed to: state it stores would be stored for experts or
        // rows the original did not run it for.
        if (depth_ > 0) return fail(a, fmt::format("`{}` stores state in the computation on the rows", left.text()));
        return true;
    }
    const auto r = expr(a.field("right"));
    if (!r) return false;
    const std::string name = text(left);
    if (a.is("augmented_assignment")) {
        if (*r) rows.insert(name);
        return true;
    }
    if (*r) {
        rows.insert(name);
    } else {
        rows.erase(name);
    }
    return true;
}

}  // namespace graphmend::rules
