// The walk that computes the compiled scope (Project::compute_scope), shared by its files:
// scope.cpp (entry points, the calls each function makes) and passed_callables.cpp (the
// functions passed as arguments to parameters that are called). Not installed.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

// The walk that computes the compiled scope (compute_scope): the functions found so far, those
// still to walk, and what the walk remembers of the project's classes on the way.
struct Project::ScopeWalk {
    using ClassRef = std::pair<std::size_t, std::string>;  // (file, class)

    explicit ScopeWalk(Project& project);

    // The nodes of a file are read only once it is loaded (a pruned file holds names only).
    syntax::Node function_of(std::size_t file, const std::string& name);
    void add(std::size_t f, const syntax::Node& fn);
    void add_method(std::size_t f, const std::string& cls, const std::string& name, bool up, bool down);
    const std::set<ClassRef>& classes_of_attribute(std::size_t file, const std::string& cls, const std::string& name);
    std::optional<FunctionRef> add_target(std::size_t f, const syntax::Node& target, int depth = 0);
    std::vector<bool> load_entry_files();
    void add_forwards();
    void add_compiled(std::size_t f);
    void add_roots(std::size_t f);
    void walk_calls(const FunctionRef& ref);
    void run();

    // Callables passed as arguments (passed_callables.cpp).
    /// Notes `call`, a call in `ref`'s body: among the call sites by name, and in
    /// called_params when it calls a parameter of `ref`.
    void note_call(const FunctionRef& ref, const syntax::Node& call);
    /// After run(): puts the functions the call sites pass for a called parameter in scope,
    /// walks them, and again until no more are found; then fills Project::passed_.
    void follow_passed_callables();
    /// What the call sites in scope pass for parameter `param` of `fn` (memo, by rounds).
    const PassedCallable& passed(const FunctionRef& fn, const std::string& param, int depth);
    /// Adds to `out` the function `expr` names, an argument or default in `file` read where
    /// `context` (a function or lambda around it, or none) binds names.
    void callable_of(std::size_t file, const syntax::Node& expr, const syntax::Node& context, PassedCallable& out,
                     int depth);

    Project& p;
    // Class hierarchy inside the project: (file, class) -> subclasses.
    std::map<ClassRef, std::vector<ClassRef>> subclasses;
    std::deque<FunctionRef> work;
    std::set<std::pair<std::size_t, std::uint32_t>> walked;  // the scope, plus disable(recursive=False) functions
    // The nn.Module classes of the project that `self.NAME = Class(...)` binds in a class's
    // __init__ or its bases' (what `self.NAME.m(...)` calls a method of), by (file, class, NAME).
    std::map<std::tuple<std::size_t, std::string, std::string>, std::set<ClassRef>> attribute_classes;
    // Parameters a walked function calls and binds nowhere else: (file, start) -> (function, names).
    std::map<std::pair<std::size_t, std::uint32_t>, std::pair<FunctionRef, std::set<std::string>>> called_params;
    // The calls of the walked functions by their callee's name (`f(...)`, `x.f(...)`): (the
    // function around, the call). 40 bytes a call: whole transformers holds some 10^5.
    std::map<std::string, std::vector<std::pair<FunctionRef, syntax::Node>>> call_sites;
    // passed()'s answers in the current round, by (file, function start, parameter).
    std::map<std::tuple<std::size_t, std::uint32_t, std::string>, PassedCallable> passed_memo;
};

}  // namespace graphmend::analysis
