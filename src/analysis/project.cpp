// Project: name resolution across the files fixed together, nn.Module detection and the
// compiled scope. See include/graphmend/analysis.hpp.
#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

constexpr int kMaxDepth = 16;

bool is_torch_nn_name(const std::string& dotted) {
    return dotted.starts_with("torch.nn.") && !dotted.starts_with("torch.nn.functional") &&
           !dotted.starts_with("torch.nn.utils") && !dotted.starts_with("torch.nn.init");
}

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

bool is_torch_module(const std::string& dotted) { return dotted == "torch" || dotted.starts_with("torch."); }

// The table's entry `M.C` for a class C that a relative import outside the inputs names as
// `TAIL.C` (`from ...modeling_utils import PreTrainedModel`: TAIL "modeling_utils"): an M
// that is TAIL or ends with `.TAIL`, the first in name order; any M for an empty TAIL.
std::optional<std::string> table_entry(const std::string& cls, const std::string& tail) {
    const auto& table = knowledge::installed_module_classes();
    const auto it = table.find(cls);
    if (it == table.end()) return std::nullopt;
    std::optional<std::string> best;
    for (const std::string& m : it->second) {
        if (!tail.empty() && m != tail && !m.ends_with("." + tail)) continue;
        if (!best || m < *best) best = m;
    }
    if (!best) return std::nullopt;
    return *best + "." + cls;
}

// Packages outside the inputs whose classes graphmend knows to be nn.Modules or not: torch
// (is_external_module_class) and the standard library modules classes come from.
bool is_known_package(const std::string& dotted) {
    return knowledge::known_package(std::string_view(dotted).substr(0, dotted.find('.')));
}

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

bool is_external_module_class(const std::string& dotted) {
    if (is_torch_nn_name(dotted) || knowledge::other_torch_module(dotted)) return true;
    const auto dot = dotted.rfind('.');
    if (dot == std::string::npos) return false;
    const std::string_view module = std::string_view(dotted).substr(0, dot);
    const auto& table = knowledge::installed_module_classes();
    const auto it = table.find(dotted.substr(dot + 1));
    if (it == table.end()) return false;
    // `P.C` matches an entry `M: C` when P is M or a package above it (re-exports).
    return std::any_of(it->second.begin(), it->second.end(), [&](const std::string& m) {
        return m == module || (m.size() > module.size() && m.starts_with(module) && m[module.size()] == '.');
    });
}

struct Project::LoadedTrees {
    std::mutex mutex;
    std::map<std::size_t, std::unique_ptr<syntax::Tree>> trees;
};

const syntax::Tree& Project::tree_of(std::size_t file) const {
    if (!files_[file].pruned) return files_[file].tree;
    const std::lock_guard<std::mutex> lock(loaded_->mutex);
    auto& tree = loaded_->trees[file];
    if (!tree) tree = std::make_unique<syntax::Tree>(syntax::Tree::parse(read_source(files_[file])));
    return *tree;
}

Project::Project(std::vector<SourceFile> files, Loader load)
    : files_(std::move(files)), load_(std::move(load)), loaded_(std::make_shared<LoadedTrees>()) {
    for (SourceFile& file : files_) {
        if (file.words.empty() && !file.on_disk) file.words = word_hashes(read_source(file));
    }
    register_modules();
    compute_module_classes();
    compute_scope();
    compute_notes();
    load_read_files();
    load_ = nullptr;
}

void Project::register_modules() {
    namespace fs = std::filesystem;
    std::vector<std::string> keys;
    for (const auto& f : files_) keys.push_back(fs::absolute(fs::path(f.path)).lexically_normal().string());
    by_path_.resize(files_.size());
    for (std::size_t i = 0; i < files_.size(); ++i) by_path_[i] = i;
    std::stable_sort(by_path_.begin(), by_path_.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    for (const std::size_t i : by_path_) {
        const std::string& ns = namespace_of(i);
        // torch's own sources among the inputs (a tree that vendors or develops torch) are not
        // what the code imports by `torch...` in the sense that matters here: torch's classes
        // and functions are recognised by their dotted names (is_external_module_class, the
        // rules' torch.* tables), so `torch` stays external whatever the folder holds.
        if (!files_[i].isolated && is_torch_module(files_[i].module_name)) continue;
        by_module_.emplace(std::make_pair(ns, files_[i].module_name), i);
        // A script's sibling is importable by its bare name (`import utils` next to it).
        if (files_[i].isolated) {
            const auto dot = files_[i].module_name.find('.');
            if (dot != std::string::npos) by_module_.emplace(std::make_pair(ns, files_[i].module_name.substr(dot + 1)), i);
        }
    }
}

namespace {

// The identifier/attribute chains of a tree's expressions that name resolution can start
// from (Project::resolve_expr), each with its prefixes (`a`, `a.b`, `a.b.c`), outside import
// statements. Distinct, sorted.
std::set<std::string> expression_chains(const Node& root) {
    std::set<std::string> out;
    syntax::walk(root, [&](const Node& n) {
        if (n.is("import_statement") || n.is("import_from_statement") || n.is("future_import_statement")) {
            return false;
        }
        if (!n.is("identifier") && !n.is("attribute")) return true;
        const std::string chain = chain_text(n);
        if (chain.empty()) return true;  // `f().x`: not resolved; its parts are walked
        for (std::size_t dot = chain.find('.'); dot != std::string::npos; dot = chain.find('.', dot + 1)) {
            out.insert(chain.substr(0, dot));
        }
        out.insert(chain);
        return false;  // the chain's parts are in it
    });
    return out;
}

}  // namespace

void load_file(SourceFile& file) {
    if (!file.pruned) return;
    file.tree = syntax::Tree::parse(file.on_disk ? read_source(file) : std::move(file.text));
    file.text = std::string();
    file.on_disk.reset();
    file.pruned = false;
    // The same text gives the same names: only the nodes are filled in, so maps, and any
    // iterator into them, stay as they were.
    ModuleIndex fresh = index_module(file.tree.root());
    for (auto& [name, info] : file.index.classes) {
        const ClassInfo& now = fresh.classes.at(name);
        info.node = now.node;
        info.bases = now.bases;
        for (auto& [method, def] : info.methods) def = now.methods.at(method);
    }
    for (auto& [name, def] : file.index.functions) def = fresh.functions.at(name);
}

void Project::load(const std::vector<std::size_t>& wanted) {
    std::vector<std::size_t> pruned;
    for (const std::size_t f : wanted) {
        if (files_[f].pruned && std::find(pruned.begin(), pruned.end(), f) == pruned.end()) pruned.push_back(f);
    }
    if (pruned.empty()) return;
    if (load_) {
        load_(files_, pruned);
    } else {
        for (const std::size_t f : pruned) load_file(files_[f]);
    }
}

void Project::load_read_files() {
    // What the value analysis and the rules read besides the scope: the classes and functions
    // the scope's files name (a module attribute's class, a callee outside the scope), and
    // the classes those name in their __init__, with the bases of every class read.
    std::vector<std::size_t> wave;
    std::set<std::size_t> chased;
    // Loaded files whose classes' bases were walked: bases resolve by names only, so once is enough.
    std::set<std::size_t> based;
    static const std::map<std::string, ClassInfo> kNoClasses;
    for (const auto& [f, fns] : scope_nodes_) {
        chased.insert(f);
        for (const std::string& chain : expression_chains(files_[f].tree.root())) {
            const Symbol s = resolve_dotted(f, chain);
            if (s.kind == Symbol::Class || s.kind == Symbol::Function) wave.push_back(s.file);
        }
    }
    while (true) {
        for (std::size_t f = 0; f < files_.size(); ++f) {
            if (files_[f].pruned) continue;
            for (const auto& [name, info] : based.insert(f).second ? files_[f].index.classes : kNoClasses) {
                for (const auto& c : ancestors(f, name)) {
                    if (files_[c.first].pruned) wave.push_back(c.first);
                }
            }
            if (!chased.insert(f).second) continue;
            for (const auto& [name, info] : files_[f].index.classes) {
                const auto init = info.methods.find("__init__");
                if (init == info.methods.end()) continue;
                for (const std::string& chain : expression_chains(init->second)) {
                    const Symbol s = resolve_dotted(f, chain);
                    if (s.kind == Symbol::Class && files_[s.file].pruned) wave.push_back(s.file);
                }
            }
        }
        std::erase_if(wave, [&](std::size_t f) { return !files_[f].pruned; });
        if (wave.empty()) return;
        load(wave);
        wave.clear();
    }
}

const std::string& Project::namespace_of(std::size_t file) const {
    static const std::string kPackages;
    return files_[file].isolated ? files_[file].project : kPackages;
}

std::optional<std::size_t> Project::find_module(const std::string& ns, const std::string& dotted) const {
    if (!ns.empty()) {
        if (const auto it = by_module_.find({ns, dotted}); it != by_module_.end()) return it->second;
    }
    if (const auto it = by_module_.find({std::string(), dotted}); it != by_module_.end()) return it->second;
    return std::nullopt;
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
        return resolve_star(*mod, name, depth + 1);
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

bool Project::compute_module_class(std::size_t file, const std::string& class_name) {
    const auto key = std::make_pair(file, class_name);
    if (const auto it = module_classes_.find(key); it != module_classes_.end()) return it->second;
    module_classes_[key] = false;  // breaks cycles
    bool result = false;
    const auto it = files_[file].index.classes.find(class_name);
    if (it != files_[file].index.classes.end()) {
        for (const std::string& b : it->second.base_names) {
            const Symbol s = resolve_dotted(file, b);
            if ((s.kind == Symbol::External && is_external_module_class(s.name)) ||
                (s.kind == Symbol::Class && compute_module_class(s.file, s.name))) {
                result = true;
                break;
            }
        }
        // No base resolves to an nn.Module: one that could not be resolved may be taken from
        // the shipped table (read_base), which its note says.
        for (std::size_t k = 0; !result && k < it->second.base_names.size(); ++k) {
            BaseReading r = read_base(file, it->second, k);
            if (r.kind != BaseReading::Assumed) continue;
            assumed_bases_[key] = std::move(r.text);
            result = true;
        }
    }
    module_classes_[key] = result;
    return result;
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

Project::BaseReading Project::read_base(std::size_t file, const ClassInfo& info, std::size_t k) const {
    const SourceFile& sf = files_[file];
    const ModuleIndex& idx = sf.index;
    const std::string& chain = info.base_names[k];
    const std::string shown = k < info.base_texts.size() ? info.base_texts[k] : chain;
    if (chain.empty()) {
        // `Generic[T]`: what matters is the name subscripted; `make_base()` is not followed.
        const auto bracket = shown.find('[');
        if (bracket != std::string::npos) {
            const Symbol s = resolve_dotted(file, shown.substr(0, bracket));
            if (s.kind == Symbol::External && is_known_package(s.name)) return {};
        }
        return {BaseReading::Unknown, fmt::format("base `{}` is not a dotted name, which graphmend does not follow", shown)};
    }
    const std::string first = chain.substr(0, chain.find('.'));
    const std::string rest = first.size() < chain.size() ? chain.substr(first.size() + 1) : std::string();
    const Import* imp =
        idx.classes.contains(first) || idx.functions.contains(first) ? nullptr : idx.find_import(first);
    const Symbol s = resolve_dotted(file, chain);
    if (s.kind == Symbol::Class || s.kind == Symbol::Module || s.kind == Symbol::Function ||
        s.kind == Symbol::Logger) {
        return {};  // a project class: its own bases are read at it
    }
    if (s.kind == Symbol::External && imp != nullptr && imp->level > 0) {
        // A relative import whose module is not among the inputs: the file was given without
        // it (a model file copied out of its package, a helper left out).
        const std::string module = absolute_module(file, *imp);
        const std::string& ns = namespace_of(file);
        const bool missing = !find_module(ns, module) && (imp->name.empty() || !find_module(ns, module + "." + imp->name));
        if (missing) {
            std::string written = imp->module;
            for (const std::string& part : {imp->name, rest}) {
                if (part.empty()) continue;
                written += (written.empty() ? "" : ".") + part;
            }
            const auto dot = written.rfind('.');
            const std::string cls = dot == std::string::npos ? written : written.substr(dot + 1);
            const std::string tail = dot == std::string::npos ? std::string() : written.substr(0, dot);
            const std::size_t parts = static_cast<std::size_t>(std::count(sf.module_name.begin(), sf.module_name.end(), '.')) + 1;
            const int strip = imp->level - (sf.is_package_init ? 1 : 0);
            const std::string where =
                strip >= 0 && static_cast<std::size_t>(strip) >= parts
                    ? fmt::format("which leaves the {} `{}`", sf.isolated ? "folder" : "package",
                                  std::filesystem::path(sf.project).filename().string())
                    : fmt::format("whose module `{}` is not among the inputs", module.empty() ? "." : module);
            if (const auto entry = table_entry(cls, tail)) {
                const std::string as = tail.empty()
                    ? fmt::format("an nn.Module: `{}` is a class name in graphmend's table of transformers 4.52.4's "
                                  "nn.Module classes (e.g. `{}`)", cls, *entry)
                    : fmt::format("`{}`, an nn.Module in graphmend's table of transformers 4.52.4", *entry);
                return {BaseReading::Assumed, fmt::format("base `{}` comes from `{}`, {}: taken as {}", chain,
                                                          import_text(*imp), where, as)};
            }
            return {BaseReading::Unknown,
                    fmt::format("base `{}` could not be resolved: it comes from `{}`, {}, and graphmend's table of "
                                "transformers 4.52.4's nn.Module classes has no `{}`{}",
                                chain, import_text(*imp), where, cls,
                                tail.empty() ? std::string() : fmt::format(" in a module `...{}`", tail))};
        }
    }
    if (s.kind == Symbol::External) {
        if (is_known_package(s.name)) return {};
        if (s.name.starts_with("transformers.")) {
            return {BaseReading::Unknown,
                    fmt::format("base `{}` is `{}`, which graphmend's table of transformers 4.52.4's nn.Module classes "
                                "does not list (a class added later is not in it)",
                                chain, s.name)};
        }
        return {BaseReading::Unknown, fmt::format("base `{}` is `{}`, outside the inputs and not a known nn.Module "
                                                  "(torch.nn's, or transformers 4.52.4's in graphmend's table)",
                                                  chain, s.name)};
    }
    // Resolved to nothing.
    if (rest.empty() && knowledge::builtin_class(first)) return {};
    if (imp != nullptr) {
        return {BaseReading::Unknown, fmt::format("base `{}` could not be resolved: `{}` names no class graphmend can "
                                                  "see there",
                                                  chain, import_text(*imp))};
    }
    std::vector<std::string> outside;  // star imports of modules outside the inputs, last first
    for (auto it = idx.star_imports.rbegin(); it != idx.star_imports.rend(); ++it) {
        const std::string module = absolute_module(file, *it);
        if (find_module(namespace_of(file), module)) continue;
        if (it->level == 0 && is_external_module_class(module + "." + chain)) {
            return {BaseReading::Assumed, fmt::format("base `{}` is bound by no import of its own: taken as `{}.{}`, "
                                                      "an nn.Module, through `from {} import *`",
                                                      chain, module, chain, module)};
        }
        outside.push_back(fmt::format("`from {}{} import *`", std::string(static_cast<std::size_t>(it->level), '.'),
                                      it->module));
    }
    if (idx.assigned.contains(first)) {
        return {BaseReading::Unknown, fmt::format("base `{}` could not be resolved: `{}` is bound by an assignment, "
                                                  "which graphmend does not follow",
                                                  chain, first)};
    }
    if (!outside.empty()) {
        std::reverse(outside.begin(), outside.end());
        const std::string which =
            outside.size() == 1 ? outside.front()
            : outside.size() <= 3
                ? fmt::format("one of {}", fmt::join(outside, ", "))
                : fmt::format("one of {}, {} ... ({} star imports)", outside[0], outside[1], outside.size());
        return {BaseReading::Unknown, fmt::format("base `{}` could not be resolved: it may come from {}, of a "
                                                  "module graphmend does not read",
                                                  chain, which)};
    }
    return {BaseReading::Unknown,
            fmt::format("base `{}` could not be resolved: the module binds no `{}` at module level", chain, first)};
}

void Project::compute_notes() {
    // Per class with a forward: the classes it derives from in the inputs (itself first). A
    // base taken from the table is noted at the class it is a base of; so is a base that
    // resolves neither way, when the forward is out of scope for want of an nn.Module base.
    std::map<std::pair<std::size_t, std::string>, std::vector<std::pair<std::size_t, std::string>>> unresolved;
    std::set<std::pair<std::size_t, std::string>> assumed;
    for (const std::size_t f : by_path_) {
        for (const auto& [name, info] : files_[f].index.classes) {
            const auto forward = info.methods.find("forward");
            if (forward == info.methods.end()) continue;
            const bool in = !files_[f].pruned && forward->second && scope_.contains({f, forward->second.begin()});
            const bool out_of_scope = !is_module_class(f, name) && !in;
            std::vector<std::pair<std::size_t, std::string>> classes = ancestors(f, name);
            classes.insert(classes.begin(), {f, name});
            for (const auto& c : classes) {
                if (assumed_bases_.contains(c)) assumed.insert(c);
                if (out_of_scope) unresolved[c].emplace_back(f, name);
            }
        }
    }
    const auto add = [&](std::size_t file, const std::string& cls, std::string message) {
        notes_[file].push_back({files_[file].index.classes.at(cls).line, fmt::format("class `{}`: {}", cls, message)});
    };
    for (const auto& c : assumed) add(c.first, c.second, assumed_bases_.at(c));
    for (const auto& [c, subjects] : unresolved) {
        const ClassInfo& info = files_[c.first].index.classes.at(c.second);
        std::vector<std::string> why;
        for (std::size_t k = 0; k < info.base_names.size(); ++k) {
            BaseReading r = read_base(c.first, info, k);
            if (r.kind == BaseReading::Unknown) why.push_back(std::move(r.text));
        }
        if (why.empty()) continue;
        std::string what;
        const bool own = std::find(subjects.begin(), subjects.end(), c) != subjects.end();
        const std::size_t others = subjects.size() - (own ? 1 : 0);
        if (own) {
            what = others == 0 ? "its forward is not in scope"
                               : fmt::format("its forward is not in scope, nor that of {} class{} deriving from it",
                                             others, others == 1 ? "" : "es");
        } else {
            what = fmt::format("the forward of `{}`{} is not in scope", subjects.front().second,
                               others == 1 ? std::string() : fmt::format(" (and of {} more)", others - 1));
        }
        for (const std::string& w : why) add(c.first, c.second, fmt::format("{}; {}", w, what));
    }
    for (auto& [file, notes] : notes_) {
        std::sort(notes.begin(), notes.end(), [](const Note& a, const Note& b) {
            return a.line != b.line ? a.line < b.line : a.message < b.message;
        });
        notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
    }
}

const std::vector<Note>& Project::notes(std::size_t file) const {
    static const std::vector<Note> kNone;
    const auto it = notes_.find(file);
    return it == notes_.end() ? kNone : it->second;
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

void Project::compute_module_classes() {
    // In path order, then class-name order: a cycle of bases resolves the same way every run,
    // whatever the order of the inputs.
    for (const std::size_t f : by_path_) {
        for (const auto& [name, info] : files_[f].index.classes) compute_module_class(f, name);
    }
}

std::vector<std::string> Project::exported_module_classes(std::size_t file) const {
    std::set<std::string> out;
    const SourceFile& sf = files_[file];
    for (const auto& [name, info] : sf.index.classes) {
        if (is_module_class(file, name)) out.insert(sf.module_name + "." + name);
    }
    for (const Import& imp : sf.index.imports) {
        if (imp.name.empty() || sf.index.classes.contains(imp.local) || sf.index.find_import(imp.local) != &imp) continue;
        const Symbol s = resolve_name(file, imp.local);
        if (s.kind == Symbol::Class && is_module_class(s.file, s.name)) out.insert(sf.module_name + "." + imp.local);
    }
    return {out.begin(), out.end()};
}

bool Project::is_module_class(std::size_t file, const std::string& class_name) const {
    const auto it = module_classes_.find({file, class_name});
    return it != module_classes_.end() && it->second;
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

void Project::compute_scope() {
    // Class hierarchy inside the project: (file, class) -> subclasses.
    std::map<std::pair<std::size_t, std::string>, std::vector<std::pair<std::size_t, std::string>>> subclasses;
    for (const std::size_t f : by_path_) {
        for (const auto& [name, info] : files_[f].index.classes) {
            for (const auto& base : class_bases(f, name)) subclasses[base].emplace_back(f, name);
        }
    }
    // The nodes of a file are read only once it is loaded (a pruned file holds names only).
    auto function_of = [&](std::size_t file, const std::string& name) {
        load({file});
        return files_[file].index.functions.at(name);
    };
    std::deque<FunctionRef> work;
    std::set<std::pair<std::size_t, std::uint32_t>> walked;  // the scope, plus disable(recursive=False) functions
    std::function<void(std::size_t, const Node&)> add = [&](std::size_t f, const Node& fn) {
        if (!fn.is("function_definition")) return;
        if (std::string(fn.field("name").text()).starts_with("_graphmend")) return;
        const Tracing tracing = tracing_of(f, fn);
        if (tracing == Tracing::Skipped) return;
        if (!walked.insert({f, fn.begin()}).second) return;
        if (tracing == Tracing::Traced && scope_.insert({f, fn.begin()}).second) scope_nodes_[f].push_back(fn);
        work.push_back({f, fn});
        // A decorator of the project runs in its place (its wrapper calls the function).
        if (const Node decorated = fn.parent(); decorated.is("decorated_definition")) {
            for (const Node& d : decorated.named_children()) {
                if (!d.is("decorator")) continue;
                for (Node e : d.named_children()) {
                    if (e.is("call")) e = e.field("function");
                    const Symbol s = resolve_expr(f, e);
                    if (s.kind == Symbol::Function) add(s.file, function_of(s.file, s.name));
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
                    load({c.first});
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
    // The nn.Module classes of the project that `self.NAME = Class(...)` binds in a class's
    // __init__ or its bases' (what `self.NAME.m(...)` calls a method of), by (file, class, NAME).
    std::map<std::tuple<std::size_t, std::string, std::string>, std::set<std::pair<std::size_t, std::string>>>
        attribute_classes;
    auto classes_of_attribute = [&](std::size_t file, const std::string& cls, const std::string& name)
        -> const std::set<std::pair<std::size_t, std::string>>& {
        const auto key = std::make_tuple(file, cls, name);
        if (const auto it = attribute_classes.find(key); it != attribute_classes.end()) return it->second;
        std::set<std::pair<std::size_t, std::string>> out;
        std::vector<std::pair<std::size_t, std::string>> todo{{file, cls}};
        std::set<std::pair<std::size_t, std::string>> seen;
        while (!todo.empty()) {
            const auto c = todo.back();
            todo.pop_back();
            if (!seen.insert(c).second) continue;
            load({c.first});
            const auto it = files_[c.first].index.classes.find(c.second);
            if (it == files_[c.first].index.classes.end()) continue;
            // In __init__, as the value analysis reads attributes (Values, attributes_).
            if (const auto init = it->second.methods.find("__init__"); init != it->second.methods.end()) {
                syntax::walk(init->second.field("body"), [&](const Node& n) {
                    if (n.is("function_definition") || n.is("class_definition")) return false;
                    if (!n.is("assignment")) return true;
                    const Node left = n.field("left");
                    const Node right = n.field("right");
                    if (left.is("attribute") && left.field("object").text() == "self" &&
                        left.field("attribute").text() == name && right.is("call")) {
                        const Symbol s = resolve_expr(c.first, right.field("function"));
                        if (s.kind == Symbol::Class && is_module_class(s.file, s.name)) out.emplace(s.file, s.name);
                    }
                    return true;
                });
            }
            for (const auto& b : class_bases(c.first, c.second)) todo.push_back(b);
        }
        return attribute_classes.emplace(key, std::move(out)).first->second;
    };
    // The function a compile call or a reference names: `f`, `self.m`, `mod.f`, `Class.m`.
    auto add_target = [&](std::size_t f, const Node& target) {
        if (target.is("identifier")) {
            const std::string name(target.text());
            if (const Node def = local_def(target, name)) {
                add(f, def);
                return;
            }
            const Symbol s = resolve_name(f, name);
            if (s.kind == Symbol::Function) add(s.file, function_of(s.file, s.name));
        } else if (target.is("attribute")) {
            const Node obj = target.field("object");
            const std::string attr(target.field("attribute").text());
            if (obj.text() == "self" || obj.text() == "cls") {
                const Node fn = enclosing_function(target);
                const std::string owner = fn ? owner_class(fn) : std::string();
                if (!owner.empty()) add_method(f, owner, attr, true, true);
                return;
            }
            const Symbol s = resolve_expr(f, obj);
            if (s.kind == Symbol::Module) {
                if (files_[s.file].index.functions.contains(attr)) add(s.file, function_of(s.file, attr));
            } else if (s.kind == Symbol::Class) {
                add_method(s.file, s.name, attr, true, false);
            }
        }
    };
    // The files of the entry points are loaded together first (in parallel, when the loader
    // given can): those with a module class's forward, and those with a compile API among
    // their callees (ModuleIndex::compile_callees: only files whose text names `compile` or
    // `optimize` have any, the files the walk below reads).
    std::vector<bool> compiles(files_.size(), false);
    std::vector<std::size_t> entries;
    for (const std::size_t f : by_path_) {
        for (const std::string& callee : files_[f].index.compile_callees) {
            const Symbol s = resolve_dotted(f, callee);
            compiles[f] = compiles[f] || (s.kind == Symbol::External && knowledge::compile_api(s.name, true));
        }
        bool forward = false;
        for (const auto& [name, info] : files_[f].index.classes) {
            forward = forward || (info.methods.contains("forward") && is_module_class(f, name));
        }
        if (forward || compiles[f]) entries.push_back(f);
    }
    load(entries);
    // Entry points 1: the forward of every nn.Module subclass.
    for (const std::size_t f : by_path_) {
        for (const auto& [name, info] : files_[f].index.classes) {
            if (!is_module_class(f, name)) continue;
            if (const auto m = info.methods.find("forward"); m != info.methods.end()) add(f, m->second);
        }
    }
    // Entry points 2: functions decorated with a compile API or passed to one.
    for (const std::size_t f : by_path_) {
        if (!compiles[f]) continue;
        syntax::walk(files_[f].tree.root(), [&](const Node& n) {
            if (n.is("decorated_definition")) {
                const Node def = n.field("definition");
                if (!def.is("function_definition")) return true;
                for (const Node& d : n.named_children()) {
                    if (!d.is("decorator")) continue;
                    for (const Node& e : d.named_children()) {
                        if (e.is("call") ? is_compile_api(f, e.field("function"), true) : is_compile_api(f, e, false)) {
                            add(f, def);
                        }
                    }
                }
                return true;
            }
            if (!n.is("call")) return true;
            const Node callee = n.field("function");
            const auto args = positional_args(n);
            if (is_compile_api(f, callee, false)) {  // torch.compile(f, ...)
                const Node target = args.empty() ? keyword_arg(n, "model") : args.front();
                if (target) add_target(f, target);
            } else if (callee.is("call") && is_compile_api(f, callee.field("function"), true) && !args.empty()) {
                add_target(f, args.front());  // torch.compile(**kw)(f), torch._dynamo.optimize(b)(f)
            }
            return true;
        });
    }
    while (!work.empty()) {
        const FunctionRef ref = work.front();
        work.pop_front();
        const std::string owner = owner_class(ref.node);  // the class the function is a method of, if any
        syntax::walk(ref.node.field("body"), [&](const Node& n) {
            if (n.is("function_definition")) {
                add(ref.file, n);  // nested helpers run when called from the body
                return false;
            }
            if (!n.is("call")) return true;
            const Node fn = n.field("function");
            if (fn.is("identifier")) {
                const Symbol s = resolve_name(ref.file, std::string(fn.text()));
                if (s.kind == Symbol::Function) add(s.file, function_of(s.file, s.name));
                if (s.kind == Symbol::Class) add_method(s.file, s.name, "__init__", true, false);
            } else if (fn.is("attribute")) {
                const Node obj = fn.field("object");
                const std::string attr(fn.field("attribute").text());
                if ((obj.text() == "self" || obj.text() == "cls") && !owner.empty()) {
                    add_method(ref.file, owner, attr, true, true);
                } else if (obj.is("call") && obj.field("function").text() == "super" && !owner.empty()) {
                    for (const auto& b : class_bases(ref.file, owner)) add_method(b.first, b.second, attr, true, false);
                } else if (obj.is("attribute") && obj.field("object").text() == "self" && !owner.empty()) {
                    // `self.NAME.m(...)` on a module attribute: the method of its class.
                    const std::string name(obj.field("attribute").text());
                    for (const auto& c : classes_of_attribute(ref.file, owner, name)) {
                        add_method(c.first, c.second, attr, true, false);
                    }
                } else {
                    const Symbol s = resolve_expr(ref.file, obj);
                    if (s.kind == Symbol::Module) {
                        if (files_[s.file].index.functions.contains(attr)) add(s.file, function_of(s.file, attr));
                    } else if (s.kind == Symbol::Class) {
                        add_method(s.file, s.name, attr, true, false);
                    }
                }
            }
            return true;
        });
    }
}

namespace {

std::set<std::string> compute_local_names(const Node& function) {
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

}  // namespace

std::set<std::string> local_names(const Node& function) {
    thread_local FunctionMemo<std::set<std::string>> memo;
    return memo.get(function, compute_local_names);
}

Node enclosing_function(const Node& node) {
    for (Node p = node.parent(); p; p = p.parent()) {  // a step each (syntax::NodeTable)
        if (is_function_node(p)) return p;
    }
    return {};
}

}  // namespace graphmend::analysis

namespace graphmend::analysis {

DiskText DiskText::of(std::string_view bytes) {
    return {bytes.size(), std::hash<std::string_view>{}(bytes), false};
}

std::string read_source(const SourceFile& file) {
    if (!file.pruned) return file.tree.source().text();
    if (!file.on_disk) return file.text;
    std::string bytes;
    try {
        bytes = syntax::read_file(file.path);
    } catch (const std::runtime_error& e) {
        throw SourceChanged(e.what());
    }
    const DiskText now = DiskText::of(bytes);
    if (!now.same_bytes(*file.on_disk)) {
        throw SourceChanged(file.path + ": changed on disk while graphmend read it");
    }
    if (file.on_disk->lone_crs) syntax::lf_for_lone_crs(bytes);
    return bytes;
}

namespace {

std::uint32_t word_hash(std::string_view word) {
    const std::uint64_t h = std::hash<std::string_view>{}(word);
    return static_cast<std::uint32_t>(h ^ (h >> 32));
}

}  // namespace

std::vector<std::uint32_t> word_hashes(std::string_view text) {
    const auto in_word = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || static_cast<unsigned char>(c) >= 0x80;
    };
    std::vector<std::uint32_t> out;
    for (std::size_t i = 0; i < text.size();) {
        if (!in_word(text[i])) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && in_word(text[end])) ++end;
        out.push_back(word_hash(text.substr(i, end - i)));
        i = end;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    out.shrink_to_fit();
    return out;
}

bool mentions(const SourceFile& file, std::string_view name) {
    return std::binary_search(file.words.begin(), file.words.end(), word_hash(name));
}

}  // namespace graphmend::analysis
