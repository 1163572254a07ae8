// Ints read back from a tensor built from ints: see src/rules/gm503_host_int_values/host_ints.hpp.
//
// What is proven before a read uses the list (each failure is the site's reason):
// - the tensor: a local assigned once, `T = torch.as_tensor(L, ...)` or `torch.tensor(L, ...)`
//   with dtype torch.long / torch.int64 or none; L a local assigned once, `L = []`, filled only
//   by `L.append(E)` before T is made, E a tuple of ints (or an int) computed from shapes
//   (`h, w = x.shape`, `x.size(k)`, `len(...)`, literals, + - * //): T holds exactly L's values;
// - neither changes afterwards: L is only read (iterated, indexed, `len`, passed to project
//   functions that only read it), and T is read only through ops that make new tensors (no
//   in-place method, `out=`, item assignment, `+=`, no alias or view that escapes), in its
//   function and in every project function it is passed to;
// - across calls: a parameter P read back gets, at every call in the project, a tensor so
//   built, and a sibling parameter S gets the list it was built from (then the read uses S);
//   or, when there is no such S, P is only iterated by reads fixed here, and each call passes
//   the list instead (then the function is not changed);
// - the values read: each element (a 0-d long tensor before, a Python int after) is used only
//   where the two give the same result: sizes and steps of torch factories and shape methods,
//   slice bounds, + - * // with ints and other such elements (a local accumulating them
//   included), `x - 0.5`-like offsets given to `torch.linspace`, and products / quotients with
//   a tensor subscript that keeps a dimension (the tensor's dtype wins either way).
#include "host_ints.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "graphmend/knowledge.hpp"
#include "rules/support/tensor_test.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

std::string text(const Node& n) { return std::string(n.text()); }
std::uint32_t line_of(const Node& n) { return n.position().line; }

// The outermost parentheses around `n` (`n` itself when there are none).
Node outer(Node n) {
    while (n.parent().is("parenthesized_expression")) n = n.parent();
    return n;
}

bool within(const Node& inner, const Node& outer_node) {
    return outer_node && outer_node.begin() <= inner.begin() && inner.end() <= outer_node.end();
}

bool is_scope(const Node& n) {
    return n.is("function_definition") || n.is("class_definition") || n.is("lambda");
}

bool is_comprehension(const Node& n) {
    return n.is("list_comprehension") || n.is("generator_expression") || n.is("set_comprehension") ||
           n.is("dictionary_comprehension");
}

// The identifiers a target pattern binds.
std::vector<Node> target_names(const Node& target) {
    std::vector<Node> out;
    syntax::walk(target, [&](const Node& t) {
        if (t.is("identifier")) out.push_back(t);
        return !t.is("attribute") && !t.is("subscript");
    });
    return out;
}

// The statements (or expressions) of `def`'s own scope that bind `name`, comprehensions
// excluded (they have a scope of their own).
std::vector<Node> bindings(const Node& def, std::string_view name) {
    std::vector<Node> out;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (is_scope(n)) {
            if (!n.is("lambda") && n.field("name").text() == name) out.push_back(n);
            return false;
        }
        if (is_comprehension(n)) return false;
        Node target;
        if (n.is("assignment") || n.is("augmented_assignment") || n.is("for_statement")) target = n.field("left");
        if (n.is("named_expression")) target = n.field("name");
        if (n.is("as_pattern_target") || n.is("delete_statement") || n.is("global_statement") ||
            n.is("nonlocal_statement") || n.is("import_statement") || n.is("import_from_statement")) {
            target = n;
        }
        if (target) {
            for (const Node& t : target_names(target)) {
                if (t.text() == name) {
                    out.push_back(n);
                    break;
                }
            }
        }
        return true;
    });
    return out;
}

struct Param {
    std::string name;
    bool positional = true;
};

// The parameters of `def` in order (`*args` and what follows are keyword-only).
std::vector<Param> params_of(const Node& def) {
    std::vector<Param> out;
    bool positional = true;
    for (const Node& p : def.field("parameters").named_children()) {
        if (p.is("list_splat_pattern") || p.is("keyword_separator") || p.is("dictionary_splat_pattern")) {
            positional = false;
            continue;
        }
        Node n = p.is("identifier") ? p : p.field("name");
        if (!n && p.is("typed_parameter") && !p.named_children().empty()) n = p.named_children()[0];
        if (n && n.is("identifier")) out.push_back({text(n), positional});
    }
    return out;
}

bool is_param(const Node& def, std::string_view name) {
    for (const auto& p : params_of(def)) {
        if (p.name == name) return true;
    }
    return false;
}

// True when `def` is a method called with its receiver bound (not a staticmethod).
bool bound_method(const Node& def) {
    Node p = def.parent();
    bool is_static = false;
    if (p.is("decorated_definition")) {
        for (const Node& d : p.named_children()) {
            if (d.is("decorator") && d.text() == "@staticmethod") is_static = true;
        }
        p = p.parent();
    }
    return p.is("block") && p.parent().is("class_definition") && !is_static;
}

// The argument `call` passes for parameter `param` of `def`; invalid when it passes none.
// `ok` is false when the arguments cannot be matched to the parameters (`*a`, `**k`).
Node argument_for(const Node& call, const Node& def, std::string_view param, bool& ok) {
    ok = true;
    auto params = params_of(def);
    std::size_t pos = 0;
    if (bound_method(def)) {
        const Node fn = call.field("function");
        // `Class.method(obj, ...)` passes the receiver as an argument: not matched here.
        if (fn.is("attribute") && fn.field("attribute").text() == def.field("name").text()) {
            const std::string object = text(fn.field("object"));
            if (object != "self" && object != "cls" && object != "super()") {
                ok = false;
                return {};
            }
        }
        pos = 1;
    }
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("comment")) continue;
        if (a.is("list_splat") || a.is("dictionary_splat")) {
            ok = false;
            return {};
        }
        if (a.is("keyword_argument")) {
            if (a.field("name").text() == param) return a.field("value");
            continue;
        }
        if (pos < params.size() && params[pos].positional) {
            if (params[pos].name == param) return a;
            ++pos;
        }
    }
    return {};
}

// Calls `visit(node, def)` on every node under `root`, with `def` the innermost
// function_definition around it (invalid at module level); `visit` returns false to stop
// descending. Finding the function of a node by climbing parents costs a descent from the root
// per step in tree-sitter: this walk knows it as it goes.
template <typename Visit>
void walk_with_function(const Node& root, const Node& def, Visit&& visit) {
    syntax::walk(root, [&](const Node& n) {
        if (n.is("function_definition") && !(n == root)) {
            if (!visit(n, def)) return false;
            walk_with_function(n, n, visit);
            return false;
        }
        return visit(n, def);
    });
}

// The parameter of `def` that the argument `arg` (a keyword_argument, or a positional argument
// of the argument_list `args`) binds; "" when none does by name or position.
std::string parameter_taking(const Node& def, const Node& args, const Node& arg) {
    if (arg.is("keyword_argument")) return text(arg.field("name"));
    const auto ps = params_of(def);
    std::size_t pos = bound_method(def) ? 1 : 0;
    for (const Node& a : args.named_children()) {
        if (a.is("comment")) continue;
        if (a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) break;
        if (a == arg) return pos < ps.size() && ps[pos].positional ? ps[pos].name : "";
        ++pos;
    }
    return "";
}

struct CallSite {
    std::size_t file = 0;
    Node call;
};

// --- ints computed from shapes ---------------------------------------------------------------

bool int_expr(const Node& def, Node e, int depth = 0);

// True when every binding of `name` in def gives it an int from a shape.
bool int_name(const Node& def, std::string_view name, int depth) {
    const auto bs = bindings(def, name);
    if (bs.empty() || depth > 6) return false;
    for (const Node& b : bs) {
        if (!b.is("assignment")) return false;
        const Node left = b.field("left");
        const Node right = syntax::without_parens(b.field("right"));
        if (!right) return false;
        if (left.is("identifier")) {
            if (!int_expr(def, right, depth + 1)) return false;
            continue;
        }
        // `b, c, h, w = x.shape` / `x.size()`
        if (!(left.is("pattern_list") || left.is("tuple_pattern"))) return false;
        for (const Node& t : left.named_children()) {
            if (!t.is("identifier")) return false;
        }
        const bool shape = (right.is("attribute") && right.field("attribute").text() == "shape") ||
                           (right.is("call") && right.field("function").is("attribute") &&
                            right.field("function").field("attribute").text() == "size" &&
                            right.field("arguments").named_children().empty());
        if (!shape) return false;
    }
    return true;
}

bool int_expr(const Node& def, Node e, int depth) {
    e = syntax::without_parens(e);
    if (e.is("integer")) return true;
    if (e.is("identifier")) return int_name(def, e.text(), depth);
    if (e.is("binary_operator")) {
        const auto op = e.field("operator").text();
        return (op == "+" || op == "-" || op == "*" || op == "//") && int_expr(def, e.field("left"), depth + 1) &&
               int_expr(def, e.field("right"), depth + 1);
    }
    if (e.is("subscript")) {  // x.shape[k]
        const Node v = e.field("value");
        const auto idx = e.named_children();
        return v.is("attribute") && v.field("attribute").text() == "shape" && idx.size() == 2 &&
               idx[1].is("integer");
    }
    if (e.is("call")) {
        const Node fn = e.field("function");
        const auto args = e.field("arguments").named_children();
        if (fn.is("identifier") && fn.text() == "len" && args.size() == 1) return true;
        if (fn.is("attribute") && fn.field("attribute").text() == "size" && args.size() == 1 && args[0].is("integer")) {
            return true;
        }
        if (fn.is("attribute") && (fn.field("attribute").text() == "dim" || fn.field("attribute").text() == "numel" ||
                                   fn.field("attribute").text() == "ndimension") &&
            args.empty()) {
            return true;
        }
    }
    return false;
}

// --- the origin of a tensor read back -------------------------------------------------------

struct Origin {
    bool found = false;          // the name holds a tensor built from a list of ints
    std::string refused;         // why the list cannot stand for it ("" when it can)
    std::string list;            // the list's expression in the function ("" when none there)
    int rank = 0;                // 1: a list of ints; 2: a list of tuples
    std::size_t width = 0;       // rank 2: the tuples' length
    Node list_node;              // the list's local (origin where it is made)
};

struct Matcher {
    const Context& ctx;
    std::set<std::tuple<std::size_t, std::uint32_t, std::string>> visiting;

    std::string file_name(std::size_t f) const {
        const std::string& p = ctx.project.files()[f].path;
        return p.substr(p.find_last_of('/') + 1);
    }

    // True when `call` is to a torch function (not in place, no `out=`).
    bool torch_call(std::size_t f, const Node& call) const {
        const Node fn = call.field("function");
        const std::string name = ctx.project.external_name(f, fn);
        if (!name.starts_with("torch.") || name.ends_with("_")) return false;
        for (const Node& a : call.field("arguments").named_children()) {
            if (a.is("keyword_argument") && a.field("name").text() == "out") return false;
        }
        return true;
    }

    std::optional<analysis::FunctionRef> project_callee(std::size_t f, const Node& call) const {
        if (auto ref = ctx.values.callee(f, call)) return ref;
        const Node fn = call.field("function");
        if (fn.is("identifier")) return module_var_forward(f, fn);
        return std::nullopt;
    }

    // The forward of the modules a local iterates: `for i, layer in enumerate(self.layers)`
    // with `self.layers = nn.ModuleList([Layer(...) for ...])` (or a list of Layer(...)) in
    // the class's __init__.
    std::optional<analysis::FunctionRef> module_var_forward(std::size_t f, const Node& id,
                                                            const Node& enclosing = {}) const {
        Node fn = enclosing;
        if (!fn) {
            fn = analysis::enclosing_function(id);
            while (fn && !fn.is("function_definition")) fn = analysis::enclosing_function(fn);
        }
        if (!fn) return std::nullopt;
        const auto bs = bindings(fn, id.text());
        if (bs.size() != 1 || !bs[0].is("for_statement")) return std::nullopt;
        Node right = syntax::without_parens(bs[0].field("right"));
        Node left = syntax::without_parens(bs[0].field("left"));
        if (right.is("call") && right.field("function").text() == "enumerate") {
            const auto args = right.field("arguments").named_children();
            if (args.size() != 1) return std::nullopt;
            right = syntax::without_parens(args[0]);
            const auto parts = left.named_children();
            if (!(left.is("pattern_list") || left.is("tuple_pattern")) || parts.size() != 2) return std::nullopt;
            left = parts[1];
        }
        if (!left.is("identifier") || left.text() != id.text()) return std::nullopt;
        if (!right.is("attribute") || right.field("object").text() != "self") return std::nullopt;
        const std::string attr = text(right.field("attribute"));
        std::string owner;
        for (Node p = fn.parent(); p; p = p.parent()) {
            if (p.is("function_definition")) return std::nullopt;
            if (p.is("class_definition")) {
                owner = text(p.field("name"));
                break;
            }
        }
        const auto& classes = ctx.project.files()[f].index.classes;
        const auto cls = classes.find(owner);
        if (cls == classes.end()) return std::nullopt;
        const auto init = cls->second.methods.find("__init__");
        if (init == cls->second.methods.end()) return std::nullopt;
        std::vector<Node> values;
        syntax::walk(init->second.field("body"), [&](const Node& n) {
            if (n.is("assignment") && n.field("left").text() == "self." + attr) values.push_back(n.field("right"));
            return !is_scope(n) || n == init->second;
        });
        if (values.size() != 1) return std::nullopt;
        const Node v = syntax::without_parens(values[0]);
        if (!v.is("call") || !v.field("function").text().ends_with("ModuleList")) return std::nullopt;
        const auto args = v.field("arguments").named_children();
        if (args.size() != 1) return std::nullopt;
        std::vector<Node> makers;
        const Node a = syntax::without_parens(args[0]);
        if (a.is("list_comprehension")) {
            makers.push_back(syntax::without_parens(a.field("body")));
        } else if (a.is("list")) {
            for (const Node& e : a.named_children()) makers.push_back(syntax::without_parens(e));
        }
        std::optional<analysis::FunctionRef> found;
        for (const Node& mk : makers) {
            if (!mk.is("call")) return std::nullopt;
            const auto c = ctx.project.class_named(f, mk.field("function"));
            if (!c) return std::nullopt;
            const auto fwd = ctx.project.find_method(c->first, c->second, "forward");
            if (!fwd || (found && !(found->node == fwd->node))) return std::nullopt;
            found = fwd;
        }
        return found;
    }

    // Why the elements of `name` a loop or comprehension binds may be changed (views of it).
    std::string element_changes(std::size_t f, const Node& loop, const std::string& name) const {
        std::set<std::string> names;
        for (const Node& t : target_names(loop.field("left"))) names.insert(text(t));
        Node region = loop.is("for_in_clause") ? loop.parent() : loop.field("body");
        std::string why;
        syntax::walk(region, [&](const Node& n) {
            if (!why.empty() || is_scope(n)) return false;
            if (!n.is("identifier") || !names.contains(text(n)) || !is_read(n)) return true;
            const Node o = outer(n);
            const Node p = o.parent();
            if (p.is("augmented_assignment") && p.field("left") == o) {
                why = fmt::format("line {} changes an element of `{}` in place", line_of(p), name);
            } else if (p.is("attribute") && p.field("object") == o) {
                const auto attr = p.field("attribute").text();
                if (attr.ends_with("_") || knowledge::shares_storage(attr, "int64") ||
                    knowledge::view_attribute(attr)) {
                    why = fmt::format("`{}` at line {} may change an element of `{}`", p.text(), line_of(p), name);
                }
            } else if (p.is("subscript") && p.field("value") == o) {
                why = fmt::format("`{}` at line {} is a view of an element of `{}`", p.text(), line_of(p), name);
            } else if (p.is("assignment") || p.is("return_statement") || p.is("list") || p.is("tuple") ||
                       p.is("expression_list")) {
                why = fmt::format("an element of `{}` is kept at line {}", name, line_of(p));
            } else if (p.is("argument_list") || p.is("keyword_argument")) {
                const Node call = p.is("argument_list") ? p.parent() : p.parent().parent();
                const Node fn = call.field("function");
                const bool tensor_method =
                    fn.is("attribute") && !fn.field("attribute").text().ends_with("_") &&
                    (knowledge::size_method(fn.field("attribute").text()) ||
                     ctx.values.eval(f, fn.field("object")).only(analysis::kTensor));
                if (!torch_call(f, call) && !tensor_method) {
                    why = fmt::format("an element of `{}` is passed to `{}` at line {}", name, fn.text(),
                                      line_of(call));
                }
            }
            return why.empty();
        });
        return why;
    }

    // Every call of `def` (in `file`) in the project's files, and why they cannot all be known
    // ("" when they can).
    std::vector<CallSite> call_sites(std::size_t file, const Node& def, std::string& why) const {
        std::vector<CallSite> out;
        const std::string name = text(def.field("name"));
        const bool forward = name == "forward";
        const auto& files = ctx.project.files();
        // A file can call the function only if it names it; a module's forward, only if it names
        // the class (to make the module, or to import it): the calls the analysis resolves.
        std::string key = name;
        if (forward) {
            for (Node p = def.parent(); p; p = p.parent()) {
                if (p.is("class_definition")) {
                    key = text(p.field("name"));
                    break;
                }
            }
        }
        const bool method = def.parent().is("block") && def.parent().parent().is("class_definition");
        const bool decorated_method = def.parent().is("decorated_definition") && def.parent().parent().is("block") &&
                                      def.parent().parent().parent().is("class_definition");
        std::vector<std::size_t> naming;
        for (std::size_t f = 0; f < files.size(); ++f) {
            // Only files that can name `def`'s file: another folder project's `key` is another function.
            if (ctx.project.visible(f, file) && analysis::mentions(files[f], key)) {
                naming.push_back(f);
            }
        }
        for (const std::size_t f : naming) {
            const auto& index = files[f].index;
            walk_with_function(ctx.project.tree_of(f).root(), Node(), [&](const Node& n, const Node& enclosing) {
                if (!why.empty()) return false;
                if (n.is("call")) {
                    const Node fn = n.field("function");
                    const bool named = (fn.is("identifier") && fn.text() == name) ||
                                       (fn.is("attribute") && fn.field("attribute").text() == name);
                    // A module call: `self.layer(...)`, or a local iterating modules (`layer(...)`).
                    const bool module_call =
                        forward && ((fn.is("attribute") && fn.field("object").text() == "self") ||
                                    (fn.is("identifier") && !knowledge::common_builtin(fn.text()) &&
                                     !index.classes.contains(text(fn)) && !index.functions.contains(text(fn)) &&
                                     !index.find_import(text(fn))));
                    if (named || module_call) {
                        auto ref = ctx.values.callee(f, n, enclosing);
                        if (!ref && fn.is("identifier")) ref = module_var_forward(f, fn, enclosing);
                        if (ref && ref->file == file && ref->node == def) {
                            out.push_back({f, n});
                        }
                    }
                    return true;
                }
                // `self.m` or `m` used other than called (passed on, stored): called where the
                // arguments cannot be seen. A module's `forward` reached through `__call__` or
                // `.forward` passed on, or called with `*args`, likewise.
                // A method is reached through an attribute; a module-level function by its name
                // (where no local of that name hides it).
                bool named_here = false;
                if (n.is("identifier") && n.text() == name && !method && !decorated_method &&
                    !n.parent().is("attribute") && !n.parent().is("function_definition")) {
                    named_here = !enclosing || !analysis::local_names(enclosing).contains(name);
                }
                if (!forward && ((n.is("attribute") && n.field("attribute").text() == name) || named_here)) {
                    const Node o = outer(n);
                    if (!(o.parent().is("call") && o.parent().field("function") == o) &&
                        !(n.is("identifier") && n.parent().is("keyword_argument") && n.parent().field("name") == n)) {
                        why = fmt::format("`{}` is used at {}:{} other than called, where its arguments cannot be seen",
                                          n.text(), files[f].path.substr(files[f].path.find_last_of('/') + 1),
                                          line_of(n));
                    }
                    return true;
                }
                if (forward && n.is("attribute") &&
                    (n.field("attribute").text() == "__call__" || n.field("attribute").text() == "forward")) {
                    const Node o = outer(n);
                    const Node obj = n.field("object");
                    const auto other = obj.is("identifier") ? module_var_forward(f, obj) : std::nullopt;
                    const bool another = other && !(other->file == file && other->node == def);
                    if (!(o.parent().is("call") && o.parent().field("function") == o) && !another) {
                        why = fmt::format("a module is passed on as `{}` at line {}, called where its arguments cannot be "
                                          "seen",
                                          n.text(), line_of(n));
                    }
                }
                return true;
            });
            if (!why.empty()) break;
        }
        if (forward && why.empty()) {
            // (the closures below are looked for in the files naming the class too)
            // A module called with `*args` by a closure (`module(*inputs)`, gradient checkpointing)
            // may be this one.
            for (const std::size_t f : naming) {
                if (!why.empty()) break;
                syntax::walk(ctx.project.tree_of(f).root(), [&](const Node& n) {
                    if (!why.empty()) return false;
                    if (!n.is("call") || !n.field("function").is("identifier")) return true;
                    bool splat = false;
                    for (const Node& a : n.field("arguments").named_children()) {
                        splat = splat || a.is("list_splat") || a.is("dictionary_splat");
                    }
                    if (!splat) return true;
                    Node enclosing = analysis::enclosing_function(n);
                    while (enclosing && !enclosing.is("function_definition")) enclosing = analysis::enclosing_function(enclosing);
                    // Only a callable handed in (a parameter of an enclosing function) can be a module.
                    Node handed;
                    for (Node e = enclosing; e && !handed; e = analysis::enclosing_function(e)) {
                        if (e.is("function_definition") && is_param(e, n.field("function").text())) handed = e;
                    }
                    // `def create_custom_forward(module): def custom_forward(*inputs): return module(*inputs)`,
                    // called as `create_custom_forward(layer)` with `layer` a module of another class.
                    if (handed && !project_callee(f, n)) {
                        bool others = true;
                        bool any = false;
                        Node scope = analysis::enclosing_function(handed);
                        while (scope && !scope.is("function_definition")) scope = analysis::enclosing_function(scope);
                        const std::string maker = text(handed.field("name"));
                        if (scope) {
                            syntax::walk(scope.field("body"), [&](const Node& c) {
                                if (!c.is("call") || c.field("function").text() != maker) return true;
                                any = true;
                                bool ok = true;
                                const Node a = argument_for(c, handed, n.field("function").text(), ok);
                                const auto m = (ok && a && a.is("identifier")) ? module_var_forward(f, a) : std::nullopt;
                                others = others && m && !(m->file == file && m->node == def);
                                return true;
                            });
                        }
                        if (any && others) return true;
                        why = fmt::format("`{}` at line {} calls a module handed to it with `*args`, whose arguments "
                                          "cannot be matched to `forward`'s parameters",
                                          n.text().substr(0, n.text().find('(')), line_of(n));
                    }
                    return true;
                });
            }
        }
        return out;
    }


    // Why the tensor `name`, a local or parameter of `def`, may be changed in `def` or a project
    // function it is passed to ("" when it is only read). `skip` holds reads fixed here.
    std::string tensor_changes(std::size_t f, const Node& def, const std::string& name, int depth) {
        if (depth > 8) return fmt::format("`{}` is passed through too many calls to follow", name);
        if (!visiting.insert({f, def.begin(), "t:" + name}).second) return "";
        std::string why;
        syntax::walk(def.field("body"), [&](const Node& n) {
            if (!why.empty() || is_scope(n)) return false;
            if (!n.is("identifier") || n.text() != name || !is_read(n)) return true;
            // Climb through views: subscripts and view methods keep the storage.
            Node t = n;
            for (;;) {
                const Node o = outer(t);
                const Node p = o.parent();
                if (p.is("subscript") && p.field("value") == o) {
                    t = p;
                    continue;
                }
                if (p.is("attribute") && p.field("object") == o) {
                    const auto attr = p.field("attribute").text();
                    if (knowledge::view_attribute(attr)) {
                        t = p;
                        continue;
                    }
                    const Node call = outer(p).parent();
                    if (call.is("call") && call.field("function") == p) {
                        if (knowledge::shares_storage(attr, "int64")) {  // the tensor is int64
                            t = call;
                            continue;
                        }
                        if (attr.ends_with("_") || attr.starts_with("__")) {
                            why = fmt::format("`{}` at line {} may change `{}` in place", p.text(), line_of(p), name);
                            return false;
                        }
                        return true;  // a method making a new value
                    }
                    if (p.parent().is("assignment") && p.parent().field("left") == p) {
                        why = fmt::format("line {} sets an attribute of `{}`", line_of(p), name);
                        return false;
                    }
                    return true;  // .shape, .device, .dtype ...
                }
                break;
            }
            const Node o = outer(t);
            const Node p = o.parent();
            if (p.is("binary_operator") || p.is("comparison_operator") || p.is("unary_operator") ||
                p.is("boolean_operator") || p.is("not_operator")) {
                return true;
            }
            if ((p.is("assignment") || p.is("augmented_assignment")) && p.field("left") == o) {
                why = fmt::format("line {} writes into `{}`", line_of(p), name);
                return false;
            }
            if (p.is("augmented_assignment")) {  // `x += T` makes new values unless x is T's
                return true;
            }
            // An argument: of a torch function, a builtin that only reads, a project function.
            Node arg = o;
            Node argp = p;
            if (argp.is("keyword_argument")) {
                arg = argp;
                argp = argp.parent();
            }
            if ((argp.is("list") || argp.is("tuple")) && outer(argp).parent().is("argument_list")) {
                // `torch.stack([T[..., 1], T[..., 0]])`, `torch.cat((T.new_zeros(1), ...))`
                const Node call = outer(argp).parent().parent();
                if (torch_call(f, call)) return true;
                why = fmt::format("`{}` is passed in a list at line {} to code that may change it", name, line_of(p));
                return false;
            }
            if (argp.is("argument_list")) {
                const Node call = argp.parent();
                const Node fn = call.field("function");
                if (torch_call(f, call)) return true;
                if (fn.is("identifier") && (fn.text() == "len" || fn.text() == "isinstance") && t == n) return true;
                if (fn.is("identifier") && (fn.text() == "enumerate" || fn.text() == "zip") && t == n) {
                    const Node loop = outer(call).parent();
                    if ((loop.is("for_statement") || loop.is("for_in_clause")) && loop.field("right") == outer(call)) {
                        why = element_changes(f, loop, name);
                        return why.empty();
                    }
                }
                if (auto ref = project_callee(f, call)) {
                    if (!(t == n)) {
                        why = fmt::format("a view of `{}` is passed to `{}` at line {}", name, fn.text(), line_of(call));
                        return false;
                    }
                    const std::string param = parameter_taking(ref->node, argp, arg);
                    if (param.empty()) {
                        why = fmt::format("`{}` is passed to `{}` at line {} where no parameter takes it by name",
                                          name, fn.text(), line_of(call));
                        return false;
                    }
                    why = tensor_changes(ref->file, ref->node, param, depth + 1);
                    return why.empty();
                }
                why = fmt::format("`{}` is passed to `{}` at line {}, which graphmend cannot read", name, fn.text(),
                                  line_of(call));
                return false;
            }
            // Iterated: its elements are views of it, which must not be changed.
            if ((p.is("for_statement") || p.is("for_in_clause")) && p.field("right") == o && t == n) {
                why = element_changes(f, p, name);
                return why.empty();
            }
            why = fmt::format("`{}` at line {} may be kept or changed where graphmend cannot follow it", t.text(),
                              line_of(t));
            return false;
        });
        return why;
    }

    // Why the list `name` may be changed in `def` (after byte `made`, where the tensor is made;
    // 0: anywhere) or in a project function it is passed to ("" when it is only read).
    std::string list_changes(std::size_t f, const Node& def, const std::string& name, std::uint32_t made, int depth) {
        if (depth > 8) return fmt::format("`{}` is passed through too many calls to follow", name);
        if (!visiting.insert({f, def.begin(), "l:" + name}).second) return "";
        std::string why;
        syntax::walk(def.field("body"), [&](const Node& n) {
            if (!why.empty() || is_scope(n)) return false;
            if (!n.is("identifier") || n.text() != name || !is_read(n)) return true;
            const Node o = outer(n);
            const Node p = o.parent();
            if (p.is("attribute") && p.field("object") == o) {
                const auto attr = p.field("attribute").text();
                if (knowledge::list_read(attr)) return true;
                if (attr == "append" && n.end() < made) return true;  // filled before the tensor is made
                why = fmt::format("`{}` at line {} changes the list{}", p.text(), line_of(p),
                                  made ? " after the tensor was made from it" : "");
                return false;
            }
            if (p.is("subscript") && p.field("value") == o) {
                const Node sp = outer(p).parent();
                if ((sp.is("assignment") || sp.is("augmented_assignment")) && sp.field("left") == outer(p)) {
                    why = fmt::format("line {} writes into `{}`", line_of(sp), name);
                    return false;
                }
                if (sp.is("delete_statement")) {
                    why = fmt::format("line {} deletes from `{}`", line_of(sp), name);
                    return false;
                }
                return true;
            }
            if ((p.is("for_statement") || p.is("for_in_clause")) && p.field("right") == o) return true;
            if (p.is("binary_operator") || p.is("comparison_operator")) return true;
            Node arg = o;
            Node argp = p;
            if (argp.is("keyword_argument")) {
                arg = argp;
                argp = argp.parent();
            }
            if (argp.is("argument_list")) {
                const Node call = argp.parent();
                const Node fn = call.field("function");
                if (fn.is("identifier") && (fn.text() == "len" || fn.text() == "enumerate" || fn.text() == "zip" ||
                                            fn.text() == "tuple" || fn.text() == "list" || fn.text() == "sum" ||
                                            fn.text() == "min" || fn.text() == "max" || fn.text() == "sorted")) {
                    return true;
                }
                if (torch_call(f, call)) return true;
                if (auto ref = project_callee(f, call)) {
                    const std::string param = parameter_taking(ref->node, argp, arg);
                    if (param.empty()) {
                        why = fmt::format("`{}` is passed to `{}` at line {} where no parameter takes it by name",
                                          name, fn.text(), line_of(call));
                        return false;
                    }
                    why = list_changes(ref->file, ref->node, param, 0, depth + 1);
                    return why.empty();
                }
                why = fmt::format("`{}` is passed to `{}` at line {}, which graphmend cannot read", name, fn.text(),
                                  line_of(call));
                return false;
            }
            why = fmt::format("`{}` at line {} may be kept or changed where graphmend cannot follow it", name,
                              line_of(n));
            return false;
        });
        return why;
    }

    // The list local `L` a host tensor is made from, in `def`: its elements' rank and width.
    Origin list_origin(std::size_t f, const Node& def, const std::string& list, std::uint32_t made) {
        Origin o;
        o.found = true;
        o.list = list;
        const auto bs = bindings(def, list);
        if (bs.size() != 1 || !bs[0].is("assignment") || !bs[0].field("left").is("identifier") ||
            !syntax::without_parens(bs[0].field("right")).is("list") ||
            !syntax::without_parens(bs[0].field("right")).named_children().empty() || bs[0].begin() > made) {
            o.refused = fmt::format("`{}` is not a list assigned once from `[]` before the tensor is made", list);
            return o;
        }
        o.list_node = bs[0].field("left");
        // Its elements: `L.append(E)`.
        std::vector<Node> elements;
        syntax::walk(def.field("body"), [&](const Node& n) {
            if (is_scope(n)) return false;
            if (n.is("call") && n.field("function").is("attribute") &&
                n.field("function").field("object").text() == list &&
                n.field("function").field("attribute").text() == "append") {
                const auto args = n.field("arguments").named_children();
                if (args.size() == 1 && n.end() < made) elements.push_back(args[0]);
            }
            return true;
        });
        if (elements.empty()) {
            o.refused = fmt::format("nothing shows what `{}` holds", list);
            return o;
        }
        for (Node e : elements) {
            e = syntax::without_parens(e);
            if (e.is("identifier")) {  // `spatial_shape = (height, width)`
                const auto eb = bindings(def, e.text());
                if (eb.size() == 1 && eb[0].is("assignment") && eb[0].field("left").is("identifier")) {
                    e = syntax::without_parens(eb[0].field("right"));
                }
            }
            int rank = 1;
            std::size_t width = 0;
            if (e.is("tuple")) {
                rank = 2;
                for (const Node& item : e.named_children()) {
                    if (item.is("comment")) continue;
                    ++width;
                    if (!int_expr(def, item)) {
                        o.refused = fmt::format("`{}` in `{}` at line {} is not shown to be an int computed from "
                                                "shapes",
                                                item.text(), list, line_of(item));
                        return o;
                    }
                }
            } else if (!int_expr(def, e)) {
                o.refused = fmt::format("`{}` appended to `{}` at line {} is not shown to be an int (or a tuple "
                                        "of ints) computed from shapes",
                                        e.text(), list, line_of(e));
                return o;
            }
            if (o.rank != 0 && (o.rank != rank || o.width != width)) {
                o.refused = fmt::format("`{}` holds elements of different forms", list);
                return o;
            }
            o.rank = rank;
            o.width = width;
        }
        visiting.clear();
        if (std::string why = list_changes(f, def, list, made, 0); !why.empty()) o.refused = why;
        return o;
    }

    // Where the tensor `name` (read in `def` of file `f`) comes from. `depth` bounds the calls
    // followed.
    Origin origin(std::size_t f, const Node& def, const std::string& name, int depth) {
        Origin o;
        if (depth > 4) return o;
        const auto bs = bindings(def, name);
        if (is_param(def, name)) {
            if (!bs.empty()) return o;  // rebound: not a host tensor for sure
            return param_origin(f, def, name, depth);
        }
        if (bs.size() != 1 || !bs[0].is("assignment") || !bs[0].field("left").is("identifier")) return o;
        const Node right = syntax::without_parens(bs[0].field("right"));
        if (!right.is("call")) return o;
        const std::string fn = ctx.project.external_name(f, right.field("function"));
        if (fn != "torch.as_tensor" && fn != "torch.tensor") return o;
        const auto args = right.field("arguments").named_children();
        if (args.empty() || !args[0].is("identifier")) return o;
        for (const Node& a : args) {
            if (a.is("keyword_argument") && a.field("name").text() == "dtype") {
                const std::string dt = ctx.project.external_name(f, a.field("value"));
                if (dt != "torch.long" && dt != "torch.int64") {
                    o.found = true;
                    o.refused = fmt::format("the tensor is made with dtype `{}`, which may change the ints' values",
                                            a.field("value").text());
                    return o;
                }
            } else if (!(a == args[0]) && !a.is("comment")) {
                if (!a.is("keyword_argument") || a.field("name").text() != "device") {
                    o.found = true;
                    o.refused = fmt::format("`{}` is made with arguments other than dtype and device", name);
                    return o;
                }
            }
        }
        o = list_origin(f, def, text(args[0]), bs[0].begin());
        if (o.refused.empty()) {
            visiting.clear();
            if (std::string why = tensor_changes(f, def, name, 0); !why.empty()) o.refused = why;
        }
        return o;
    }

    // A parameter: every call in the project passes a host tensor; the sibling parameter that
    // every call passes the matching list in, if any.
    Origin param_origin(std::size_t f, const Node& def, const std::string& name, int depth) {
        Origin o;
        std::string why;
        const auto sites = call_sites(f, def, why);
        if (sites.empty() && why.empty()) return o;  // from outside the project: not known
        o.found = true;
        if (!why.empty()) {
            o.refused = why;
            return o;
        }
        std::vector<std::string> siblings;
        for (const auto& p : params_of(def)) {
            if (p.name != name && p.name != "self" && p.name != "cls") siblings.push_back(p.name);
        }
        // Calls that pass no tensor (a list already) read nothing back; if none passes one, there
        // is no read of a tensor here.
        std::size_t tensors = 0;
        for (const auto& site : sites) {
            bool ok = true;
            const Node arg = argument_for(site.call, def, name, ok);
            if (!ok || !arg || ctx.values.eval(site.file, arg).tensor()) ++tensors;
        }
        if (tensors == 0) {
            o.found = false;
            return o;
        }
        for (const auto& site : sites) {
            bool ok = true;
            const Node arg = argument_for(site.call, def, name, ok);
            const std::string where = fmt::format("{}:{}", file_name(site.file), line_of(site.call));
            if (!ok || !arg || !syntax::without_parens(arg).is("identifier")) {
                o.refused = fmt::format("the call at {} passes `{}` something graphmend cannot follow", where, name);
                return o;
            }
            Node caller = analysis::enclosing_function(site.call);
            while (caller && !caller.is("function_definition")) caller = analysis::enclosing_function(caller);
            if (!caller) {
                o.refused = fmt::format("the call at {} is outside a function", where);
                return o;
            }
            const Origin c = origin(site.file, caller, text(syntax::without_parens(arg)), depth + 1);
            if (!c.found) {
                o.refused = fmt::format("the call at {} passes `{}` a tensor not shown to be built from ints", where,
                                        arg.text());
                return o;
            }
            if (!c.refused.empty()) {
                o.refused = fmt::format("at the call at {}: {}", where, c.refused);
                return o;
            }
            if (o.rank != 0 && (o.rank != c.rank || o.width != c.width)) {
                o.refused = fmt::format("the calls pass lists of different forms in `{}`", name);
                return o;
            }
            o.rank = c.rank;
            o.width = c.width;
            std::vector<std::string> kept;
            for (const auto& s : siblings) {
                bool sok = true;
                const Node sarg = argument_for(site.call, def, s, sok);
                if (sok && sarg && !c.list.empty() && syntax::without_parens(sarg).text() == c.list) kept.push_back(s);
            }
            siblings = std::move(kept);
        }
        if (!siblings.empty()) {
            // Prefer the sibling named after the tensor (`spatial_shapes_list`).
            std::string best = siblings[0];
            for (const auto& s : siblings) {
                if (s.starts_with(name)) best = s;
            }
            if (!bindings(def, best).empty()) {
                o.refused = fmt::format("`{}` is assigned in the function", best);
                return o;
            }
            o.list = best;
        }
        return o;
    }
};

// --- the elements read back -----------------------------------------------------------------

// True when `v` may be a tensor and nothing a size method or an operator would treat otherwise
// (a number, a string, a sequence).
bool tensorish(const analysis::Value& v, bool unknown_too = false) {
    return (v.tensor() || (unknown_too && v.kinds != 0)) &&
           (v.kinds & (analysis::kNumber | analysis::kBool | analysis::kStr | analysis::kSeq | analysis::kSize)) == 0;
}

// Why using Python ints for the names `names` (elements read back, bound in `scope`) may give
// other results than 0-d long tensors ("" when it cannot). `scope` is the loop or comprehension
// whose target binds them; `def` the function.
std::string element_uses(const Context& ctx, const Node& def, const Node& scope, std::vector<std::string> names) {
    std::set<std::string> ints(names.begin(), names.end());
    std::set<std::string> accumulators;
    const bool comprehension = is_comprehension(scope);
    const Node region = comprehension ? scope : def.field("body");
    std::string why;

    // Where an int-valued expression `e` (an element, or computed from them) goes.
    std::function<bool(Node, bool)> use = [&](Node e, bool is_float) -> bool {
        const Node o = outer(e);
        const Node p = o.parent();
        const auto fail = [&](std::string what) {
            why = fmt::format("`{}` at line {} {}", o.text(), line_of(o), what);
            return false;
        };
        if (p.is("slice")) return is_float ? fail("is a float slice bound") : true;
        if (p.is("binary_operator")) {
            const auto op = p.field("operator").text();
            const Node other = syntax::without_parens(p.field("left") == o ? p.field("right") : p.field("left"));
            // A tensor that keeps a dimension (a subscript with a slice or None): its dtype wins over
            // a 0-d tensor and a Python int alike, and the int is exact in it.
            if (!is_float && (op == "*" || op == "/" || op == "+" || op == "-") && other.is("subscript") &&
                (tensorish(ctx.values.eval(ctx.file, other)) || tensorish(ctx.values.eval(ctx.file, other.field("value"))))) {
                bool keeps = false;
                for (const Node& i : other.named_children()) {
                    if (i == other.field("value")) continue;
                    syntax::walk(i, [&](const Node& t) {
                        keeps = keeps || t.is("slice") || t.is("none");
                        return !t.is("subscript") && !t.is("call");
                    });
                }
                if (keeps) return true;
            }
            if (is_float) return fail("is a float used in arithmetic");
            if (op == "+" || op == "-" || op == "*" || op == "//") {
                bool other_int = other.is("integer");
                if (other.is("identifier") && ints.contains(text(other))) other_int = true;
                if (!other_int && other.is("binary_operator")) {
                    // `current + h * w`: the other side is an int expression of elements
                    bool all = true;
                    syntax::walk(other, [&](const Node& t) {
                        if (t.is("identifier")) all = all && ints.contains(text(t));
                        else if (t.is("binary_operator")) {
                            const auto o2 = t.field("operator").text();
                            all = all && (o2 == "+" || o2 == "-" || o2 == "*" || o2 == "//");
                        } else if (t.named() && !t.is("integer") && !t.is("parenthesized_expression")) {
                            all = false;
                        }
                        return all;
                    });
                    other_int = all;
                }
                if (other_int) return use(p, false);
                // `h - 0.5`: exact in float32 and float64 for sizes below 2**22.
                if (other.is("float") && op != "//" && (op == "+" || op == "-")) {
                    const double v = std::strtod(text(other).c_str(), nullptr);
                    if (std::abs(v) < 1024 && v * 2 == std::floor(v * 2)) return use(p, true);
                }
            }
            return fail("is combined with a value where a 0-d tensor and a Python number may differ");
        }
        Node arg = o;
        Node argp = p;
        if (argp.is("keyword_argument")) {
            arg = argp;
            argp = argp.parent();
        }
        if (argp.is("argument_list")) {
            const Node call = argp.parent();
            const Node fn = call.field("function");
            const std::string ext = ctx.project.external_name(ctx.file, fn);
            const std::string_view method = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
            if (ext.starts_with("torch.") && knowledge::size_factory(method)) {
                if (arg.is("keyword_argument") && arg.field("name").text() != "steps" &&
                    arg.field("name").text() != "start" && arg.field("name").text() != "end" &&
                    arg.field("name").text() != "size") {
                    return fail("is an argument other than a size");
                }
                if (is_float && method != "linspace" && method != "logspace" && method != "arange") {
                    return fail("is a float size");
                }
                return true;
            }
            // `view`, `reshape`, ... exist on tensors only; `split` on strings too.
            if (!ext.starts_with("torch.") && fn.is("attribute") && knowledge::size_method(method) && !is_float &&
                tensorish(ctx.values.eval(ctx.file, fn.field("object")), method != "split")) {
                if (arg.is("keyword_argument") && arg.field("name").text() != "size" &&
                    arg.field("name").text() != "split_size_or_sections" && arg.field("name").text() != "sizes") {
                    return fail("is an argument other than a size");
                }
                return true;
            }
            return fail(fmt::format("is passed to `{}`, where a 0-d tensor and a Python int may differ", fn.text()));
        }
        if (p.is("list_comprehension") && p.field("body") == o && !is_float) {
            // `[h * w for h, w in shapes]` given as sizes to `split`.
            const Node c = outer(p);
            const Node cp = c.parent();
            if (cp.is("argument_list")) {
                const Node fn = cp.parent().field("function");
                const std::string_view method = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
                const std::string ext = ctx.project.external_name(ctx.file, fn);
                const auto args = cp.named_children();
                const bool first = !args.empty() && args[0] == c;
                if (first && fn.is("attribute") && (method == "split" || method == "split_with_sizes") &&
                    !ext.starts_with("torch.") && tensorish(ctx.values.eval(ctx.file, fn.field("object")))) {
                    return true;
                }
                if (ext == "torch.split" && args.size() >= 2 && args[1] == c) return true;
            }
            return fail("makes a list used other than as split sizes");
        }
        if ((p.is("assignment") || p.is("augmented_assignment")) && p.field("right") == o && !is_float &&
            p.field("left").is("identifier") && accumulators.contains(text(p.field("left")))) {
            return true;  // its reads are checked as the elements' are
        }
        if (p.is("augmented_assignment") && p.field("left") == o) return fail("is changed in place");
        static const std::map<std::string_view, std::string_view> kinds{
            {"subscript", "an index"},           {"comparison_operator", "a comparison"},
            {"return_statement", "a return value"}, {"list", "a list item"},
            {"tuple", "a tuple item"},           {"expression_list", "a tuple item"},
            {"assignment", "a value assigned"},  {"unary_operator", "an operand"},
            {"boolean_operator", "a test"},      {"if_statement", "a test"},
            {"conditional_expression", "a conditional value"}};
        const auto kind = kinds.find(p.type());
        return fail(fmt::format("is used as {}, where a 0-d tensor and a Python int may differ",
                                kind != kinds.end() ? std::string(kind->second) : std::string(p.type())));
    };

    // Locals accumulating the elements (`current += height * width`, from `current = 0`): every
    // binding an int literal, or + - * // of elements, accumulators and int literals (a new value
    // each time, never one of the elements itself).
    if (!comprehension) {
        for (int round = 0; round < 4; ++round) {
            std::set<std::string> candidates;
            syntax::walk(def.field("body"), [&](const Node& n) {
                if (is_scope(n)) return false;
                if ((n.is("assignment") || n.is("augmented_assignment")) && n.field("left").is("identifier") &&
                    !ints.contains(text(n.field("left")))) {
                    candidates.insert(text(n.field("left")));
                }
                return true;
            });
            bool grew = false;
            for (const auto& local : candidates) {
                bool all = true;
                bool reads_elements = false;
                for (const Node& b : bindings(def, local)) {
                    if (!(b.is("assignment") || b.is("augmented_assignment")) || !b.field("left").is("identifier")) {
                        all = false;
                        break;
                    }
                    if (b.is("augmented_assignment")) {
                        const auto op = b.field("operator").text();
                        all = all && (op == "+=" || op == "-=" || op == "*=");
                    }
                    const Node r = syntax::without_parens(b.field("right"));
                    if (r.is("integer")) continue;
                    if (!r.is("binary_operator") && !b.is("augmented_assignment")) {
                        all = false;
                        break;
                    }
                    syntax::walk(r, [&](const Node& t) {
                        if (t.is("identifier")) {
                            all = all && ints.contains(text(t));
                            reads_elements = true;
                        } else if (t.is("binary_operator")) {
                            const auto o2 = t.field("operator").text();
                            all = all && (o2 == "+" || o2 == "-" || o2 == "*" || o2 == "//");
                        } else if (t.named() && !t.is("integer") && !t.is("parenthesized_expression")) {
                            all = false;
                        }
                        return all;
                    });
                }
                if (all && reads_elements) {
                    ints.insert(local);
                    accumulators.insert(local);
                    names.push_back(local);
                    grew = true;
                }
            }
            if (!grew) break;
        }
    }

    for (const auto& name : names) {
        // Bound only by the read's target.
        const auto bs = comprehension || accumulators.contains(name) ? std::vector<Node>{} : bindings(def, name);
        for (const Node& b : bs) {
            if (!(b == scope)) return fmt::format("`{}` is bound at line {} too", name, line_of(b));
        }
        bool ok = true;
        const auto read = [&](const Node& n) {
            const Node np = outer(n).parent();
            if (np.is("augmented_assignment") && np.field("left") == outer(n)) {
                if (accumulators.contains(name)) return true;
                why = fmt::format("`{}` at line {} is changed in place", name, line_of(n));
                return false;
            }
            return use(n, false);
        };
        syntax::walk(region, [&](const Node& n) {
            if (!ok || is_scope(n)) return false;
            // Another comprehension binding the same name is another scope.
            if (is_comprehension(n) && !(n == scope)) {
                bool rebinds = false;
                for (const Node& c : n.named_children()) {
                    if (!c.is("for_in_clause")) continue;
                    for (const Node& t : target_names(c.field("left"))) rebinds = rebinds || t.text() == name;
                }
                if (rebinds) return false;
            }
            if ((n.is("for_in_clause") || n.is("for_statement")) && within(n, scope) &&
                (n == scope || n.is("for_in_clause"))) {
                // the target binding the names is no use of them
                for (const Node& c : n.children()) {
                    if (c == n.field("left")) continue;
                    syntax::walk(c, [&](const Node& x) {
                        if (!ok || is_scope(x)) return false;
                        if (x.is("identifier") && x.text() == name && is_read(x)) ok = read(x);
                        return ok;
                    });
                }
                return false;
            }
            if (n.is("identifier") && n.text() == name && is_read(n)) ok = read(n);
            return ok;
        });
        if (!ok) return why;
    }
    return "";
}

// True when a name of `names` (or a value computed from one in its statement) is read into
// Python where it is used: a slice bound, a size of a torch factory or a shape method. A loop
// whose elements feed none of these does not break the graph (GM401's `feeds` likewise).
bool feeds_sizes(const Context& ctx, const Node& region, const std::set<std::string>& names) {
    bool found = false;
    syntax::walk(region, [&](const Node& n) {
        if (found || is_scope(n)) return false;
        if (!n.is("identifier") || !names.contains(text(n)) || !is_read(n)) return true;
        for (Node p = n.parent(); p && !p.is("block") && !p.is("expression_statement"); p = p.parent()) {
            if (p.is("slice")) found = true;
            if (p.is("call")) {
                const Node fn = p.field("function");
                const std::string_view m = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
                const bool torch_fn = ctx.project.external_name(ctx.file, fn).starts_with("torch.");
                if ((torch_fn && knowledge::size_factory(m)) || (!torch_fn && knowledge::size_method(m))) found = true;
            }
            if (found) break;
        }
        return !found;
    });
    return found;
}

// The iterated expression of a loop or comprehension clause, through `enumerate(X)`, and the
// target pattern that receives X's elements.
struct Iteration {
    Node iterable;  // X
    Node element;   // the target pattern of X's elements
};

std::optional<Iteration> iteration(const Node& left, const Node& right) {
    Node r = syntax::without_parens(right);
    Node l = left;
    if (r.is("call") && r.field("function").is("identifier") && r.field("function").text() == "enumerate") {
        const auto args = r.field("arguments").named_children();
        if (args.size() != 1 || args[0].is("keyword_argument") || args[0].is("list_splat")) return std::nullopt;
        r = syntax::without_parens(args[0]);
        l = syntax::without_parens(l);
        if (!(l.is("pattern_list") || l.is("tuple_pattern"))) return std::nullopt;
        auto parts = l.named_children();
        std::erase_if(parts, [](const Node& x) { return x.is("comment"); });
        if (parts.size() != 2) return std::nullopt;
        l = parts[1];
    }
    if (!r.is("identifier")) return std::nullopt;
    return Iteration{r, l};
}

}  // namespace

std::vector<HostRead> match_host_reads(const Context& ctx, const Node& def) {
    std::vector<HostRead> out;
    Matcher m{ctx, {}};
    // (parameter) -> index in `out` of the read fixed at the call sites
    std::map<std::string, std::size_t> at_calls;
    std::map<std::string, Origin> origins;
    auto origin_of = [&](const std::string& name) -> Origin& {
        auto it = origins.find(name);
        if (it == origins.end()) {
            m.visiting.clear();
            it = origins.emplace(name, m.origin(ctx.file, def, name, 0)).first;
        }
        return it->second;
    };

    struct Read {
        Node site;
        Node tensor;
        Node element;  // the target pattern (invalid for .tolist())
        Node scope;    // the loop or comprehension
    };
    std::vector<Read> reads;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (is_scope(n)) return false;
        if (n.is("for_statement")) {
            if (auto it = iteration(n.field("left"), n.field("right"))) reads.push_back({n, it->iterable, it->element, n});
        } else if (is_comprehension(n)) {
            for (const Node& c : n.named_children()) {
                if (!c.is("for_in_clause")) continue;
                if (auto it = iteration(c.field("left"), c.field("right"))) {
                    reads.push_back({n, it->iterable, it->element, n});
                }
            }
        } else if (n.is("call") && n.field("function").is("attribute") &&
                   n.field("function").field("attribute").text() == "tolist" &&
                   n.field("arguments").named_children().empty() &&
                   syntax::without_parens(n.field("function").field("object")).is("identifier")) {
            reads.push_back({n, syntax::without_parens(n.field("function").field("object")), {}, {}});
        }
        return true;
    });

    for (const Read& r : reads) {
        const std::string name = text(r.tensor);
        if (!ctx.values.eval(ctx.file, r.tensor).tensor()) continue;
        if (r.element) {
            // Only a loop whose elements are read into Python breaks the graph.
            std::set<std::string> names;
            for (const Node& t : target_names(r.element)) names.insert(text(t));
            const Node region = is_comprehension(r.scope) ? r.scope : r.scope.field("body");
            if (!feeds_sizes(ctx, region, names)) {
                // values accumulated in the loop (`current += h * w`) feed sizes after it too
                bool later = false;
                syntax::walk(r.scope.field("body") ? r.scope.field("body") : r.scope, [&](const Node& n) {
                    if (later || is_scope(n)) return false;
                    if (n.is("augmented_assignment") && n.field("left").is("identifier")) {
                        bool reads = false;
                        syntax::walk(n.field("right"), [&](const Node& t) {
                            reads = reads || (t.is("identifier") && names.contains(text(t)));
                            return !reads;
                        });
                        if (reads) later = feeds_sizes(ctx, def.field("body"), {text(n.field("left"))});
                    }
                    return !later;
                });
                if (!later) continue;
            }
        }
        Origin& o = origin_of(name);
        if (!o.found) continue;
        HostRead h;
        h.site = r.site;
        h.reads.push_back(r.site);
        h.what = r.element ? fmt::format("for ... in {}", name) : fmt::format("{}.tolist()", name);
        h.refused = o.refused;
        std::string replacement;
        if (h.refused.empty() && r.element) {
            // The elements: a tuple pattern of `width` names (rank 2) or one name (rank 1).
            std::vector<std::string> names;
            const Node el = syntax::without_parens(r.element);
            if (o.rank == 2 && (el.is("pattern_list") || el.is("tuple_pattern"))) {
                for (const Node& t : el.named_children()) {
                    if (t.is("comment")) continue;
                    if (!t.is("identifier")) names.clear(), names.push_back("");
                    names.push_back(text(t));
                }
                if (names.size() != o.width || std::find(names.begin(), names.end(), "") != names.end()) {
                    h.refused = fmt::format("the loop unpacks each row of `{}` into other than {} names", name,
                                            o.width);
                }
            } else if (o.rank == 1 && el.is("identifier")) {
                names.push_back(text(el));
            } else {
                h.refused = fmt::format("each element of `{}` is kept whole (a tensor row, not the ints in it)", name);
            }
            if (h.refused.empty()) h.refused = element_uses(ctx, def, r.scope, names);
        }
        if (!h.refused.empty()) {
            out.push_back(std::move(h));
            continue;
        }
        if (!o.list.empty()) {
            // The list is at hand: where the tensor is made, or a sibling parameter.
            replacement = r.element ? o.list
                                    : (o.rank == 2 ? fmt::format("[list(_graphmend_row) for _graphmend_row in {}]", o.list)
                                                   : fmt::format("list({})", o.list));
            const Node target = r.element ? r.tensor : r.site;
            h.edits.push_back({target.begin(), target.end(), replacement});
            h.detail = fmt::format("reads `{}`, the list of ints `{}` was made from, instead of the tensor", o.list,
                                   name);
            out.push_back(std::move(h));
            continue;
        }
        // No list in this function: the calls pass it, when the parameter is only iterated here.
        if (!r.element) {
            h.refused = fmt::format("`{}` has no list of its values here (no parameter that every call passes it in)",
                                    name);
            out.push_back(std::move(h));
            continue;
        }
        if (auto it = at_calls.find(name); it != at_calls.end()) {
            out[it->second].reads.push_back(r.site);
            continue;
        }
        // Every read of the parameter must be the iteration of a read matched here.
        std::string why;
        syntax::walk(def.field("body"), [&](const Node& n) {
            if (!why.empty() || is_scope(n)) return false;
            if (n.is("identifier") && n.text() == name && is_read(n)) {
                bool iterated = false;
                for (const Read& other : reads) iterated = iterated || (other.element && other.tensor == n);
                if (!iterated) {
                    why = fmt::format("`{}` is also used at line {} other than iterated, and the function has no list "
                                      "of its values",
                                      name, line_of(n));
                }
            }
            return why.empty();
        });
        std::vector<edits::Edit> edits;
        std::vector<std::string> where;
        if (why.empty()) {
            std::string escapes;
            const auto sites = m.call_sites(ctx.file, def, escapes);
            why = escapes;
            for (const auto& s : sites) {
                if (!why.empty()) break;
                bool ok = true;
                const Node arg = argument_for(s.call, def, name, ok);
                if (s.file != ctx.file) {
                    why = fmt::format("a call in {} passes `{}`", m.file_name(s.file), name);
                    break;
                }
                Node caller = analysis::enclosing_function(s.call);
                while (caller && !caller.is("function_definition")) caller = analysis::enclosing_function(caller);
                m.visiting.clear();
                const Origin c = (ok && arg && caller && syntax::without_parens(arg).is("identifier"))
                                     ? m.origin(ctx.file, caller, text(syntax::without_parens(arg)), 0)
                                     : Origin{};
                if (!c.found || !c.refused.empty() || c.list.empty()) {
                    why = fmt::format("the call at line {} does not pass a tensor with its list at hand{}",
                                      line_of(s.call), c.refused.empty() ? "" : ": " + c.refused);
                    break;
                }
                edits.push_back({arg.begin(), arg.end(), c.list});
                where.push_back(fmt::format("line {}", line_of(s.call)));
            }
        }
        if (!why.empty()) {
            h.refused = why;
            out.push_back(std::move(h));
            continue;
        }
        h.edits = std::move(edits);
        h.detail = fmt::format("the call{} at {} pass{} the list of ints `{}` is made from; `{}` is only iterated here",
                               where.size() > 1 ? "s" : "", fmt::join(where, ", "), where.size() > 1 ? "" : "es",
                               name, name);
        at_calls[name] = out.size();
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace graphmend::rules
