// Project: name resolution across the files fixed together, nn.Module detection and the
// compiled scope. See include/graphmend/analysis.hpp.
#include <deque>
#include <functional>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

constexpr int kMaxDepth = 16;

bool is_torch_nn_name(const std::string& dotted) {
    return dotted.starts_with("torch.nn.") && !dotted.starts_with("torch.nn.functional") &&
           !dotted.starts_with("torch.nn.utils") && !dotted.starts_with("torch.nn.init");
}

bool is_function_node(const Node& n) { return n.is("function_definition") || n.is("lambda"); }

}  // namespace

Project::Project(std::vector<SourceFile> files) : files_(std::move(files)) {
    for (std::size_t i = 0; i < files_.size(); ++i) by_module_.emplace(files_[i].module_name, i);
    compute_module_classes();
    compute_scope();
}

std::optional<std::size_t> Project::find_module(const std::string& dotted) const {
    const auto it = by_module_.find(dotted);
    if (it == by_module_.end()) return std::nullopt;
    return it->second;
}

std::string Project::absolute_module(std::size_t file, const Import& imp) const {
    if (imp.level == 0) return imp.module;
    std::string base = files_[file].module_name;
    // The package of a module is its name minus the last part; an __init__ is its package.
    int strip = imp.level - (files_[file].is_package_init ? 1 : 0);
    for (int i = 0; i < strip; ++i) {
        const auto dot = base.rfind('.');
        base = dot == std::string::npos ? std::string() : base.substr(0, dot);
    }
    if (imp.module.empty()) return base;
    return base.empty() ? imp.module : base + "." + imp.module;
}

Project::Symbol Project::resolve_in_module(const std::string& module, const std::string& name, int depth) const {
    if (depth > kMaxDepth) return {};
    if (const auto sub = find_module(module + "." + name)) return {Symbol::Module, *sub, ""};
    if (const auto mod = find_module(module)) {
        const ModuleIndex& idx = files_[*mod].index;
        if (idx.classes.contains(name)) return {Symbol::Class, *mod, name};
        if (idx.functions.contains(name)) return {Symbol::Function, *mod, name};
        if (idx.find_import(name) != nullptr) return resolve_name(*mod, name, depth + 1);
        return {};
    }
    return {Symbol::External, 0, module + "." + name};
}

Project::Symbol Project::resolve_name(std::size_t file, const std::string& name, int depth) const {
    if (depth > kMaxDepth) return {};
    const ModuleIndex& idx = files_[file].index;
    if (idx.classes.contains(name)) return {Symbol::Class, file, name};
    if (idx.functions.contains(name)) return {Symbol::Function, file, name};
    const Import* imp = idx.find_import(name);
    if (imp == nullptr) return {};
    const std::string module = absolute_module(file, *imp);
    if (imp->name.empty()) {
        if (const auto m = find_module(module)) return {Symbol::Module, *m, ""};
        return {Symbol::External, 0, module};
    }
    return resolve_in_module(module, imp->name, depth + 1);
}

Project::Symbol Project::resolve_expr(std::size_t file, const Node& expr) const {
    if (expr.is("identifier")) return resolve_name(file, std::string(expr.text()));
    if (expr.is("attribute")) {
        const Symbol base = resolve_expr(file, expr.field("object"));
        const std::string attr(expr.field("attribute").text());
        if (base.kind == Symbol::Module) return resolve_in_module(files_[base.file].module_name, attr, 0);
        if (base.kind == Symbol::External) return {Symbol::External, 0, base.name + "." + attr};
    }
    return {};
}

std::vector<std::pair<std::size_t, std::string>> Project::class_bases(std::size_t file,
                                                                    const std::string& cls) const {
    std::vector<std::pair<std::size_t, std::string>> out;
    const auto it = files_[file].index.classes.find(cls);
    if (it == files_[file].index.classes.end()) return out;
    for (const Node& b : it->second.bases) {
        const Symbol s = resolve_expr(file, b);
        if (s.kind == Symbol::Class) out.emplace_back(s.file, s.name);
    }
    return out;
}

bool Project::compute_module_class(std::size_t file, const std::string& class_name) {
    const auto key = std::make_pair(file, class_name);
    if (const auto it = module_classes_.find(key); it != module_classes_.end()) return it->second;
    module_classes_[key] = false;  // breaks cycles
    bool result = false;
    const auto it = files_[file].index.classes.find(class_name);
    if (it != files_[file].index.classes.end()) {
        for (const Node& b : it->second.bases) {
            const Symbol s = resolve_expr(file, b);
            if ((s.kind == Symbol::External && is_torch_nn_name(s.name)) ||
                (s.kind == Symbol::Class && compute_module_class(s.file, s.name))) {
                result = true;
                break;
            }
        }
    }
    module_classes_[key] = result;
    return result;
}

void Project::compute_module_classes() {
    // In file order, then class-name order: a cycle of bases resolves the same way every run.
    for (std::size_t f = 0; f < files_.size(); ++f) {
        for (const auto& [name, info] : files_[f].index.classes) compute_module_class(f, name);
    }
}

bool Project::is_module_class(std::size_t file, const std::string& class_name) const {
    const auto it = module_classes_.find({file, class_name});
    return it != module_classes_.end() && it->second;
}

bool Project::in_scope(std::size_t file, std::uint32_t begin) const { return scope_.contains({file, begin}); }

std::vector<Node> Project::scope_of(std::size_t file) const {
    std::vector<Node> out;
    syntax::walk(files_[file].tree.root(), [&](const Node& n) {
        if (n.is("function_definition") && in_scope(file, n.begin())) out.push_back(n);
        return true;
    });
    return out;
}

void Project::compute_scope() {
    // Class hierarchy inside the project: (file, class) -> subclasses.
    std::map<std::pair<std::size_t, std::string>, std::vector<std::pair<std::size_t, std::string>>> subclasses;
    for (std::size_t f = 0; f < files_.size(); ++f) {
        for (const auto& [name, info] : files_[f].index.classes) {
            for (const auto& base : class_bases(f, name)) subclasses[base].emplace_back(f, name);
        }
    }
    std::deque<FunctionRef> work;
    std::function<void(std::size_t, const Node&)> add = [&](std::size_t f, const Node& fn) {
        if (!fn.is("function_definition")) return;
        if (std::string(fn.field("name").text()).starts_with("_graphmend")) return;
        if (!scope_.insert({f, fn.begin()}).second) return;
        work.push_back({f, fn});
        // A decorator of the project runs in its place (its wrapper calls the function).
        if (const Node decorated = fn.parent(); decorated.is("decorated_definition")) {
            for (const Node& d : decorated.named_children()) {
                if (!d.is("decorator")) continue;
                for (Node e : d.named_children()) {
                    if (e.is("call")) e = e.field("function");
                    const Symbol s = resolve_expr(f, e);
                    if (s.kind == Symbol::Function) add(s.file, files_[s.file].index.functions.at(s.name));
                }
            }
        }
    };
    // A method `name` of a class, looked up along its bases and down its subclasses.
    auto add_method = [&](std::size_t f, const std::string& cls, const std::string& name, bool up, bool down) {
        std::set<std::pair<std::size_t, std::string>> seen;
        std::deque<std::pair<std::pair<std::size_t, std::string>, int>> q;  // dir: 1 up, 2 down, 3 both
        q.push_back({{f, cls}, (up ? 1 : 0) | (down ? 2 : 0)});
        while (!q.empty()) {
            auto [c, dir] = q.front();
            q.pop_front();
            if (!seen.insert(c).second) continue;
            const auto& classes = files_[c.first].index.classes;
            if (const auto it = classes.find(c.second); it != classes.end()) {
                if (const auto m = it->second.methods.find(name); m != it->second.methods.end()) {
                    add(c.first, m->second);
                }
            }
            if (dir & 1) {
                for (const auto& b : class_bases(c.first, c.second)) q.push_back({b, 1});
            }
            if (dir & 2) {
                for (const auto& s : subclasses[c]) q.push_back({s, 2});
            }
        }
    };
    for (std::size_t f = 0; f < files_.size(); ++f) {
        for (const auto& [name, info] : files_[f].index.classes) {
            if (!is_module_class(f, name)) continue;
            if (const auto m = info.methods.find("forward"); m != info.methods.end()) add(f, m->second);
        }
    }
    while (!work.empty()) {
        const FunctionRef ref = work.front();
        work.pop_front();
        // The class the function is a method of, if any.
        std::string owner;
        for (Node p = ref.node.parent(); p; p = p.parent()) {
            if (p.is("class_definition")) {
                owner = std::string(p.field("name").text());
                break;
            }
            if (is_function_node(p)) break;
        }
        syntax::walk(ref.node.field("body"), [&](const Node& n) {
            if (n.is("function_definition")) {
                add(ref.file, n);  // nested helpers run when called from the body
                return false;
            }
            if (!n.is("call")) return true;
            const Node fn = n.field("function");
            if (fn.is("identifier")) {
                const Symbol s = resolve_name(ref.file, std::string(fn.text()));
                if (s.kind == Symbol::Function) add(s.file, files_[s.file].index.functions.at(s.name));
                if (s.kind == Symbol::Class) add_method(s.file, s.name, "__init__", true, false);
            } else if (fn.is("attribute")) {
                const Node obj = fn.field("object");
                const std::string attr(fn.field("attribute").text());
                if ((obj.text() == "self" || obj.text() == "cls") && !owner.empty()) {
                    add_method(ref.file, owner, attr, true, true);
                } else if (obj.is("call") && obj.field("function").text() == "super" && !owner.empty()) {
                    for (const auto& b : class_bases(ref.file, owner)) add_method(b.first, b.second, attr, true, false);
                } else {
                    const Symbol s = resolve_expr(ref.file, obj);
                    if (s.kind == Symbol::Module) {
                        const auto& idx = files_[s.file].index;
                        if (const auto it = idx.functions.find(attr); it != idx.functions.end()) add(s.file, it->second);
                    } else if (s.kind == Symbol::Class) {
                        add_method(s.file, s.name, attr, true, false);
                    }
                }
            }
            return true;
        });
    }
}

std::set<std::string> local_names(const Node& function) {
    std::set<std::string> names;
    auto bind_targets = [&](const Node& target) {
        syntax::walk(target, [&](const Node& n) {
            if (n.is("identifier")) names.insert(std::string(n.text()));
            return !n.is("attribute") && !n.is("subscript");
        });
    };
    if (const Node params = function.field("parameters")) {
        for (const Node& p : params.named_children()) {
            if (p.is("identifier")) {
                names.insert(std::string(p.text()));
            } else if (const Node name = p.field("name"); name.is("identifier")) {
                names.insert(std::string(name.text()));
            } else {
                for (const Node& c : p.named_children()) {
                    if (c.is("identifier")) {
                        names.insert(std::string(c.text()));
                        break;
                    }
                }
            }
        }
    }
    syntax::walk(function.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition")) {
            names.insert(std::string(n.field("name").text()));
            return false;
        }
        if (n.is("lambda")) return false;
        if (n.is("assignment") || n.is("augmented_assignment")) bind_targets(n.field("left"));
        if (n.is("for_statement") || n.is("for_in_clause")) bind_targets(n.field("left"));
        if (n.is("named_expression")) bind_targets(n.field("name"));
        if (n.is("as_pattern_target")) bind_targets(n);
        if (n.is("aliased_import")) names.insert(std::string(n.field("alias").text()));
        if (n.is("import_statement") || n.is("import_from_statement")) {
            for (const Node& c : n.named_children()) {
                if (c.is("dotted_name") && !(n.is("import_from_statement") && c == n.field("module_name"))) {
                    const std::string full(c.text());
                    names.insert(full.substr(0, full.find('.')));
                }
            }
        }
        if (n.is("global_statement") || n.is("nonlocal_statement")) return false;
        return true;
    });
    return names;
}

Node enclosing_function(const Node& node) {
    for (Node p = node.parent(); p; p = p.parent()) {
        if (is_function_node(p)) return p;
    }
    return {};
}

}  // namespace graphmend::analysis
