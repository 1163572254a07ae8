// Project name resolution: a name through the file's imports, star imports and the modules
// among the inputs, to a module, class, function, logger or a dotted name outside the inputs;
// the classes a class derives from; and what an imported logger is. See
// include/graphmend/analysis.hpp.
#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

constexpr int kMaxDepth = 16;

// True when a dotted module name says it holds loggers: a part `logging`, `log`, `logger`,
// `log_utils`, `utils_logging`, ... (`transformers.utils.logging`, `delta.log_utils`), not
// `loguru` or `structlog`, whose loggers are no logging.Logger.
bool module_says_logging(std::string_view dotted) {
    while (!dotted.empty()) {
        const auto dot = dotted.find('.');
        std::string part(dotted.substr(0, dot));
        dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
        while (part.starts_with('_')) part.erase(0, 1);
        std::transform(part.begin(), part.end(), part.begin(), [](unsigned char c) { return std::tolower(c); });
        for (const std::string_view word : {"logging", "log", "logger", "loggers"}) {
            if (part == word || part.starts_with(std::string(word) + "_") || part.ends_with("_" + std::string(word))) {
                return true;
            }
        }
    }
    return false;
}

// True when a name says it is a logger: `logger`, `log`, `LOGGER`, `_logger`, `root_logger`.
bool name_says_logger(std::string name) {
    while (name.starts_with('_')) name.erase(0, 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    return name == "log" || name.ends_with("logger") || name.starts_with("logger_");
}

}  // namespace

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

Project::Symbol Project::resolve_in_module(const std::string& ns, const std::string& module, const std::string& name,
                                           int depth) const {
    if (depth > kMaxDepth) return {};
    if (const auto sub = find_module(ns, module + "." + name)) return {Symbol::Module, *sub, ""};
    if (const auto mod = find_module(ns, module)) {
        const ModuleIndex& idx = files_[*mod].index;
        if (idx.classes.contains(name)) return {Symbol::Class, *mod, name};
        if (idx.functions.contains(name)) return {Symbol::Function, *mod, name};
        // A logger bound by getLogger(...)/get_logger(...) there and by nothing else.
        if (idx.loggers.contains(name) && !idx.assigned.contains(name) && idx.find_import(name) == nullptr) {
            return {Symbol::Logger, *mod, name};
        }
        if (idx.find_import(name) != nullptr) return resolve_name(*mod, name, depth + 1);
        if (Symbol s = resolve_star(*mod, name, depth + 1); s.kind != Symbol::None) return s;
        // A package that imports the name on first use (`__getattr__`, `_LazyModule`): from
        // the submodule its map names, when that module is among the inputs.
        if (const auto lazy = idx.lazy_exports.find(name); lazy != idx.lazy_exports.end() && files_[*mod].is_package_init) {
            const std::string owner = module + "." + lazy->second;
            if (find_module(ns, owner)) return resolve_in_module(ns, owner, name, depth + 1);
        }
        return {};
    }
    return {Symbol::External, 0, module + "." + name};
}

Project::Symbol Project::resolve_star(std::size_t file, const std::string& name, int depth) const {
    // `from .conv import *` re-exports the public names of a module among the inputs
    // (torch_geometric.nn re-exports MessagePassing so). A star import of a module outside
    // the inputs says nothing known about `name`.
    if (depth > kMaxDepth || name.starts_with("_")) return {};
    const auto& stars = files_[file].index.star_imports;
    for (auto it = stars.rbegin(); it != stars.rend(); ++it) {
        const std::string module = absolute_module(file, *it);
        const auto mod = find_module(namespace_of(file), module);
        if (!mod || *mod == file) continue;
        if (Symbol s = resolve_in_module(namespace_of(file), module, name, depth + 1); s.kind != Symbol::None) return s;
    }
    return {};
}

Project::Symbol Project::resolve_name(std::size_t file, const std::string& name, int depth) const {
    if (depth > kMaxDepth) return {};
    const ModuleIndex& idx = files_[file].index;
    if (idx.classes.contains(name)) return {Symbol::Class, file, name};
    if (idx.functions.contains(name)) return {Symbol::Function, file, name};
    const Import* imp = idx.find_import(name);
    if (imp == nullptr) return resolve_star(file, name, depth + 1);
    const std::string module = absolute_module(file, *imp);
    if (imp->name.empty()) {
        if (const auto m = find_module(namespace_of(file), module)) return {Symbol::Module, *m, ""};
        return {Symbol::External, 0, module};
    }
    return resolve_in_module(namespace_of(file), module, imp->name, depth + 1);
}

Project::Symbol Project::resolve_expr(std::size_t file, const Node& expr) const {
    if (expr.is("identifier")) return resolve_name(file, std::string(expr.text()));
    if (expr.is("attribute")) {
        const Symbol base = resolve_expr(file, expr.field("object"));
        const std::string attr(expr.field("attribute").text());
        if (base.kind == Symbol::Module) {
            return resolve_in_module(namespace_of(base.file), files_[base.file].module_name, attr, 0);
        }
        if (base.kind == Symbol::External) return {Symbol::External, 0, base.name + "." + attr};
    }
    return {};
}

Project::Symbol Project::resolve_dotted(std::size_t file, std::string_view chain) const {
    if (chain.empty()) return {};
    std::size_t dot = chain.find('.');
    Symbol s = resolve_name(file, std::string(chain.substr(0, dot)));
    while (dot != std::string_view::npos) {
        const std::size_t next = chain.find('.', dot + 1);
        const std::string attr(chain.substr(dot + 1, next == std::string_view::npos ? next : next - dot - 1));
        if (s.kind == Symbol::Module) {
            s = resolve_in_module(namespace_of(s.file), files_[s.file].module_name, attr, 0);
        } else if (s.kind == Symbol::External) {
            s = {Symbol::External, 0, s.name + "." + attr};
        } else {
            return {};
        }
        dot = next;
    }
    return s;
}

std::vector<std::pair<std::size_t, std::string>> Project::class_bases(std::size_t file,
                                                                    const std::string& cls) const {
    std::vector<std::pair<std::size_t, std::string>> out;
    const auto it = files_[file].index.classes.find(cls);
    if (it == files_[file].index.classes.end()) return out;
    for (const std::string& b : it->second.base_names) {
        const Symbol s = resolve_dotted(file, b);
        if (s.kind == Symbol::Class) out.emplace_back(s.file, s.name);
    }
    return out;
}

std::vector<std::pair<std::size_t, std::string>> Project::ancestors(std::size_t file, const std::string& cls) const {
    std::vector<std::pair<std::size_t, std::string>> out;
    std::vector<std::pair<std::size_t, std::string>> todo = class_bases(file, cls);
    std::set<std::pair<std::size_t, std::string>> seen{{file, cls}};
    while (!todo.empty()) {
        const auto c = todo.back();
        todo.pop_back();
        if (!seen.insert(c).second) continue;
        out.push_back(c);
        for (const auto& b : class_bases(c.first, c.second)) todo.push_back(b);
    }
    return out;
}

std::string Project::import_text(const Import& imp) const {
    const std::string dots(static_cast<std::size_t>(imp.level), '.');
    if (imp.name.empty()) {
        return imp.local == imp.module ? fmt::format("import {}", imp.module)
                                       : fmt::format("import {} as {}", imp.module, imp.local);
    }
    const std::string as = imp.local == imp.name ? std::string() : " as " + imp.local;
    return fmt::format("from {}{} import {}{}", dots, imp.module, imp.name, as);
}

ImportedLogger Project::imported_logger(std::size_t file, const std::string& name) const {
    const ModuleIndex& idx = files_[file].index;
    if (idx.classes.contains(name) || idx.functions.contains(name) || idx.assigned.contains(name) ||
        idx.loggers.contains(name)) {
        return {};
    }
    const Import* imp = idx.find_import(name);
    if (imp == nullptr) {
        // Through `from M import *` of an input module that binds it, or of a module unseen.
        const Symbol s = resolve_name(file, name);
        if (s.kind == Symbol::Logger) {
            return {ImportedLogger::Logger, fmt::format("`{}` comes from a star import: {} binds it with "
                                                        "getLogger(...)/get_logger(...)",
                                                        name, files_[s.file].module_name)};
        }
        if (!name_says_logger(name) || idx.star_imports.empty()) return {};
        return {ImportedLogger::Unknown,
                fmt::format("`{}` is bound by no import or assignment of this file (a star import?), so it is not "
                            "known to be a logging.Logger",
                            name)};
    }
    if (imp->name.empty()) return {};  // a module
    const Symbol s = resolve_name(file, name);
    const std::string origin = import_text(*imp);
    if (s.kind == Symbol::Logger) {
        return {ImportedLogger::Logger, fmt::format("`{}` comes from `{}`: {} binds it with getLogger(...)/"
                                                    "get_logger(...)",
                                                    name, origin, files_[s.file].module_name)};
    }
    if (s.kind == Symbol::External) {
        const auto dot = s.name.rfind('.');
        const std::string module = dot == std::string::npos ? std::string() : s.name.substr(0, dot);
        const std::string bound = s.name.substr(dot == std::string::npos ? 0 : dot + 1);
        if ((module == "logging" && bound == "root") || (module_says_logging(module) && name_says_logger(bound))) {
            return {ImportedLogger::Assumed,
                    fmt::format("assumed a logging.Logger: `{}` comes from `{}`, and {} is not among the inputs; "
                                "its name and the logger's say so",
                                name, origin, module)};
        }
        if (!name_says_logger(bound) && !name_says_logger(name)) return {};
        return {ImportedLogger::Unknown,
                fmt::format("`{}` comes from `{}`, and {} is not among the inputs; its name does not say it holds "
                            "loggers (loguru's `logger` is no logging.Logger), so the call is not rewritten: the "
                            "rewrite replays it through logging.Logger's methods. Give graphmend that module's file "
                            "if it is one of the project's",
                            name, origin, module)};
    }
    if (s.kind == Symbol::None && (name_says_logger(imp->name) || name_says_logger(name))) {
        return {ImportedLogger::Unknown,
                fmt::format("`{}` comes from `{}`, which does not bind it by getLogger(...)/get_logger(...) alone, so "
                            "it is not known to be a logging.Logger",
                            name, origin)};
    }
    return {};
}

}  // namespace graphmend::analysis
