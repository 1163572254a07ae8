// The modules a class holds in `self.NAME`, for the row-wise check (see rowwise_internal.hpp):
// its assignments, the items of a ModuleList or ModuleDict, and whether anything changes them.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "graphmend/analysis.hpp"
#include "rowwise_internal.hpp"
#include "site.hpp"

namespace graphmend::rules {

namespace rowwise_detail {

// The last component of a dotted name.
std::string_view last_part(std::string_view dotted) {
    const auto dot = dotted.rfind('.');
    return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

// Every `self.NAME = VALUE` in the methods of a class (and of its project bases).
std::vector<std::pair<std::size_t, Node>> self_assignments(const Context& ctx, std::size_t file,
                                                            const std::string& cls, const std::string& name,
                                                            int depth) {
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

}  // namespace rowwise_detail

using syntax::Node;
using namespace rowwise_detail;

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

}  // namespace graphmend::rules
