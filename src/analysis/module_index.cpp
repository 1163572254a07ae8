// Module index: what a module binds at module level. See include/graphmend/analysis.hpp.
#include <fmt/format.h>

#include <filesystem>
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

void add_assignment(const Node& assignment, ModuleIndex& index) {
    const Node left = assignment.field("left");
    const Node right = assignment.field("right");
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

void visit_block(const Node& block, ModuleIndex& index) {
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
                if (e.is("assignment")) add_assignment(e, index);
            }
        } else if (stmt.is("comment") && stmt.text().starts_with(runtime::kMarker)) {
            const std::string_view rest = stmt.text().substr(runtime::kMarker.size());
            index.runtime_blocks.emplace(rest.substr(0, rest.find(' ')));
        } else if (stmt.is("if_statement") || stmt.is("try_statement") || stmt.is("with_statement") ||
                   stmt.is("elif_clause") || stmt.is("else_clause") || stmt.is("except_clause") ||
                   stmt.is("finally_clause") || stmt.is("block")) {
            for (const Node& part : stmt.named_children()) {
                if (part.is("block") || part.is("elif_clause") || part.is("else_clause") ||
                    part.is("except_clause") || part.is("finally_clause")) {
                    visit_block(part, index);
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
    visit_block(root, index);
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
