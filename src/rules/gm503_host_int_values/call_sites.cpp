// Every call of a function in the project, for the host-int matcher (see
// host_ints_internal.hpp): the calls the analysis resolves, in the files that name the function
// (or, for a module's forward, its class), and why some call may not be seen.
#include <fmt/format.h>

#include "graphmend/knowledge.hpp"
#include "host_ints_internal.hpp"

namespace graphmend::rules::host_ints {

// The base name of file `f`'s path.
std::string Matcher::file_name(std::size_t f) const {
    const std::string& p = ctx.project.files()[f].path;
    return p.substr(p.find_last_of('/') + 1);
}

// True when `call` is to a torch function (not in place, no `out=`).
bool Matcher::torch_call(std::size_t f, const Node& call) const {
    const Node fn = call.field("function");
    const std::string name = ctx.project.external_name(f, fn);
    if (!name.starts_with("torch.") || name.ends_with("_")) return false;
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("keyword_argument") && a.field("name").text() == "out") return false;
    }
    return true;
}

// The project function `call` (in file `f`) calls, a local iterating modules included.
std::optional<analysis::FunctionRef> Matcher::project_callee(std::size_t f, const Node& call) const {
    if (auto ref = ctx.values.callee(f, call)) return ref;
    const Node fn = call.field("function");
    if (fn.is("identifier")) return module_var_forward(f, fn);
    return std::nullopt;
}

// The forward of the modules a local iterates: `for i, layer in enumerate(self.layers)`
// with `self.layers = nn.ModuleList([Layer(...) for ...])` (or a list of Layer(...)) in
// the class's __init__.
std::optional<analysis::FunctionRef> Matcher::module_var_forward(std::size_t f, const Node& id,
                                                                 const Node& enclosing) const {
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

// The files that may call `def` (in `file`).
std::vector<std::size_t> Matcher::files_naming(std::size_t file, const Node& def) const {
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
    std::vector<std::size_t> naming;
    for (std::size_t f = 0; f < files.size(); ++f) {
        // Only files that can name `def`'s file: another folder project's `key` is another function.
        if (ctx.project.visible(f, file) && analysis::mentions(files[f], key)) {
            naming.push_back(f);
        }
    }
    return naming;
}

// The calls of `def` in the files `naming` (into `out`), and why some may not be seen (into
// `why`): `def` named other than called, a module's forward reached other than through a call.
void Matcher::direct_calls(std::size_t file, const Node& def, const std::vector<std::size_t>& naming,
                           std::vector<CallSite>& out, std::string& why) const {
    const std::string name = text(def.field("name"));
    const bool forward = name == "forward";
    const auto& files = ctx.project.files();
    const bool method = def.parent().is("block") && def.parent().parent().is("class_definition");
    const bool decorated_method = def.parent().is("decorated_definition") && def.parent().parent().is("block") &&
                                  def.parent().parent().parent().is("class_definition");
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
}

// Why a closure in the files `naming` may call `def`, a module's forward, with `*args` (""
// when none may).
std::string Matcher::splat_calls(std::size_t file, const Node& def, const std::vector<std::size_t>& naming) const {
    std::string why;
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
    return why;
}

// Every call of `def` (in `file`) in the project's files, and why they cannot all be known
// ("" when they can).
std::vector<CallSite> Matcher::call_sites(std::size_t file, const Node& def, std::string& why) const {
    std::vector<CallSite> out;
    const bool forward = text(def.field("name")) == "forward";
    const auto naming = files_naming(file, def);
    direct_calls(file, def, naming, out, why);
    if (forward && why.empty()) why = splat_calls(file, def, naming);
    return out;
}

}  // namespace graphmend::rules::host_ints
