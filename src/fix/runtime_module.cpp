// The runtime as a module: see include/graphmend/runtime_module.hpp.
#include "graphmend/runtime_module.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "graphmend/output.hpp"
#include "graphmend/runtime_binding.hpp"
#include "graphmend/runtime_sources.hpp"

#ifndef GRAPHMEND_VERSION
#define GRAPHMEND_VERSION "unknown"
#endif

namespace graphmend::runtime_module {

using syntax::Node;

namespace {

std::string_view strip_blank_lines(std::string_view text) {
    while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    return text;
}

std::string build_text() {
    std::string out = fmt::format("{}{} from its runtime blocks; do not edit: `graphmend fix` rewrites it.\n",
                                  kHeader, GRAPHMEND_VERSION);
    out += "# The files graphmend rewrote in this project import the helpers they use from here\n"
           "# (`from ._graphmend_runtime import _graphmend_if`). It needs only torch.\n";
    for (const runtime::Block& block : runtime::kBlocks) {
        out += "\n\n";
        out += strip_blank_lines(block.source);
        out += '\n';
    }
    out += "\n\n";
    out += strip_blank_lines(runtime::binding_py);
    out += '\n';
    return out;
}

bool is_runtime_name(std::string_view name) { return name.starts_with("_graphmend_"); }

// The module named by an import_from_statement, without its leading dots.
std::string_view imported_module(const Node& stmt) {
    std::string_view module = stmt.field("module_name").text();
    while (!module.empty() && module.front() == '.') module.remove_prefix(1);
    return module;
}

bool is_module_import(const Node& stmt) {
    return stmt.is("import_from_statement") && imported_module(stmt) == kName;
}

// The names an import of the module binds (an aliased name binds its alias).
void add_imported_names(const Node& stmt, std::set<std::string>& names) {
    for (const Node& child : stmt.children()) {
        if (!child.in_field("name")) continue;
        const Node local = child.is("aliased_import") ? child.field("alias") : child;
        names.emplace(local.text());
    }
}

// A module-level statement that imports the module: the import itself, or a `try` whose
// body holds only imports of it (the folder-project form).
struct Existing {
    Node stmt;
    std::set<std::string> names;
};

std::optional<Existing> find_import(const Node& root) {
    for (const Node& stmt : root.named_children()) {
        if (is_module_import(stmt)) {
            Existing found{stmt, {}};
            add_imported_names(stmt, found.names);
            return found;
        }
        if (!stmt.is("try_statement")) continue;
        const Node body = stmt.field("body");
        bool only_imports = false;
        Existing found{stmt, {}};
        for (const Node& inner : body.named_children()) {
            if (inner.is("comment")) continue;
            if (!is_module_import(inner)) {
                only_imports = false;
                break;
            }
            only_imports = true;
            add_imported_names(inner, found.names);
        }
        if (only_imports) return found;
    }
    return std::nullopt;
}

// The module's exports the file uses, outside the import of the module.
std::set<std::string> used_names(const Node& root, const std::optional<Existing>& existing) {
    std::set<std::string> used;
    syntax::walk(root, [&](const Node& n) {
        if (existing && n == existing->stmt) return false;
        if (!n.is("identifier")) return true;
        const std::string_view name = n.text();
        if (!is_runtime_name(name) || !exports().contains(std::string(name))) return false;
        const Node parent = n.parent();
        if (parent.is("attribute") && parent.field("attribute") == n) return false;  // x._graphmend_if
        if (parent.is("keyword_argument") && parent.field("name") == n) return false;
        used.emplace(name);
        return false;
    });
    return used;
}

// `from MODULE import NAMES` on one line, however long (as graphmend's rewrites are).
std::string import_statement(const std::string& module, const std::set<std::string>& names, std::string_view comment) {
    std::string joined;
    for (const auto& name : names) joined += (joined.empty() ? "" : ", ") + name;
    return fmt::format("from {} import {}{}", module, joined, comment);
}

// The import statement of the form, without its last line break.
std::string import_text(const ImportForm& form, const std::set<std::string>& names, const std::string& unit,
                        std::string_view eol, bool noqa = true) {
    const std::string relative = std::string(static_cast<std::size_t>(form.level), '.') + std::string(kName);
    if (!form.fallback) return import_statement(relative, names, noqa ? "  # noqa: E402" : "");
    return fmt::format("try:{0}{1}{2}{0}except ImportError:  # not imported as a package: run as a script{0}{1}{3}",
                       eol, unit, import_statement(relative, names, ""), import_statement(std::string(kName), names, ""));
}

// The offset where a new import goes, and the text around it: before the main guard, or
// at the end after two blank lines.
edits::Edit new_import(const syntax::Tree& tree, std::string text) {
    const std::string& source = tree.source().text();
    const std::string eol(tree.source().eol());
    if (const auto place = runtime_place(tree.root(), runtime_calls(tree.root()))) return {*place, *place, text + eol + eol};
    const bool ends_with_newline = !source.empty() && source.back() == '\n';
    const auto end = static_cast<std::uint32_t>(source.size());
    return {end, end, (ends_with_newline || source.empty() ? "" : eol) + eol + eol + text + eol};
}

}  // namespace

const std::string& text() {
    static const std::string module_text = build_text();
    return module_text;
}

bool written_by_graphmend(std::string_view existing) { return existing.starts_with(kHeader); }

const std::set<std::string>& exports() {
    static const std::set<std::string> names = [] {
        std::set<std::string> out;
        const syntax::Tree tree = syntax::Tree::parse(text());
        for (const Node& stmt : tree.root().named_children()) {
            if (stmt.is("function_definition")) out.emplace(stmt.field("name").text());
            if (!stmt.is("expression_statement")) continue;
            for (const Node& e : stmt.named_children()) {
                if (e.is("assignment") && e.field("left").is("identifier")) out.emplace(e.field("left").text());
            }
        }
        std::erase_if(out, [](const std::string& name) { return !is_runtime_name(name); });
        return out;
    }();
    return names;
}

std::optional<std::uint32_t> main_guard(const Node& root) {
    for (const Node& stmt : root.named_children()) {
        if (!stmt.is("if_statement")) continue;
        const std::string_view cond = stmt.field("condition").text();
        if (cond.find("__name__") != std::string_view::npos && cond.find("__main__") != std::string_view::npos) {
            return stmt.begin();
        }
    }
    return std::nullopt;
}

namespace {

// Which code of a module runs at import time and whether it reaches a rewritten span.
class ImportTime {
public:
    ImportTime(const Node& root, std::vector<std::pair<std::uint32_t, std::uint32_t>> spans) : spans_(std::move(spans)) {
        std::sort(spans_.begin(), spans_.end());
        for (const Node& stmt : root.named_children()) {
            const Node def = stmt.is("decorated_definition") ? stmt.field("definition") : stmt;
            if (def.is("function_definition") || def.is("class_definition")) defs_[std::string(def.field("name").text())] = def;
        }
    }

    // True when running `n` now (a module-level statement) may run a rewritten span: it holds
    // one, or it calls (or applies as a decorator) a function or class of the module whose
    // run does. Function bodies and lambdas run later: skipped, but a nested definition's
    // decorators and defaults run now; with `whole_classes`, a class's methods count as run
    // (calling a class runs __init__, which may call any of them).
    bool runs_rewritten(const Node& n, bool whole_classes = false) {
        bool found = false;
        syntax::walk(n, [&](const Node& c) {
            if (found) return false;
            if (overlaps(c)) {
                found = true;
                return false;
            }
            if (c.is("lambda")) return false;
            if (c.is("function_definition") && !(whole_classes && c.parent().parent().is("class_definition"))) {
                if (const Node params = c.field("parameters")) found = runs_rewritten(params);
                return false;
            }
            if (c.is("call") || c.is("decorator")) {  // `@name` calls name too
                Node fn = c.is("call") ? c.field("function")
                                       : (c.named_children().empty() ? Node() : syntax::without_parens(c.named_children()[0]));
                if (fn.is("call")) fn = fn.field("function");
                // `NAME(...)`, or `NAME.method(...)` (a class's static or class method); a longer
                // chain (`Cls.attr.__doc__.format()`) calls something else.
                if (fn.is("attribute") && fn.field("object").is("identifier")) fn = fn.field("object");
                if (fn.is("identifier") && reaches(std::string(fn.text()))) found = true;
            }
            return !found;
        });
        return found;
    }

private:
    // True when `n` starts inside a span: code the walk reached (it does not enter function
    // bodies) that a fix rewrote. A node around a span is not: its parts decide.
    bool overlaps(const Node& n) const {
        auto it = std::upper_bound(spans_.begin(), spans_.end(), std::make_pair(n.begin(), UINT32_MAX));
        return it != spans_.begin() && std::prev(it)->first <= n.begin() && n.begin() < std::prev(it)->second;
    }

    bool reaches(const std::string& name) {
        const auto def = defs_.find(name);
        if (def == defs_.end()) return false;
        if (const auto known = memo_.find(name); known != memo_.end()) return known->second;
        memo_[name] = false;  // a recursive call adds nothing
        const bool r = def->second.is("class_definition") ? runs_rewritten(def->second.field("body"), true)
                                                          : runs_rewritten(def->second.field("body"));
        memo_[name] = r;
        return r;
    }

    std::vector<std::pair<std::uint32_t, std::uint32_t>> spans_;
    std::map<std::string, Node> defs_;
    std::map<std::string, bool> memo_;
};

}  // namespace

std::optional<std::uint32_t> runtime_place(const Node& root, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& spans) {
    ImportTime import_time(root, spans);
    const auto guard = main_guard(root);
    for (const Node& stmt : root.named_children()) {
        if (guard && stmt.begin() >= *guard) break;
        if (stmt.is("import_statement") || stmt.is("import_from_statement") || stmt.is("future_import_statement") ||
            stmt.is("comment")) {
            continue;
        }
        if (import_time.runs_rewritten(stmt)) return stmt.begin();
    }
    return guard;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> runtime_calls(const Node& root) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;
    syntax::walk(root, [&](const Node& n) {
        if (n.is("call") && n.field("function").is("identifier") && is_runtime_name(n.field("function").text())) {
            spans.emplace_back(n.begin(), n.end());
            return false;
        }
        return true;
    });
    return spans;
}

std::optional<ImportForm> form_for(const analysis::SourceFile& file) {
    if (!file.index.runtime_blocks.empty()) return std::nullopt;
    if (file.isolated) return ImportForm{1, true};
    const bool relative = std::any_of(file.index.imports.begin(), file.index.imports.end(),
                                      [](const analysis::Import& imp) { return imp.level > 0; });
    if (!relative && main_guard(file.tree.root())) return std::nullopt;
    const auto dots = std::count(file.module_name.begin(), file.module_name.end(), '.');
    return ImportForm{static_cast<int>(dots) + (file.is_package_init ? 1 : 0), false};
}

bool imports_module(const Node& root) { return find_import(root).has_value(); }

std::optional<edits::Edit> import_edit(const syntax::Tree& tree, const ImportForm& form, const std::string& indent) {
    const std::optional<Existing> existing = find_import(tree.root());
    std::set<std::string> names = used_names(tree.root(), existing);
    if (existing) {
        if (std::includes(existing->names.begin(), existing->names.end(), names.begin(), names.end())) {
            return std::nullopt;
        }
        names.insert(existing->names.begin(), existing->names.end());
        // A comment after the statement on its line (its `# noqa: E402`) stays as it is.
        const Node next = existing->stmt.next_named_sibling();
        const auto end_line = tree.source().position(existing->stmt.end()).line;
        const bool commented = next.is("comment") && next.position().line == end_line;
        return edits::Edit{existing->stmt.begin(), existing->stmt.end(),
                           import_text(form, names, indent, tree.source().eol(), !commented)};
    }
    if (names.empty()) return std::nullopt;
    return new_import(tree, import_text(form, names, indent, tree.source().eol()));
}

namespace {

std::string project_of(const FileOutcome& o) { return analysis::place_module(o.path).project; }

// Every rewritten file of the project becomes an error of `kind`, left unchanged.
void refuse_project(std::vector<FileOutcome>& outcomes, const std::string& project, const std::string& why,
                    FileError kind) {
    for (FileOutcome& o : outcomes) {
        if (!o.changed() || o.error || project_of(o) != project) continue;
        o.error = fmt::format("{}: {}; file left unchanged", o.path, why);
        o.error_kind = kind;
        o.fixed = o.original;
        o.applied.assign(o.sites.size(), false);
        o.imports_runtime = false;
    }
}

}  // namespace

std::vector<Planned> plan(std::vector<FileOutcome>& outcomes, output::LinkPolicy links) {
    namespace fs = std::filesystem;
    std::map<std::string, Planned> by_project;  // absolute project folder -> its module
    for (const FileOutcome& o : outcomes) {
        if (!o.imports_runtime || !o.changed() || o.error) continue;
        Planned& module = by_project[project_of(o)];
        if (module.path.empty()) module.path = (fs::path(o.project) / kFileName).generic_string();
        module.project = project_of(o);
        ++module.importers;
    }
    std::vector<Planned> out;
    for (auto& [project, module] : by_project) {
        std::error_code ec;
        if (fs::exists(fs::path(module.path), ec)) {
            FileError kind = FileError::Project;
            try {
                module.existing = syntax::read_file(module.path);
                if (!written_by_graphmend(*module.existing)) {
                    module.error = fmt::format("{} exists and was not written by graphmend (its first line is not "
                                               "`{}...`): not overwritten, and no file of its project is rewritten",
                                               module.path, kHeader);
                }
            } catch (const std::exception& e) {
                module.error = e.what();
                kind = FileError::Write;
            }
            if (!module.error) {
                if (std::string why = output::link_refusal(module.path, links); !why.empty()) {
                    module.error = std::move(why);
                    kind = FileError::Write;
                }
            }
            if (module.error) refuse_project(outcomes, project, *module.error, kind);
        }
        out.push_back(std::move(module));
    }
    std::sort(out.begin(), out.end(), [](const Planned& a, const Planned& b) { return a.path < b.path; });
    return out;
}

void write(std::vector<Planned>& modules, std::vector<FileOutcome>& outcomes, output::LinkPolicy links) {
    for (Planned& module : modules) {
        if (!module.changed()) continue;
        try {
            output::write_atomically(module.path, text(), links);
        } catch (const std::exception& e) {
            module.error = e.what();
            const std::string project = analysis::place_module(module.path).project;
            refuse_project(outcomes, project, fmt::format("the runtime module could not be written ({})", e.what()),
                           FileError::Write);
        }
    }
}

void settle(std::vector<Planned>& modules, const std::vector<FileOutcome>& outcomes, const std::vector<bool>& written) {
    for (Planned& module : modules) {
        if (!module.changed()) continue;
        module.importers = 0;
        for (std::size_t i = 0; i < outcomes.size() && i < written.size(); ++i) {
            if (written[i] && outcomes[i].imports_runtime && project_of(outcomes[i]) == module.project) ++module.importers;
        }
        if (module.importers == 0 && !module.existing) {
            std::error_code ec;
            std::filesystem::remove(module.path, ec);
            module.error = "removed: no file that imports it was written";
        }
    }
}

}  // namespace graphmend::runtime_module
