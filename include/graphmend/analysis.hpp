// graphmend analysis layer: what each module binds, which classes are nn.Modules, and
// which functions run under torch.compile (the compiled scope).
//
// Positions are byte offsets into each file's original UTF-8 text. The analysis is
// syntactic: names are resolved through the file's own imports and, when several files
// are fixed together, through the projects they form (relative and absolute imports).
//
// Projects. Every input file belongs to one project, found from the file system alone, so
// that neither the order of the inputs nor the parent folder given changes a result:
// - a package: the file's folder holds __init__.py. The project is the outermost folder of
//   the __init__.py chain; module names are dotted paths from its parent
//   (`.../transformers/models/t5/modeling_t5.py` -> "transformers.models.t5.modeling_t5").
//   Packages share one namespace: `import transformers` in any input resolves to the
//   transformers package when it is among the inputs.
// - a folder project: the file's folder holds no __init__.py. That is the layout of a
//   Hugging Face Hub checkout (config.json, modeling_*.py joined by relative imports) and of
//   a folder of scripts. The folder is treated as a package named after it: `alpha/
//   modeling_alpha.py` is "alpha.modeling_alpha", so `from .configuration_alpha import X`
//   resolves in the same folder. Each folder project has a namespace of its own: its imports
//   resolve inside the folder (relative, or absolute `import utils` between scripts) and
//   then among the packages, never in another folder project. A folder of many checkouts is
//   many projects.
// - torch's own package among the inputs (a tree holding torch's sources next to a model) is
//   never what `torch...` resolves to: torch stays external, so `nn.Module` and torch's
//   functions are recognised by their dotted names whatever else the folder holds.
//
// nn.Module bases outside the inputs. A base that resolves to a name outside the inputs is an
// nn.Module when it is under torch.nn (not torch.nn.functional/utils/init), or one of a few
// other torch classes, or listed in the shipped table of nn.Module classes of transformers
// (src/knowledge/module_table.txt, made from transformers 4.52.4 by scripts/module_table.sh
// with graphmend's own analysis of the whole package, and embedded at build time). The table
// was chosen over reading the installed sources of the Python that runs the model: it gives
// the same answer on every machine and costs nothing at run time. A name matches an entry
// `M.C` when it is `P.C` for P equal to M or a package above M (the package re-exports its
// modules' classes: `transformers.PreTrainedModel`, `transformers.models.llama.LlamaModel`).
// A class none of whose bases resolves to an nn.Module falls back to the same table for a base
// that cannot be resolved (a relative import whose module is not among the inputs, matched by
// the import's last parts and the class's name; a name a star import of a module outside the
// inputs would give), and says so in a note (Project::notes); a base that resolves neither way
// is a note too, where it puts a forward out of scope.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
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
    /// The same bases as dotted text (`nn.Module`), "" for a base that is not a chain of
    /// names and attributes: what the project resolves them through, with or without a tree.
    std::vector<std::string> base_names;
    /// The same bases as written, on one line and cut at 60 characters: what a note names.
    std::vector<std::string> base_texts;
    std::map<std::string, syntax::Node> methods;  // name -> function_definition
    std::uint32_t line = 0;                       // 1-based line of `class`
};

/// What a module binds at module level (including inside module-level if/try/with blocks).
struct ModuleIndex {
    std::vector<Import> imports;
    /// `from M import *`: module and level (local and name empty), in order.
    std::vector<Import> star_imports;
    std::map<std::string, ClassInfo> classes;
    std::map<std::string, syntax::Node> functions;  // module-level function_definition
    std::set<std::string> loggers;   // names bound to logging.getLogger(...) / get_logger(...)
    /// Names bound to a get_logger(...) known to return no logging.Logger (a LoggerAdapter:
    /// knowledge::logger_factory, or a function of the module), with why: GM101 refuses them.
    std::map<std::string, std::string> not_loggers;
    std::set<std::string> assigned;  // every other name bound at module level
    std::set<std::string> runtime_blocks;  // stems of the runtime blocks the file already holds
    /// In a file whose text names `compile` or `optimize`: every distinct dotted callee of a
    /// call, of a call's call and of a decorator (`torch.compile`, `tc`), sorted. The
    /// compile APIs among them make the file an entry of Project::reachable.
    std::vector<std::string> compile_callees;
    /// A package's lazy exports: name -> the module (relative to this package, `modeling_x`,
    /// `models.x`) that a module-level `__getattr__` or a `_LazyModule(...)` imports it from on
    /// first use. Read from the maps such an init keeps: `_import_structure = {"mod": ["A"]}`
    /// (with `_import_structure["mod"] = [...]` and `.extend([...])` / `.append("A")` as
    /// diffusers and transformers write them) and `{"A": "mod"}` dicts that `__getattr__` names.
    /// Empty for a module with neither `__getattr__` nor `_LazyModule`.
    std::map<std::string, std::string> lazy_exports;

    [[nodiscard]] const Import* find_import(const std::string& local) const;
    /// Invalidates every node the index holds (their tree is about to be dropped); the names,
    /// imports and base names stay.
    void forget_nodes();
};

/// A pruned file whose text is not held: it is read again from SourceFile::path when the
/// analysis needs its tree. `size` and `hash` (std::hash of the bytes) are those of the first
/// read, so that a file changed since is noticed; `lone_crs`: some lines end in a lone CR, read
/// as LF (syntax::lf_for_lone_crs; fix_files).
struct DiskText {
    std::uint64_t size = 0;
    std::uint64_t hash = 0;
    bool lone_crs = false;

    /// The DiskText of `bytes`, the file's bytes as read.
    static DiskText of(std::string_view bytes);
    /// True when both describe the same bytes (size and hash; `lone_crs` follows from them).
    [[nodiscard]] bool same_bytes(const DiskText& other) const { return size == other.size && hash == other.hash; }
};

/// Thrown when a file read again (DiskText) is not the file first read: it changed on disk,
/// or can no longer be read, while graphmend ran. what(): "PATH: changed on disk while
/// graphmend read it" (or the read's error).
class SourceChanged : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// One source file of a project: its path, dotted module name and parse tree.
struct SourceFile {
    std::string path;
    std::string module_name;  // "pkg.sub.mod"; "folder.stem" in a folder project
    bool is_package_init = false;
    syntax::Tree tree;
    ModuleIndex index;
    std::string project;    // the project's folder (absolute): outermost package folder, or the folder
    bool isolated = false;  // a folder project: its modules are visible only to its own files
    /// A file whose tree is not held (see Project's constructor): its tree is an empty parse,
    /// its index holds names without nodes (ModuleIndex::forget_nodes), and its source is
    /// `text`, or, when `on_disk` is set, the file at `path` (load_file, Project::tree_of).
    bool pruned = false;
    std::string text{};
    std::optional<DiskText> on_disk{};
    /// The distinct words of the source (word_hashes): what a project-wide scan for the
    /// mentions of a name tests (mentions) before it parses a file. Empty: computed by
    /// Project's constructor.
    std::vector<std::uint32_t> words{};
    /// Lines (1-based) whose innermost `def` runs under torch.compile (--scope-root: verify
    /// passes the frames Dynamo traced): each such function is an entry of the compiled scope.
    std::vector<std::uint32_t> scope_roots{};
    /// Lines (1-based) of the original run's (`graphmend verify`) data-dependent branches
    /// (GB0170, --data-test, Values::data_test), scalar reads (GB0124, GB0109, --data-read,
    /// dynamo_data_read) and data-dependent operators (GB0033, --data-operator).
    std::vector<std::uint32_t> data_tests{}, data_reads{}, data_operators{};
};

/// The source of a file: its tree's text, its held `text`, or its file read again from disk
/// (its lone CRs as LF when DiskText::lone_crs). Throws SourceChanged when the file read is not the one
/// first read (another size or hash) or cannot be read.
std::string read_source(const SourceFile& file);

/// The words of a UTF-8 text, sorted and distinct, as 32-bit hashes (std::hash, folded): each
/// maximal run of ASCII letters, digits and `_` and of bytes >= 0x80 (Python's identifiers,
/// keywords and numbers, and the like inside strings and comments). 4 bytes a word: about
/// 1 KB a file of site-packages.
std::vector<std::uint32_t> word_hashes(std::string_view text);

/// True when `name`, an identifier, may be a word of the file's source (SourceFile::words; a
/// hash collision answers true): false means no identifier of the file is `name`.
bool mentions(const SourceFile& file, std::string_view name);

/// Loads a pruned file: parses its source (read_source) into its tree and fills in the nodes
/// of its index (the names are those of the same text, so the maps are not changed, only
/// their values); clears `pruned`, `text` and `on_disk`. A file that is not pruned is left as
/// it is. Throws SourceChanged as read_source.
void load_file(SourceFile& file);

/// Where a file sits: its module name and project (see the top of this header).
struct ModulePlace {
    std::string module_name;
    bool is_package_init = false;
    std::string project;
    bool isolated = false;
};
ModulePlace place_module(const std::string& path);

/// `a.b.C` for a chain of identifiers and attributes (the forms Project::resolve_expr
/// resolves), "" for any other expression. Iterative: any chain length is safe.
std::string chain_text(syntax::Node node);

/// Builds the index of a parsed module.
ModuleIndex index_module(const syntax::Node& root);

/// The dotted module name of a file: its path relative to the parent of the outermost
/// folder chain holding __init__.py files (`.../transformers/models/t5/modeling_t5.py`
/// -> "transformers.models.t5.modeling_t5"); "folder.stem" outside a package.
std::string module_name_for(const std::string& path, bool* is_package_init = nullptr);

/// True when the dotted name of a class outside the inputs is an nn.Module: torch.nn.*,
/// a few other torch classes, or an entry of the shipped transformers table (see above).
bool is_external_module_class(const std::string& dotted);

/// Something the analysis of a file assumed, or could not resolve, that decides what is in
/// scope: a line the reports show with the file's sites (FileOutcome::notes), so that a file
/// with 0 sites says why. `line` is 1-based.
struct Note {
    std::uint32_t line = 0;
    std::string message;
    friend bool operator==(const Note&, const Note&) = default;
};

/// What a logging call's receiver is when the file binds it by an import (`from .log_utils
/// import logger`), not by `logging.getLogger(...)` itself (ModuleIndex::loggers).
struct ImportedLogger {
    enum Kind {
        None,     // not a logger, or nothing said of it (a class, a function, a module, ...)
        Logger,   // bound by getLogger(...)/get_logger(...) in a module among the inputs
        Assumed,  // from a module outside the inputs, taken as a logger by its names (`detail` says so)
        Unknown,  // its name says logger, but nothing shows it is a logging.Logger (`detail` says why)
    } kind = None;
    std::string detail;
};

/// A function in the compiled scope: file index and the function_definition node.
struct FunctionRef {
    std::size_t file = 0;
    syntax::Node node;
};

/// What a parameter holds that a function of the compiled scope calls (`is_reversed =
/// reverse_check(t)`), from the arguments of the function's call sites in scope
/// (Project::passed_callable). A call site may pass a module-level function, one imported
/// from another input, a def of the caller, a lambda, a method of the caller's class
/// (`self.check`, bound), or a parameter of its own that its callers fill in turn (followed
/// through any number of levels); a call that leaves the parameter out passes its default.
struct PassedCallable {
    /// The distinct functions passed, in the order first found: function_definition nodes, or
    /// lambda nodes. Each of them runs under torch.compile (they are in scope; a lambda's
    /// body is in its own function's).
    std::vector<FunctionRef> callees;
    std::size_t sites = 0;  // the call sites in scope
    /// Why some call site passes nothing the analysis knows as a function ("" when every
    /// call site does): what it passes and where.
    std::string unknown;
    /// The one function every call site passes, or null (none, several, or an unknown one).
    [[nodiscard]] const FunctionRef* only() const {
        return unknown.empty() && callees.size() == 1 ? &callees.front() : nullptr;
    }
    /// Why `only()` is null, in a sentence ("" when it is not).
    [[nodiscard]] std::string why_unknown(std::string_view param) const;
};

/// The files fixed together, and the functions among them that run under torch.compile
/// (the compiled scope). The entry points are:
/// - the `forward` of every nn.Module subclass (a class whose base chain, followed through
///   the projects' own classes and imports, reaches an nn.Module outside the inputs; see
///   is_external_module_class);
/// - every function or method decorated with `@torch.compile`, `@torch.compile(...)`,
///   `@torch.compiler.compile(...)`, `@torch._dynamo.optimize(...)` (also through aliases:
///   `from torch import compile`);
/// - every function or method passed to a compile call anywhere in the inputs:
///   `torch.compile(f)`, `torch.compile(self.m)`, `torch.compile(mod.f)`,
///   `torch.compile(Class.m)`, `torch.compile(**kw)(f)`, `torch._dynamo.optimize(b)(f)`, with
///   f a module-level function or a def of an enclosing function. `torch.compile(model)`
///   and `torch.compile(model.forward)` add nothing: model's forward is an entry already.
///   `torch.compile(obj.m)` for a local (or module-level name) `obj` made by `Class(...)` or
///   `Class.from_*(...)` (instance_class) takes Class's method m, of a plain class too, and a
///   local bound to a target (`run = obj.m`) is followed to it. Names resolve through the
///   lazy exports of a package init (ModuleIndex::lazy_exports).
/// The scope is the entry points and every function or method reachable from them by calls
/// (`f(...)`, `self.m(...)`, `super().m(...)`, `module.f(...)`, `Class(...)` -> `__init__`).
/// Dynamo does not trace a function decorated with `torch.compiler.disable`,
/// `torch._dynamo.disable` or `torch._disable_dynamo` (nor `allow_in_graph` and
/// `nonstrict_trace` ones): it is never in scope and the walk does not go through it.
/// `disable(recursive=False)` skips only the function itself: its callees are walked.
///
/// Everything is computed in the constructor; afterwards a Project is immutable, so its
/// const members may be called from several threads at once (the rules of different files
/// run in parallel).
class Project {
public:
    /// Loads the given pruned files of a project's vector (load_file on each, in any order, on
    /// any threads): the indices are distinct.
    using Loader = std::function<void(std::vector<SourceFile>&, const std::vector<std::size_t>&)>;

    /// `files` may come pruned (SourceFile::pruned: an index of names and words, the source as
    /// text or on disk).
    /// The constructor loads those the analysis reads, with `load` (empty: one at a time,
    /// on this thread), and leaves the others pruned:
    /// - the files of the entry points (classes with a forward; compile API calls), then each
    ///   file the walk of the scope reaches, as it reaches it;
    /// - the files of the classes and functions that the scope's files name (an identifier or
    ///   attribute chain of their expressions, or a prefix of one, resolved as resolve_expr
    ///   resolves it), and of the classes the __init__ of a loaded file's class names;
    /// - the files of the bases of every loaded file's classes, up the hierarchy.
    /// Name resolution reads only names, so a file it passes through (a package re-exporting a
    /// name) stays pruned, and so does every file nothing above reaches: its tree would be
    /// read by nothing but the project-wide scans for the mentions of a name, which parse it
    /// on demand (tree_of). Memory then follows the trees the analysis reads, not the inputs
    /// (docs/measuring.md, "Memory"); the sites and rewrites are those of a run over loaded files
    /// (tests/unit/fixer_test.cpp compares the two).
    explicit Project(std::vector<SourceFile> files, Loader load = {});

    [[nodiscard]] const std::vector<SourceFile>& files() const { return files_; }
    [[nodiscard]] std::vector<SourceFile>& files() { return files_; }
    /// The tree of a file: its own, or for a pruned file a parse of its source (read_source)
    /// made on first use and kept while the project lives (a project-wide scan for the
    /// mentions of a name reads files the analysis does not reach). Safe to call from several
    /// threads. Throws SourceChanged as read_source.
    [[nodiscard]] const syntax::Tree& tree_of(std::size_t file) const;
    /// True when the function_definition starting at `begin` in `file` is in scope.
    [[nodiscard]] bool in_scope(std::size_t file, std::uint32_t begin) const;
    /// The in-scope functions of one file, in source order.
    [[nodiscard]] std::vector<syntax::Node> scope_of(std::size_t file) const;
    /// True when the class is an nn.Module subclass (false for a class the file does not define).
    [[nodiscard]] bool is_module_class(std::size_t file, const std::string& class_name) const;
    /// The dotted names under which the module classes of the inputs can be imported from a
    /// file: its own module classes and the names it imports from other inputs that are module
    /// classes ("pkg.mod.Class"), sorted. tools/module_table.cpp makes the shipped table with it.
    [[nodiscard]] std::vector<std::string> exported_module_classes(std::size_t file) const;

    /// True when code in file `from` can name what file `of` defines: `of` is a package file
    /// (any project may import it), or both files are in one folder project (a folder
    /// project is visible only to itself). A scan for the mentions of a name defined in `of`
    /// looks only at such files: the same name in a sibling checkout is another class.
    [[nodiscard]] bool visible(std::size_t from, std::size_t of) const {
        return !files_[of].isolated || files_[from].project == files_[of].project;
    }

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
    /// What `name`, bound in `file` by an import and not otherwise at module level, is as the
    /// receiver of a logging call (`name.info(...)`). Followed through the inputs' imports to
    /// the module that binds it: a name bound there by getLogger(...)/get_logger(...) alone is a
    /// Logger. A name from a module outside the inputs is Assumed a logging.Logger when both
    /// that module's dotted name and the name say so (`transformers.utils.logging`, `log_utils`,
    /// `logging`; `logger`, `log`, `*logger`), as `logging.root` is; with only the name saying so
    /// it is Unknown (loguru's `logger` is no logging.Logger, and the runtime replays a call
    /// through logging.Logger's own methods).
    [[nodiscard]] ImportedLogger imported_logger(std::size_t file, const std::string& name) const;

    /// The functions outside the scope that hand a function to a compile call and call what
    /// it returns (`step = torch.compile(scheduler.step)` in a script's `main`, then
    /// `step(out, t, sample)`): the value analysis reads their calls as callers of the compiled
    /// function, so that what a script passes is evidence for the compiled function's
    /// parameters. Sorted by (file, start).
    [[nodiscard]] const std::vector<FunctionRef>& drivers() const { return drivers_; }
    /// The function a local of `function` is bound to by `NAME = torch.compile(TARGET)` (or
    /// `NAME = TARGET` of a method, compiled later through NAME), found by the scope's walk.
    [[nodiscard]] std::optional<FunctionRef> compiled_local(std::size_t file, const syntax::Node& function,
                                                            const std::string& name) const;
    /// The project class of the object a local holds where `at` reads it: every assignment of
    /// the name in the function around `at` (or at module level outside any function) makes it
    /// with `Class(...)` or a `Class.from_*(...)` constructor (`from_config`, `from_pretrained`)
    /// of the same class. As (file, class).
    [[nodiscard]] std::optional<std::pair<std::size_t, std::string>> instance_class(std::size_t file,
                                                                                  const syntax::Node& at,
                                                                                  const std::string& name) const;

    /// The notes of a file (Note), by line: a base class taken from the shipped table on a
    /// fallback, and a base that resolves neither way, for the classes whose methods it puts
    /// out of scope (a class with a forward that is not in scope, and the classes it derives
    /// from). A base of a class is taken from the table when no base resolves to an nn.Module
    /// and it comes through a relative import whose module is not among the inputs (it leaves
    /// the folder or package given, or its file was not given): `from ...modeling_utils import
    /// PreTrainedModel` is taken as `transformers.modeling_utils.PreTrainedModel`, an entry
    /// `M: C` whose M ends with the import's module and C is the class; or when it is bound
    /// by no import and a star import of a module outside the inputs names an nn.Module of
    /// that name (`from torch.nn import *`: `Module`).
    [[nodiscard]] const std::vector<Note>& notes(std::size_t file) const;

    /// What parameter `param` of the in-scope function starting at `function_begin` holds,
    /// when the function calls it (`param(...)`) and binds it nowhere else; null for any
    /// other parameter. The functions the call sites pass are in scope.
    [[nodiscard]] const PassedCallable* passed_callable(std::size_t file, std::uint32_t function_begin,
                                                        const std::string& param) const;

private:
    struct Symbol {  // what a name resolves to
        enum Kind { None, Module, Class, Function, External, Logger } kind = None;
        std::size_t file = 0;
        std::string name;  // class/function name, or the dotted external name
    };
    [[nodiscard]] Symbol resolve_name(std::size_t file, const std::string& name, int depth = 0) const;
    [[nodiscard]] Symbol resolve_expr(std::size_t file, const syntax::Node& expr) const;
    /// resolve_expr of a chain given as text (`a.b.C`, ClassInfo::base_names).
    [[nodiscard]] Symbol resolve_dotted(std::size_t file, std::string_view chain) const;
    void register_modules();
    void load(const std::vector<std::size_t>& files);  // those pruned, through load_
    void load_read_files();
    [[nodiscard]] Symbol resolve_in_module(const std::string& ns, const std::string& module, const std::string& name,
                                           int depth) const;
    /// `name` through the star imports of `file` (`from .conv import *`) of modules among the inputs.
    [[nodiscard]] Symbol resolve_star(std::size_t file, const std::string& name, int depth) const;
    [[nodiscard]] std::optional<std::size_t> find_module(const std::string& ns, const std::string& dotted) const;
    [[nodiscard]] const std::string& namespace_of(std::size_t file) const;
    [[nodiscard]] syntax::Node local_def(const syntax::Node& at, const std::string& name) const;
    [[nodiscard]] std::string owner_class(const syntax::Node& function) const;
    enum class Tracing { Traced, Skipped, SkippedAlone };  // SkippedAlone: disable(recursive=False)
    [[nodiscard]] Tracing tracing_of(std::size_t file, const syntax::Node& function) const;
    [[nodiscard]] bool is_compile_api(std::size_t file, const syntax::Node& expr, bool factory) const;
    [[nodiscard]] std::string absolute_module(std::size_t file, const Import& imp) const;
    [[nodiscard]] std::vector<std::pair<std::size_t, std::string>> class_bases(std::size_t file,
                                                                              const std::string& cls) const;
    /// The classes of the inputs a class derives from, each once, without the class itself.
    [[nodiscard]] std::vector<std::pair<std::size_t, std::string>> ancestors(std::size_t file,
                                                                           const std::string& cls) const;
    bool compute_module_class(std::size_t file, const std::string& class_name);
    void compute_module_classes();
    void compute_scope();
    struct ScopeWalk;  // compute_scope's walk: its state and steps (src/analysis/scope_walk.hpp)
    /// How a base of a class that no base makes an nn.Module is read: see notes().
    struct BaseReading {
        enum Kind { Known, Assumed, Unknown } kind = Known;  // Known: nothing to say (a builtin, torch, a project class)
        std::string text;                                    // Assumed/Unknown: what the note says of the base
    };
    [[nodiscard]] BaseReading read_base(std::size_t file, const ClassInfo& info, std::size_t base) const;
    [[nodiscard]] std::string import_text(const Import& imp) const;
    void compute_notes();

    std::vector<SourceFile> files_;
    std::vector<std::size_t> by_path_;  // file indices in path order: analysis order, whatever the input order
    // (namespace, dotted module) -> file; namespace "" holds the packages, a folder project's
    // namespace is its folder. Of two files with one name, the first in path order wins.
    std::map<std::pair<std::string, std::string>, std::size_t> by_module_;
    std::set<std::pair<std::size_t, std::uint32_t>> scope_;
    std::map<std::size_t, std::vector<syntax::Node>> scope_nodes_;  // the same functions, per file
    std::map<std::pair<std::size_t, std::string>, bool> module_classes_;  // every class of every file
    /// The classes that are nn.Modules only through a base taken from the table (read_base),
    /// with what their note says of it.
    std::map<std::pair<std::size_t, std::string>, std::string> assumed_bases_;
    std::map<std::size_t, std::vector<Note>> notes_;  // per file, by line
    // (file, function start, parameter) -> what the call sites pass for a parameter the
    // function calls (passed_callable; filled by the scope walk, src/analysis/passed_callables.cpp).
    std::map<std::tuple<std::size_t, std::uint32_t, std::string>, PassedCallable> passed_;
    std::vector<FunctionRef> drivers_;
    // (file, start of the function around the binding or 0 at module level, local) -> compiled function.
    std::map<std::tuple<std::size_t, std::uint32_t, std::string>, FunctionRef> compiled_locals_;
    Loader load_;        // the constructor's loader (cleared when it returns)
    struct LoadedTrees;  // tree_of's parses of pruned files
    std::shared_ptr<LoadedTrees> loaded_;
};

/// Names bound inside a function (parameters, assignment and loop targets, imports,
/// nested defs), not descending into nested functions or classes. Remembered on the calling
/// thread for the last few functions asked (FunctionMemo): a rule asks it once per site.
std::set<std::string> local_names(const syntax::Node& function);

/// What a function decides (its names, its reads), remembered on one thread for the last few
/// functions asked, by the function's identity (its text's SourceText::serial and its byte
/// range): a rule that asks per site walks a function once, not once per site (whose time grew
/// as the square of the function's sites). The key costs O(1): a key by the function's text
/// (size and hash) cost its length per ask, again the square for a long function. `make` is
/// called with the function when it is not remembered; what it returns holds no nodes, only
/// offsets from the function's start.
template <typename T>
class FunctionMemo {
public:
    template <typename Make>
    const T& get(const syntax::Node& function, Make&& make) {
        const Key key{function.source().serial(), function.begin(), function.end()};
        for (const auto& [k, value] : entries_) {
            if (k == key) return value;
        }
        if (entries_.size() == kRemembered) entries_.erase(entries_.begin());
        entries_.emplace_back(key, make(function));
        return entries_.back().second;
    }

private:
    using Key = std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>;
    static constexpr std::size_t kRemembered = 8;  // a site's function and the ones around it
    std::vector<std::pair<Key, T>> entries_;
};

/// The innermost enclosing function_definition of a node, or an invalid Node.
syntax::Node enclosing_function(const syntax::Node& node);

}  // namespace graphmend::analysis
