// Project: the compiled scope, the functions that run under torch.compile: its entry points
// and the walk of their calls (ScopeWalk). What a function binds: local_names.cpp. See
// include/graphmend/analysis.hpp.
#include <algorithm>
#include <deque>
#include <string_view>
#include <tuple>

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"
#include "scope_walk.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

bool is_function_node(const Node& n) { return n.is("function_definition") || n.is("lambda"); }

// The positional arguments of a call.
std::vector<Node> positional_args(const Node& call) {
    std::vector<Node> out;
    const Node args = call.field("arguments");
    if (!args.is("argument_list")) return out;
    for (const Node& a : args.named_children()) {
        if (a.is("comment")) continue;
        if (a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) continue;
        out.push_back(a);
    }
    return out;
}

Node keyword_arg(const Node& call, std::string_view name) {
    const Node args = call.field("arguments");
    if (!args.is("argument_list")) return {};
    for (const Node& a : args.named_children()) {
        if (a.is("keyword_argument") && a.field("name").text() == name) return a.field("value");
    }
    return {};
}

// The values `name = VALUE` binds in a function's body (not in its nested functions or
// classes), or at module level when `function` is the module's root. Chained assignments give
// their last value; a binding of another form (a loop target, a tuple) gives an invalid Node.
std::vector<Node> assigned_values(const Node& function, const std::string& name) {
    std::vector<Node> out;
    const Node body = function.is("module") ? function : function.field("body");
    syntax::walk(body, [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("assignment")) {
            Node right = n.field("right");
            while (right.is("assignment")) right = right.field("right");
            for (Node a = n; a.is("assignment"); a = a.field("right")) {
                if (a.field("left").is("identifier") && a.field("left").text() == name) out.push_back(right);
            }
        } else if ((n.is("for_statement") || n.is("for_in_clause") || n.is("augmented_assignment") ||
                    n.is("named_expression")) &&
                   n.child(0).is("identifier") && n.child(0).text() == name) {
            out.emplace_back();
        }
        return true;
    });
    return out;
}

// The function around a node whose locals it reads (lambdas skipped), or the module's root.
Node binding_scope(const Node& at) {
    Node fn = enclosing_function(at);
    while (fn && !fn.is("function_definition")) fn = enclosing_function(fn);
    if (fn) return fn;
    Node root = at;
    while (root.parent()) root = root.parent();
    return root;
}

}  // namespace

std::optional<std::pair<std::size_t, std::string>> Project::instance_class(std::size_t file, const Node& at,
                                                                         const std::string& name) const {
    std::optional<std::pair<std::size_t, std::string>> found;
    const auto values = assigned_values(binding_scope(at), name);
    for (const Node& v : values) {
        if (!v.is("call")) return std::nullopt;
        Node cls = v.field("function");
        if (cls.is("attribute") && cls.field("attribute").text().starts_with("from_")) cls = cls.field("object");
        const auto c = class_named(file, cls);
        if (!c || (found && *found != *c)) return std::nullopt;
        found = c;
    }
    return found;
}

std::optional<FunctionRef> Project::compiled_local(std::size_t file, const Node& function,
                                                   const std::string& name) const {
    const std::uint32_t at = function && !function.is("module") ? function.begin() : 0;
    const auto it = compiled_locals_.find({file, at, name});
    if (it == compiled_locals_.end()) return std::nullopt;
    return it->second;
}

bool Project::in_scope(std::size_t file, std::uint32_t begin) const { return scope_.contains({file, begin}); }

std::vector<Node> Project::scope_of(std::size_t file) const {
    const auto it = scope_nodes_.find(file);
    if (it == scope_nodes_.end()) return {};
    std::vector<Node> out = it->second;
    std::sort(out.begin(), out.end(), [](const Node& a, const Node& b) { return a.begin() < b.begin(); });
    return out;
}

std::string Project::owner_class(const Node& function) const {
    for (Node p = function.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) return std::string(p.field("name").text());
        if (is_function_node(p)) break;
    }
    return {};
}

Node Project::local_def(const Node& at, const std::string& name) const {
    // The def of `name` in the nearest enclosing function that has one (not inside its
    // nested functions or classes).
    for (Node fn = enclosing_function(at); fn; fn = enclosing_function(fn)) {
        if (!fn.is("function_definition")) continue;
        Node found;
        syntax::walk(fn.field("body"), [&](const Node& n) {
            if (found) return false;
            if (n.is("function_definition") && n.field("name").text() == name) {
                found = n;
                return false;
            }
            return !n.is("function_definition") && !n.is("class_definition") && !n.is("lambda");
        });
        if (found) return found;
    }
    return {};
}

Project::Tracing Project::tracing_of(std::size_t file, const Node& function) const {
    const Node decorated = function.parent();
    if (!decorated.is("decorated_definition")) return Tracing::Traced;
    for (const Node& d : decorated.named_children()) {
        if (!d.is("decorator")) continue;
        for (const Node& e : d.named_children()) {
            const Node callee = e.is("call") ? e.field("function") : e;
            const Symbol s = resolve_expr(file, callee);
            if (s.kind != Symbol::External) continue;
            if (knowledge::opaque_api(s.name)) return Tracing::Skipped;
            if (!knowledge::untraced_api(s.name)) continue;
            if (e.is("call")) {
                if (const Node r = keyword_arg(e, "recursive"); r && r.text() == "False") return Tracing::SkippedAlone;
            }
            return Tracing::Skipped;
        }
    }
    return Tracing::Traced;
}

bool Project::is_compile_api(std::size_t file, const Node& expr, bool factory) const {
    if (!expr.is("identifier") && !expr.is("attribute")) return false;
    const Symbol s = resolve_expr(file, expr);
    return s.kind == Symbol::External && knowledge::compile_api(s.name, factory);
}

Project::ScopeWalk::ScopeWalk(Project& project) : p(project) {
    for (const std::size_t f : p.by_path_) {
        for (const auto& [name, info] : p.files_[f].index.classes) {
            for (const auto& base : p.class_bases(f, name)) subclasses[base].emplace_back(f, name);
        }
    }
}

Node Project::ScopeWalk::function_of(std::size_t file, const std::string& name) {
    p.load({file});
    return p.files_[file].index.functions.at(name);
}

void Project::ScopeWalk::add(std::size_t f, const Node& fn) {
    if (!fn.is("function_definition")) return;
    if (std::string(fn.field("name").text()).starts_with("_graphmend")) return;
    const Tracing tracing = p.tracing_of(f, fn);
    if (tracing == Tracing::Skipped) return;
    if (!walked.insert({f, fn.begin()}).second) return;
    if (tracing == Tracing::Traced && p.scope_.insert({f, fn.begin()}).second) p.scope_nodes_[f].push_back(fn);
    work.push_back({f, fn});
    // A decorator of the project runs in its place (its wrapper calls the function).
    if (const Node decorated = fn.parent(); decorated.is("decorated_definition")) {
        for (const Node& d : decorated.named_children()) {
            if (!d.is("decorator")) continue;
            for (Node e : d.named_children()) {
                if (e.is("call")) e = e.field("function");
                const Symbol s = p.resolve_expr(f, e);
                if (s.kind == Symbol::Function) add(s.file, function_of(s.file, s.name));
            }
        }
    }
}

// A method `name` of a class, looked up along its bases and down its subclasses.
void Project::ScopeWalk::add_method(std::size_t f, const std::string& cls, const std::string& name, bool up,
                                    bool down) {
    std::set<ClassRef> seen;
    std::deque<std::pair<ClassRef, int>> q;  // dir: 1 up, 2 down, 3 both
    q.push_back({{f, cls}, (up ? 1 : 0) | (down ? 2 : 0)});
    while (!q.empty()) {
        auto [c, dir] = q.front();
        q.pop_front();
        if (!seen.insert(c).second) continue;
        const auto& classes = p.files_[c.first].index.classes;
        if (const auto it = classes.find(c.second); it != classes.end()) {
            if (const auto m = it->second.methods.find(name); m != it->second.methods.end()) {
                p.load({c.first});
                add(c.first, m->second);
            }
        }
        if (dir & 1) {
            for (const auto& b : p.class_bases(c.first, c.second)) q.push_back({b, 1});
        }
        if (dir & 2) {
            for (const auto& s : subclasses[c]) q.push_back({s, 2});
        }
    }
}

const std::set<Project::ScopeWalk::ClassRef>& Project::ScopeWalk::classes_of_attribute(std::size_t file,
                                                                                     const std::string& cls,
                                                                                     const std::string& name) {
    const auto key = std::make_tuple(file, cls, name);
    if (const auto it = attribute_classes.find(key); it != attribute_classes.end()) return it->second;
    std::set<ClassRef> out;
    std::vector<ClassRef> todo{{file, cls}};
    std::set<ClassRef> seen;
    while (!todo.empty()) {
        const auto c = todo.back();
        todo.pop_back();
        if (!seen.insert(c).second) continue;
        p.load({c.first});
        const auto it = p.files_[c.first].index.classes.find(c.second);
        if (it == p.files_[c.first].index.classes.end()) continue;
        // In __init__, as the value analysis reads attributes (Values, attributes_).
        if (const auto init = it->second.methods.find("__init__"); init != it->second.methods.end()) {
            syntax::walk(init->second.field("body"), [&](const Node& n) {
                if (n.is("function_definition") || n.is("class_definition")) return false;
                if (!n.is("assignment")) return true;
                const Node left = n.field("left");
                const Node right = n.field("right");
                if (left.is("attribute") && left.field("object").text() == "self" &&
                    left.field("attribute").text() == name && right.is("call")) {
                    const Symbol s = p.resolve_expr(c.first, right.field("function"));
                    if (s.kind == Symbol::Class && p.is_module_class(s.file, s.name)) out.emplace(s.file, s.name);
                }
                return true;
            });
        }
        for (const auto& b : p.class_bases(c.first, c.second)) todo.push_back(b);
    }
    return attribute_classes.emplace(key, std::move(out)).first->second;
}

// The function a compile call or a reference names: `f`, `self.m`, `mod.f`, `Class.m`,
// `obj.m` for a local `obj = Class(...)` / `Class.from_config(...)` (instance_class), and a
// local bound to one of these (`fn = scheduler.step`). Returns the function a call of the
// compiled callable runs, when there is one.
std::optional<FunctionRef> Project::ScopeWalk::add_target(std::size_t f, const Node& target, int depth) {
    if (depth > 4) return std::nullopt;
    if (target.is("identifier")) {
        const std::string name(target.text());
        if (const Node def = p.local_def(target, name)) {
            add(f, def);
            return FunctionRef{f, def};
        }
        const Node scope = binding_scope(target);
        const Symbol s = p.resolve_name(f, name);
        if (scope.is("function_definition") || s.kind == Symbol::None) {
            const auto values = assigned_values(scope, name);
            if (values.size() == 1 && values.front() &&
                (values.front().is("attribute") || values.front().is("identifier"))) {
                return add_target(f, values.front(), depth + 1);
            }
            if (!values.empty()) return std::nullopt;
        }
        if (s.kind == Symbol::Function) {
            const Node def = function_of(s.file, s.name);
            add(s.file, def);
            return FunctionRef{s.file, def};
        }
    } else if (target.is("attribute")) {
        const Node obj = target.field("object");
        const std::string attr(target.field("attribute").text());
        if (obj.text() == "self" || obj.text() == "cls") {
            const Node fn = enclosing_function(target);
            const std::string owner = fn ? p.owner_class(fn) : std::string();
            if (!owner.empty()) add_method(f, owner, attr, true, true);
            return std::nullopt;
        }
        const Symbol s = p.resolve_expr(f, obj);
        if (s.kind == Symbol::Module) {
            if (p.files_[s.file].index.functions.contains(attr)) {
                const Node def = function_of(s.file, attr);
                add(s.file, def);
                return FunctionRef{s.file, def};
            }
        } else if (s.kind == Symbol::Class) {
            add_method(s.file, s.name, attr, true, false);
        } else if (s.kind == Symbol::None && obj.is("identifier")) {
            // A bound method of an object the function makes: `torch.compile(scheduler.step)`.
            if (const auto c = p.instance_class(f, target, std::string(obj.text()))) {
                add_method(c->first, c->second, attr, true, false);
                if (const auto m = p.find_method(c->first, c->second, attr)) {
                    p.load({m->file});  // its node is filled in once its file is loaded
                    return p.find_method(c->first, c->second, attr);
                }
            }
        }
    }
    return std::nullopt;
}

// The files of the entry points are loaded together first (in parallel, when the loader
// given can): those with a module class's forward, and those with a compile API among
// their callees (ModuleIndex::compile_callees: only files whose text names `compile` or
// `optimize` have any, the files the walk below reads). Returns, per file, whether it has
// a compile API among its callees.
std::vector<bool> Project::ScopeWalk::load_entry_files() {
    std::vector<bool> compiles(p.files_.size(), false);
    std::vector<std::size_t> entries;
    for (const std::size_t f : p.by_path_) {
        for (const std::string& callee : p.files_[f].index.compile_callees) {
            const Symbol s = p.resolve_dotted(f, callee);
            compiles[f] = compiles[f] || (s.kind == Symbol::External && knowledge::compile_api(s.name, true));
        }
        bool forward = false;
        for (const auto& [name, info] : p.files_[f].index.classes) {
            forward = forward || (info.methods.contains("forward") && p.is_module_class(f, name));
        }
        if (forward || compiles[f] || !p.files_[f].scope_roots.empty()) entries.push_back(f);
    }
    p.load(entries);
    return compiles;
}

// Entry points 1: the forward of every nn.Module subclass.
void Project::ScopeWalk::add_forwards() {
    for (const std::size_t f : p.by_path_) {
        for (const auto& [name, info] : p.files_[f].index.classes) {
            if (!p.is_module_class(f, name)) continue;
            if (const auto m = info.methods.find("forward"); m != info.methods.end()) add(f, m->second);
        }
    }
}

// Entry points 2: functions decorated with a compile API or passed to one.
void Project::ScopeWalk::add_compiled(std::size_t f) {
    syntax::walk(p.files_[f].tree.root(), [&](const Node& n) {
        if (n.is("decorated_definition")) {
            const Node def = n.field("definition");
            if (!def.is("function_definition")) return true;
            for (const Node& d : n.named_children()) {
                if (!d.is("decorator")) continue;
                for (const Node& e : d.named_children()) {
                    if (e.is("call") ? p.is_compile_api(f, e.field("function"), true) : p.is_compile_api(f, e, false)) {
                        add(f, def);
                    }
                }
            }
            return true;
        }
        if (!n.is("call")) return true;
        const Node callee = n.field("function");
        const auto args = positional_args(n);
        std::optional<FunctionRef> compiled;
        if (p.is_compile_api(f, callee, false)) {  // torch.compile(f, ...)
            const Node target = args.empty() ? keyword_arg(n, "model") : args.front();
            if (target) compiled = add_target(f, target);
        } else if (callee.is("call") && p.is_compile_api(f, callee.field("function"), true) && !args.empty()) {
            compiled = add_target(f, args.front());  // torch.compile(**kw)(f), torch._dynamo.optimize(b)(f)
        }
        // `step = torch.compile(...)`: the calls of `step` in the same function call the
        // compiled function (drivers, compiled_local).
        if (const Node bind = n.parent(); compiled && bind.is("assignment") && bind.field("left").is("identifier")) {
            const Node scope = binding_scope(n);
            const std::uint32_t at = scope.is("module") ? 0 : scope.begin();
            p.compiled_locals_.emplace(std::make_tuple(f, at, std::string(bind.field("left").text())), *compiled);
            if (!scope.is("module") &&
                std::none_of(p.drivers_.begin(), p.drivers_.end(), [&](const FunctionRef& r) { return r.file == f && r.node == scope; })) {
                p.drivers_.push_back({f, scope});
            }
        }
        return true;
    });
}

// Entry points 3: the functions holding the lines told from outside (SourceFile::scope_roots:
// the frames Dynamo traced, as `graphmend verify` saw them in the original run). A line outside
// every `def` (module level) adds nothing.
void Project::ScopeWalk::add_roots(std::size_t f) {
    const syntax::Tree& tree = p.files_[f].tree;
    const syntax::SourceText& text = tree.source();
    for (const std::uint32_t line : p.files_[f].scope_roots) {
        std::uint32_t at = text.line_start(line);
        const std::uint32_t end = text.line_start(line + 1);
        const std::string_view whole = text.text();
        while (at < end && at < whole.size() && (whole[at] == ' ' || whole[at] == '\t')) ++at;
        if (at >= whole.size()) continue;
        for (Node n = tree.root().descendant(at, at); n; n = n.parent()) {
            if (n.is("function_definition")) {
                add(f, n);
                break;
            }
        }
    }
}

// The functions and methods the calls of one function in the walk run.
void Project::ScopeWalk::walk_calls(const FunctionRef& ref) {
    const std::string owner = p.owner_class(ref.node);  // the class the function is a method of, if any
    syntax::walk(ref.node.field("body"), [&](const Node& n) {
        if (n.is("function_definition")) {
            add(ref.file, n);  // nested helpers run when called from the body
            return false;
        }
        if (!n.is("call")) return true;
        const Node fn = n.field("function");
        note_call(ref, n);
        if (fn.is("identifier")) {
            const Symbol s = p.resolve_name(ref.file, std::string(fn.text()));
            if (s.kind == Symbol::Function) add(s.file, function_of(s.file, s.name));
            if (s.kind == Symbol::Class) add_method(s.file, s.name, "__init__", true, false);
        } else if (fn.is("attribute")) {
            const Node obj = fn.field("object");
            const std::string attr(fn.field("attribute").text());
            if ((obj.text() == "self" || obj.text() == "cls") && !owner.empty()) {
                add_method(ref.file, owner, attr, true, true);
            } else if (obj.is("call") && obj.field("function").text() == "super" && !owner.empty()) {
                for (const auto& b : p.class_bases(ref.file, owner)) add_method(b.first, b.second, attr, true, false);
            } else if (obj.is("attribute") && obj.field("object").text() == "self" && !owner.empty()) {
                // `self.NAME.m(...)` on a module attribute: the method of its class.
                const std::string name(obj.field("attribute").text());
                for (const auto& c : classes_of_attribute(ref.file, owner, name)) {
                    add_method(c.first, c.second, attr, true, false);
                }
            } else {
                const Symbol s = p.resolve_expr(ref.file, obj);
                if (s.kind == Symbol::Module) {
                    if (p.files_[s.file].index.functions.contains(attr)) add(s.file, function_of(s.file, attr));
                } else if (s.kind == Symbol::Class) {
                    add_method(s.file, s.name, attr, true, false);
                }
            }
        }
        return true;
    });
}

void Project::ScopeWalk::run() {
    while (!work.empty()) {
        const FunctionRef ref = work.front();
        work.pop_front();
        walk_calls(ref);
    }
}

void Project::compute_scope() {
    ScopeWalk walk(*this);
    const std::vector<bool> compiles = walk.load_entry_files();
    walk.add_forwards();
    for (const std::size_t f : by_path_) {
        if (compiles[f]) walk.add_compiled(f);
        if (!files_[f].scope_roots.empty()) walk.add_roots(f);
    }
    walk.run();
    walk.follow_passed_callables();
}

}  // namespace graphmend::analysis
