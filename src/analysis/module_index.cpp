// Module index: what a module binds at module level. See include/graphmend/analysis.hpp.
#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string_view>

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"
#include "graphmend/runtime_sources.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {


std::string dotted(const Node& n) { return std::string(n.text()); }

// A base as a note names it: blanks folded to one space, cut at 60 characters.
std::string base_text(const Node& n) {
    std::string out;
    for (const char c : n.text()) {
        const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n';
        if (blank && (out.empty() || out.back() == ' ')) continue;
        out += blank ? ' ' : c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out.size() > 60 ? out.substr(0, 57) + "..." : out;
}


void add_import_statement(const Node& stmt, ModuleIndex& index) {
    for (const Node& c : stmt.named_children()) {
        if (c.is("dotted_name")) {
            const std::string full = dotted(c);
            const auto dot = full.find('.');
            // `import a.b` binds "a" to the package a.
            index.imports.push_back({full.substr(0, dot), full.substr(0, dot), "", 0});
        } else if (c.is("aliased_import")) {
            index.imports.push_back({dotted(c.field("alias")), dotted(c.field("name")), "", 0});
        }
    }
}

void add_import_from(const Node& stmt, ModuleIndex& index) {
    const Node mod = stmt.field("module_name");
    std::string module;
    int level = 0;
    if (mod.is("relative_import")) {
        for (const Node& c : mod.children()) {
            if (c.is("import_prefix")) level = static_cast<int>(c.text().size());
            if (c.is("dotted_name")) module = dotted(c);
        }
    } else if (mod) {
        module = dotted(mod);
    }
    for (const Node& c : stmt.named_children()) {
        if (c == mod) continue;
        if (c.is("wildcard_import")) {
            index.star_imports.push_back({"", module, "", level});
        } else if (c.is("dotted_name")) {
            index.imports.push_back({dotted(c), module, dotted(c), level});
        } else if (c.is("aliased_import")) {
            index.imports.push_back({dotted(c.field("alias")), module, dotted(c.field("name")), level});
        }
    }
}

// `logging.getLogger(...)`, `logging.get_logger(...)`, `getLogger(...)`, `get_logger(...)`.
bool is_logger_factory(const Node& call) {
    if (!call.is("call")) return false;
    const Node fn = call.field("function");
    std::string_view name;
    if (fn.is("identifier")) name = fn.text();
    if (fn.is("attribute")) name = fn.field("attribute").text();
    return name == "getLogger" || name == "get_logger";
}

// Why the logger a factory call makes is known to be no logging.Logger, or "": the factory is
// imported from where the knowledge layer says so (accelerate's get_logger), or is a function of
// this module that returns something other than a logging.getLogger(...) call. Anything else
// keeps being taken for a logger (transformers' and diffusers' `logging.get_logger`).
std::string not_a_logger(const Node& call, const ModuleIndex& index) {
    const Node fn = call.field("function");
    const Node name = fn.is("attribute") ? fn.field("attribute") : fn;
    if (fn.is("identifier")) {
        if (const Import* imp = index.find_import(std::string(fn.text())); imp && imp->level == 0) {
            if (knowledge::logger_factory(imp->module, imp->name) == knowledge::LoggerFactory::NotLogger) {
                return fmt::format("made by {}() from {}, which returns no logging.Logger", fn.text(), imp->module);
            }
        }
        if (const auto def = index.functions.find(std::string(fn.text())); def != index.functions.end()) {
            std::string other;
            syntax::walk(def->second.field("body"), [&](const Node& n) {
                if (!other.empty() || n.is("function_definition") || n.is("lambda")) return false;
                if (!n.is("return_statement") || n.named_children().empty()) return true;
                const Node v = n.named_children()[0];
                const Node f = v.is("call") ? v.field("function") : Node();
                const std::string_view callee = f.is("attribute") ? f.field("attribute").text() : f.text();
                if (callee != "getLogger") other = std::string(v.text().substr(0, v.text().find('(')));
                return false;
            });
            if (!other.empty()) {
                return fmt::format("made by {}(), which returns {}(...), not a logging.Logger", fn.text(), other);
            }
        }
        return "";
    }
    if (const Node obj = fn.field("object"); obj.is("identifier")) {
        if (const Import* imp = index.find_import(std::string(obj.text())); imp && imp->level == 0) {
            const std::string module = imp->name.empty() ? imp->module : imp->module + "." + imp->name;
            if (knowledge::logger_factory(module, name.text()) == knowledge::LoggerFactory::NotLogger) {
                return fmt::format("made by {}() from {}, which returns no logging.Logger", fn.text(), module);
            }
        }
    }
    return "";
}

std::optional<std::string> string_literal(const Node& n);

// `NAME = importlib.import_module("a.b")` (or `(".b", __package__)`, `import_module` imported
// from importlib) at module level: an import of module a.b bound to NAME.
bool add_import_module(const Node& left, const Node& right, ModuleIndex& index) {
    if (!left.is("identifier") || !right.is("call")) return false;
    const std::string callee = chain_text(right.field("function"));
    const Import* from = callee == "import_module" ? index.find_import(callee) : nullptr;
    if (callee != "importlib.import_module" && !(from && from->module == "importlib")) return false;
    const auto args = right.field("arguments").named_children();
    if (args.empty() || args.size() > 2) return false;
    auto name = string_literal(args[0]);
    if (!name || name->empty()) return false;
    int level = 0;
    while (level < static_cast<int>(name->size()) && (*name)[static_cast<std::size_t>(level)] == '.') ++level;
    // Relative to `__package__`, the package around the module, as `from .b import` is; relative
    // to `__name__` it would be inside the module itself (right only in an init, unknown here).
    if (level > 0 && (args.size() != 2 || args[1].text() != "__package__")) return false;
    const std::string module = name->substr(static_cast<std::size_t>(level));
    if (level == 0) {
        index.imports.push_back({std::string(left.text()), module, "", 0});
    } else {
        const auto dot = module.rfind('.');
        index.imports.push_back({std::string(left.text()), dot == std::string::npos ? "" : module.substr(0, dot),
                                 module.substr(dot == std::string::npos ? 0 : dot + 1), level});
    }
    return true;
}

void add_assignment(const Node& assignment, ModuleIndex& index) {
    const Node left = assignment.field("left");
    const Node right = assignment.field("right");
    if (add_import_module(left, right, index)) return;
    if (left.is("identifier")) {
        if (right && is_logger_factory(right)) {
            if (auto why = not_a_logger(right, index); !why.empty()) {
                index.not_loggers[dotted(left)] = std::move(why);
                index.assigned.insert(dotted(left));
            } else {
                index.loggers.insert(dotted(left));
            }
        } else {
            index.assigned.insert(dotted(left));
        }
        return;
    }
    syntax::walk(left, [&](const Node& n) {
        if (n.is("identifier")) index.assigned.insert(dotted(n));
        return !n.is("attribute") && !n.is("subscript");
    });
}

// The text of a plain string literal (`"a"`, `'a'`), nullopt for any other node (an f-string,
// a prefixed or triple-quoted string, a concatenation).
std::optional<std::string> string_literal(const Node& n) {
    if (!n.is("string")) return std::nullopt;
    const std::string_view t = n.text();
    if (t.size() < 2 || (t.front() != '"' && t.front() != '\'') || t.back() != t.front()) return std::nullopt;
    if (t.starts_with("\"\"\"") || t.starts_with("'''")) return std::nullopt;
    const std::string inner(t.substr(1, t.size() - 2));
    if (inner.find_first_of("\\{") != std::string::npos) return std::nullopt;
    return inner;
}

// The strings of a list or tuple literal of plain strings (others skipped).
std::vector<std::string> string_items(const Node& n) {
    std::vector<std::string> out;
    const Node seq = syntax::without_parens(n);
    if (!seq.is("list") && !seq.is("tuple")) return out;
    for (const Node& item : seq.named_children()) {
        if (auto s = string_literal(item)) out.push_back(*s);
    }
    return out;
}

// What a package init says of its lazy exports (ModuleIndex::lazy_exports), gathered while its
// module level is visited and read once it is (lazy_exports_of).
struct LazyMaps {
    // NAME -> module -> names, of `NAME = {"mod": [...]}`, `NAME["mod"] = [...]` and
    // `NAME["mod"].extend([...])` / `.append("A")`.
    std::map<std::string, std::map<std::string, std::vector<std::string>>> by_module;
    // NAME -> name -> module, of `NAME = {"A": "mod"}`.
    std::map<std::string, std::map<std::string, std::string>> by_name;
    // Module-level NAME = expression: the names it reads (`_owner = {... for ... in _import_structure.items() ...}`).
    std::map<std::string, std::set<std::string>> reads;
    bool lazy_module = false;  // a call of `_LazyModule(...)` / `LazyModule(...)`
};

std::set<std::string> identifiers_in(const Node& n) {
    std::set<std::string> out;
    syntax::walk(n, [&](const Node& c) {
        if (c.is("identifier")) out.insert(std::string(c.text()));
        return true;
    });
    return out;
}

void note_lazy_call(const Node& call, LazyMaps& maps);

void note_lazy_assignment(const Node& left, const Node& right, LazyMaps& maps) {
    if (!right) return;
    if (right.is("call")) note_lazy_call(right, maps);  // sys.modules[__name__] = _LazyModule(...)
    if (left.is("identifier")) {
        const std::string name(left.text());
        maps.reads[name] = identifiers_in(right);
        if (!right.is("dictionary")) return;
        for (const Node& pair : right.named_children()) {
            if (!pair.is("pair")) continue;
            const auto key = string_literal(pair.field("key"));
            if (!key) continue;
            if (const auto module = string_literal(pair.field("value"))) {
                maps.by_name[name][*key] = *module;
            } else {
                auto& names = maps.by_module[name][*key];
                for (std::string& s : string_items(pair.field("value"))) names.push_back(std::move(s));
            }
        }
    } else if (left.is("subscript") && left.field("value").is("identifier")) {
        const auto key = string_literal(left.field("subscript"));
        if (!key) return;
        auto& names = maps.by_module[std::string(left.field("value").text())][*key];
        for (std::string& s : string_items(right)) names.push_back(std::move(s));
    }
}

// `NAME["mod"].extend([...])`, `NAME["mod"].append("A")`, `_LazyModule(...)`.
void note_lazy_call(const Node& call, LazyMaps& maps) {
    const Node fn = call.field("function");
    const std::string_view callee = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
    if (callee == "_LazyModule" || callee == "LazyModule") {
        maps.lazy_module = true;
        return;
    }
    if (!fn.is("attribute") || (callee != "extend" && callee != "append")) return;
    const Node target = fn.field("object");
    if (!target.is("subscript") || !target.field("value").is("identifier")) return;
    const auto key = string_literal(target.field("subscript"));
    const auto args = call.field("arguments").named_children();
    if (!key || args.empty()) return;
    auto& names = maps.by_module[std::string(target.field("value").text())][*key];
    if (callee == "append") {
        if (auto s = string_literal(args.front())) names.push_back(*s);
    } else {
        for (std::string& s : string_items(args.front())) names.push_back(std::move(s));
    }
}

// The lazy exports of a module (ModuleIndex::lazy_exports): the maps `__getattr__` reads, by
// name or through a module-level name whose value reads them (delta's `_owner`, built from
// `_import_structure`), and `_import_structure` itself when the init makes a `_LazyModule`.
std::map<std::string, std::string> lazy_exports_of(const ModuleIndex& index, const LazyMaps& maps) {
    std::map<std::string, std::string> out;
    std::set<std::string> used;
    if (const auto getattr = index.functions.find("__getattr__"); getattr != index.functions.end()) {
        for (const std::string& name : identifiers_in(getattr->second.field("body"))) {
            used.insert(name);
            if (const auto it = maps.reads.find(name); it != maps.reads.end()) used.insert(it->second.begin(), it->second.end());
        }
    }
    if (maps.lazy_module) used.insert("_import_structure");
    for (const std::string& name : used) {
        if (const auto it = maps.by_module.find(name); it != maps.by_module.end()) {
            for (const auto& [module, names] : it->second) {
                for (const std::string& n : names) out.emplace(n, module);
            }
        }
        if (const auto it = maps.by_name.find(name); it != maps.by_name.end()) {
            for (const auto& [n, module] : it->second) out.emplace(n, module);
        }
    }
    return out;
}

void visit_block(const Node& block, ModuleIndex& index, LazyMaps& lazy) {
    for (const Node& stmt : block.named_children()) {
        Node def = stmt.is("decorated_definition") ? stmt.field("definition") : stmt;
        if (def.is("class_definition")) {
            ClassInfo info{dotted(def.field("name")), def, {}, {}, {}, {}, def.position().line};
            if (const Node supers = def.field("superclasses")) {
                for (const Node& b : supers.named_children()) {
                    if (!b.is("keyword_argument") && !b.is("list_splat") && !b.is("dictionary_splat")) {
                        info.bases.push_back(b);
                        info.base_names.push_back(chain_text(b));
                        info.base_texts.push_back(base_text(b));
                    }
                }
            }
            for (const Node& member : def.field("body").named_children()) {
                const Node m = member.is("decorated_definition") ? member.field("definition") : member;
                if (m.is("function_definition")) info.methods[dotted(m.field("name"))] = m;
            }
            index.classes[info.name] = info;
        } else if (def.is("function_definition")) {
            index.functions[dotted(def.field("name"))] = def;
        } else if (stmt.is("import_statement")) {
            add_import_statement(stmt, index);
        } else if (stmt.is("import_from_statement")) {
            add_import_from(stmt, index);
        } else if (stmt.is("expression_statement")) {
            for (const Node& e : stmt.named_children()) {
                if (e.is("assignment")) {
                    add_assignment(e, index);
                    note_lazy_assignment(e.field("left"), e.field("right"), lazy);
                } else if (e.is("call")) {
                    note_lazy_call(e, lazy);
                }
            }
        } else if (stmt.is("comment") && stmt.text().starts_with(runtime::kMarker)) {
            const std::string_view rest = stmt.text().substr(runtime::kMarker.size());
            index.runtime_blocks.emplace(rest.substr(0, rest.find(' ')));
        } else if (stmt.is("block")) {
            // The body of an else/except/finally clause (`try: ... except X: ... else:
            // _import_structure[...] = [...]`, as diffusers' inits write them).
            visit_block(stmt, index, lazy);
        } else if (stmt.is("if_statement") || stmt.is("try_statement") || stmt.is("with_statement") ||
                   stmt.is("elif_clause") || stmt.is("else_clause") || stmt.is("except_clause") ||
                   stmt.is("finally_clause")) {
            for (const Node& part : stmt.named_children()) {
                if (part.is("block") || part.is("elif_clause") || part.is("else_clause") ||
                    part.is("except_clause") || part.is("finally_clause")) {
                    visit_block(part, index, lazy);
                }
            }
        }
    }
}

}  // namespace

std::string chain_text(Node n) {
    std::vector<std::string_view> attributes;  // outermost first
    for (; n.is("attribute"); n = n.field("object")) attributes.push_back(n.field("attribute").text());
    if (!n.is("identifier")) return {};
    std::string chain(n.text());
    for (auto it = attributes.rbegin(); it != attributes.rend(); ++it) {
        chain += '.';
        chain += *it;
    }
    return chain;
}

const Import* ModuleIndex::find_import(const std::string& local) const {
    for (auto it = imports.rbegin(); it != imports.rend(); ++it) {
        if (it->local == local) return &*it;
    }
    return nullptr;
}

ModuleIndex index_module(const Node& root) {
    ModuleIndex index;
    LazyMaps lazy;
    visit_block(root, index, lazy);
    index.lazy_exports = lazy_exports_of(index, lazy);
    // The callees a compile API may be among (Project::compute_scope walks only files whose
    // text names `compile` or `optimize`): decorators, the functions of calls and of calls
    // of calls (`torch.compile(**kw)(f)`).
    const std::string_view text = root.source().text();
    if (text.find("compile") == std::string_view::npos && text.find("optimize") == std::string_view::npos) {
        return index;
    }
    std::set<std::string> callees;
    const auto add = [&](const Node& e) {
        if (std::string chain = chain_text(e); !chain.empty()) callees.insert(std::move(chain));
    };
    syntax::walk(root, [&](const Node& n) {
        if (n.is("decorator")) {
            for (const Node& e : n.named_children()) add(e.is("call") ? e.field("function") : e);
        } else if (n.is("call")) {
            const Node fn = n.field("function");
            add(fn);
            if (fn.is("call")) add(fn.field("function"));
        }
        return true;
    });
    index.compile_callees.assign(callees.begin(), callees.end());
    return index;
}

void ModuleIndex::forget_nodes() {
    for (auto& [name, info] : classes) {
        info.node = {};
        info.bases.assign(info.bases.size(), syntax::Node{});
        for (auto& [method, def] : info.methods) def = {};
    }
    for (auto& [name, def] : functions) def = {};
}

ModulePlace place_module(const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path p = fs::absolute(fs::path(path)).lexically_normal();
    ModulePlace place;
    place.is_package_init = p.filename() == "__init__.py";
    std::vector<std::string> parts;
    if (!place.is_package_init) parts.push_back(p.stem().string());
    fs::path dir = p.parent_path();
    fs::path outermost;
    while (!dir.empty() && fs::exists(dir / "__init__.py")) {
        parts.push_back(dir.filename().string());
        outermost = dir;
        if (dir == dir.parent_path()) break;
        dir = dir.parent_path();
    }
    if (!outermost.empty()) {
        place.project = outermost.string();
    } else {
        // A folder project (Hub checkout, folder of scripts): the folder acts as a package
        // named after it, with a namespace of its own. An __init__.py given without its
        // folder's __init__ chain (impossible on disk) would land here too.
        place.project = p.parent_path().string();
        place.isolated = true;
        const std::string folder = p.parent_path().filename().string();
        if (!place.is_package_init && !folder.empty()) parts.push_back(folder);
    }
    if (parts.empty()) parts.push_back(p.stem().string());
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (!place.module_name.empty()) place.module_name += '.';
        place.module_name += *it;
    }
    return place;
}

std::string module_name_for(const std::string& path, bool* is_package_init) {
    ModulePlace place = place_module(path);
    if (is_package_init != nullptr) *is_package_init = place.is_package_init;
    return std::move(place.module_name);
}

}  // namespace graphmend::analysis
