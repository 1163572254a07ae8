// Project: which classes are nn.Modules (their bases, followed through the inputs to torch.nn
// or the shipped table), and the notes on bases taken from the table or not resolved. See
// include/graphmend/analysis.hpp.
#include <algorithm>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"

namespace graphmend::analysis {

namespace {

bool is_torch_nn_name(const std::string& dotted) {
    return dotted.starts_with("torch.nn.") && !dotted.starts_with("torch.nn.functional") &&
           !dotted.starts_with("torch.nn.utils") && !dotted.starts_with("torch.nn.init");
}

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

}  // namespace graphmend::analysis
