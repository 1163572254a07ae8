// graphmend analysis layer: what each module binds, which classes are nn.Modules, and
// which functions run under torch.compile (the compiled scope).
//
// Positions are byte offsets into each file's original UTF-8 text. The analysis is
// syntactic: names are resolved through the file's own imports and, when several files
// are fixed together, through the package they form (relative and absolute imports).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graphmend/syntax.hpp"

namespace graphmend::analysis {

/// One name bound by an import statement. `import a.b as c`: local "c", module "a.b".
/// `from ..x import y as z`: local "z", module "x", name "y", level 2.
/// `import a.b` binds local "a" to module "a".
struct Import {
    std::string local;
    std::string module;
    std::string name;  // empty for `import module`
    int level = 0;     // leading dots of a relative import
};

struct ClassInfo {
    std::string name;
    syntax::Node node;                        // class_definition
    std::vector<syntax::Node> bases;          // base expressions (keyword arguments excluded)
    std::map<std::string, syntax::Node> methods;  // name -> function_definition
};

/// What a module binds at module level (including inside module-level if/try/with blocks).
struct ModuleIndex {
    std::vector<Import> imports;
    std::map<std::string, ClassInfo> classes;
    std::map<std::string, syntax::Node> functions;  // module-level function_definition
    std::set<std::string> loggers;   // names bound to logging.getLogger(...) / get_logger(...)
    std::set<std::string> assigned;  // every other name bound at module level
    std::set<std::string> runtime_blocks;  // stems of the runtime blocks the file already holds

    [[nodiscard]] const Import* find_import(const std::string& local) const;
};

/// One source file of a project: its path, dotted module name and parse tree.
struct SourceFile {
    std::string path;
    std::string module_name;  // "pkg.sub.mod", or the file stem outside a package
    bool is_package_init = false;
    syntax::Tree tree;
    ModuleIndex index;
};

/// Builds the index of a parsed module.
ModuleIndex index_module(const syntax::Node& root);

/// The dotted module name of a file: its path relative to the parent of the outermost
/// folder chain holding __init__.py files (`.../transformers/models/t5/modeling_t5.py`
/// -> "transformers.models.t5.modeling_t5").
std::string module_name_for(const std::string& path, bool* is_package_init = nullptr);

/// A function in the compiled scope: file index and the function_definition node.
struct FunctionRef {
    std::size_t file = 0;
    syntax::Node node;
};

/// The files fixed together, and the functions among them that run under torch.compile:
/// the `forward` of every nn.Module subclass (a class whose base chain, followed through
/// the project's own classes and imports, reaches a class of `torch.nn`), and every
/// function or method reachable from such a forward by calls (`f(...)`, `self.m(...)`,
/// `super().m(...)`, `module.f(...)`, `Class(...)` -> `__init__`).
///
/// Everything is computed in the constructor; afterwards a Project is immutable, so its
/// const members may be called from several threads at once (the rules of different files
/// run in parallel).
class Project {
public:
    explicit Project(std::vector<SourceFile> files);

    [[nodiscard]] const std::vector<SourceFile>& files() const { return files_; }
    [[nodiscard]] std::vector<SourceFile>& files() { return files_; }
    /// True when the function_definition starting at `begin` in `file` is in scope.
    [[nodiscard]] bool in_scope(std::size_t file, std::uint32_t begin) const;
    /// The in-scope functions of one file, in source order.
    [[nodiscard]] std::vector<syntax::Node> scope_of(std::size_t file) const;
    /// True when the class is an nn.Module subclass (false for a class the file does not define).
    [[nodiscard]] bool is_module_class(std::size_t file, const std::string& class_name) const;

    // Name resolution for the value analysis (src/analysis/calls.cpp).
    /// The project function a call names: a module-level function (`f(...)`,
    /// `module.f(...)`), a method of `owner` (a class of `file`, "" for none) or of its
    /// bases (`self.m(...)`, `cls.m(...)`, `super().m(...)`), or `Class.m(...)`.
    [[nodiscard]] std::optional<FunctionRef> callee(std::size_t file, const syntax::Node& call,
                                                    const std::string& owner) const;
    /// The project class an expression names (`Name`, `module.Name`), as (file, class).
    [[nodiscard]] std::optional<std::pair<std::size_t, std::string>> class_named(std::size_t file,
                                                                               const syntax::Node& expr) const;
    /// The method `name` of a class or, failing that, of its bases (first found).
    [[nodiscard]] std::optional<FunctionRef> find_method(std::size_t file, const std::string& cls,
                                                         const std::string& name) const;
    /// The dotted name outside the project an expression resolves to through the file's
    /// imports (`F.relu` -> "torch.nn.functional.relu"), or "".
    [[nodiscard]] std::string external_name(std::size_t file, const syntax::Node& expr) const;

private:
    struct Symbol {  // what a name resolves to
        enum Kind { None, Module, Class, Function, External } kind = None;
        std::size_t file = 0;
        std::string name;  // class/function name, or the dotted external name
    };
    [[nodiscard]] Symbol resolve_name(std::size_t file, const std::string& name, int depth = 0) const;
    [[nodiscard]] Symbol resolve_expr(std::size_t file, const syntax::Node& expr) const;
    [[nodiscard]] Symbol resolve_in_module(const std::string& module, const std::string& name, int depth) const;
    [[nodiscard]] std::optional<std::size_t> find_module(const std::string& dotted) const;
    [[nodiscard]] std::string absolute_module(std::size_t file, const Import& imp) const;
    [[nodiscard]] std::vector<std::pair<std::size_t, std::string>> class_bases(std::size_t file,
                                                                              const std::string& cls) const;
    bool compute_module_class(std::size_t file, const std::string& class_name);
    void compute_module_classes();
    void compute_scope();

    std::vector<SourceFile> files_;
    std::map<std::string, std::size_t> by_module_;
    std::set<std::pair<std::size_t, std::uint32_t>> scope_;
    std::map<std::pair<std::size_t, std::string>, bool> module_classes_;  // every class of every file
};

/// Names bound inside a function (parameters, assignment and loop targets, imports,
/// nested defs), not descending into nested functions or classes.
std::set<std::string> local_names(const syntax::Node& function);

/// The innermost enclosing function_definition of a node, or an invalid Node.
syntax::Node enclosing_function(const syntax::Node& node);

}  // namespace graphmend::analysis
