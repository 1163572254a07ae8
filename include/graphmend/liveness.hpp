// Which names a function has bound at a point, and which it reads elsewhere: the
// liveness questions a rewrite asks before it makes both branches of an `if` run.
//
// Everything here is syntactic and works on nodes of one parse tree: `function` is a
// function_definition, `stmt` a statement node, `block` a block node, and the answers
// are sets of identifiers (Python names as written). Nested functions and classes are
// not followed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "graphmend/syntax.hpp"

namespace graphmend::analysis {

/// True when an identifier node is read (not bound, not an attribute or keyword name).
bool is_read(const syntax::Node& id);

/// Calls `visit` on every identifier that binds or unbinds a name in `node`, in source order:
/// targets of assignments (unpacking ones, starred and annotated ones included), augmented
/// assignments, `for` loops and comprehension clauses, walruses, `with ... as` and
/// `except ... as`, imports (an alias, else the first part of the dotted name), `del`, match
/// captures, and the names of nested functions and classes. Nested functions, classes and
/// lambdas are not entered; `global` and `nonlocal` statements bind nothing here. Targets'
/// attributes and subscripts (`a.b = ...`, `a[i] = ...`) bind nothing.
void for_each_binding(const syntax::Node& node, const std::function<void(const syntax::Node&)>& visit);

/// True when `node` binds `name` (see for_each_binding) at an identifier that starts before
/// byte `before`.
bool binds(const syntax::Node& node, const std::string& name, std::uint32_t before = UINT32_MAX);

/// For each read of a name in `function`'s body (not inside nested functions, classes,
/// lambdas or comprehensions), the value of the one plain assignment (`NAME = VALUE`,
/// `A = NAME = VALUE`, `NAME: T = VALUE`) that reaches it on every path, where there is one:
/// the read identifier's start byte -> VALUE. A read is left out when any other binding of the
/// name may reach it: a branch or loop that binds it, a `try` or `with` body that binds it
/// (an exception may leave it half done), a parameter, or a name some code declares `global`
/// or `nonlocal`. The value analysis uses it to evaluate a reassigned name by the assignment
/// before it rather than by the join of all of them (`kv = enc(p); kv = kv.split(2);
/// return kv` returns a tuple, not a tensor or a tuple).
std::map<std::uint32_t, syntax::Node> reaching_assignments(const syntax::Node& function);

/// Names a statement certainly binds when control flows past it: assignment targets
/// (chained and unpacking ones included), for an if/elif/else with an else the names
/// every branch that falls through binds (a branch ending in return/raise does not count),
/// and the names bound by the body of a `with`. Other statements bind nothing certain.
std::set<std::string> assigned_by(const syntax::Node& stmt);

/// assigned_by() over the statements of a block, merged.
std::set<std::string> assigned_by_block(const syntax::Node& block);

/// Names certainly bound when `target` (a node inside `function`) runs: the parameters,
/// and the names bound by the statements that precede it in its own block or in an
/// enclosing block of the function.
std::set<std::string> definitely_bound(const syntax::Node& function, const syntax::Node& target);

/// What a function binds and reads around one of its nodes (`skip`, the node a rule
/// rewrites): see scope_of().
struct Scope {
    std::set<std::string> read_outside;  // names read in the function's body outside `skip`
    std::set<std::string> bound_before;  // definitely_bound(function, skip)
    std::set<std::string> locals;        // every name the function binds (local_names)
};

/// The Scope of `skip` in `function`.
Scope scope_of(const syntax::Node& function, const syntax::Node& skip);

/// A local of the scope that `expr` reads (outside lambdas, and not among the names in
/// `assigned`, bound earlier by the code being rewritten) and that may have no value at
/// `skip`, or "" when there is none. The first such name in tree order.
std::string maybe_unbound(const syntax::Node& expr, const Scope& scope, const std::set<std::string>& assigned);

}  // namespace graphmend::analysis
