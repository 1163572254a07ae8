// GM202 compile-skipped-default, private to src/rules/gm202_compile_skipped_default/ (what the
// rule finds, its fix and why the fix is safe: rule.cpp).
//
//   rule.cpp            the sites: `if N is None and not is_torchdynamo_compiling(): N = ...`,
//                       and the fix
//   compile_test.cpp    which calls are compile tests, and which return False when Dynamo runs
//                       an abandoned frame eagerly
//   raising_paths.cpp   the paths below the `if` on which N meets a use that raises on None
//
// All nodes are of the file being checked (ctx.file).
#pragma once

#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules::compile_skipped {

using syntax::Node;

// --- compile_test.cpp
/// The call in `not TEST()` (`n`), TEST a compile test (is_torchdynamo_compiling,
/// torch.compiler.is_compiling, torch._dynamo.is_compiling, torch.compiler.is_dynamo_compiling)
/// or a function of the project that returns one, or a null node.
Node compile_test_in(const Context& ctx, const Node& n);
/// True when the compile test `call` returns False when Dynamo, having abandoned the frame,
/// runs it eagerly (see compile_test.cpp).
bool false_when_abandoned(const Context& ctx, const Node& call);

// --- raising_paths.cpp
/// `N is None` (`n`): N's name, or empty.
std::string none_test_name(const Node& n);
/// The operands of `n`, an `and` chain (parentheses dropped), in order, appended to `out`; `n`
/// itself when it is no `and`.
void and_operands(const Node& n, std::vector<Node>& out);
/// The class whose method `def` is, or empty.
std::string owner_of(const Node& def);

/// Where uses are followed: the context of the file being checked, and the class of the
/// method walked, which resolves `self.f(...)` (empty outside a method).
struct Walk {
    const Context& ctx;
    std::string owner;
};

/// The paths found by raising_paths.
struct Paths {
    std::vector<std::string> conditions;  // each a path on which the use raises
    bool always = false;                  // the use raises on every path
    std::string refused;                  // a raising path exists, but its test is not static
    int line = 0;                         // of the first raising use
};

/// The paths below the `if` at `stmts[at]` (the statements of its block) on which `name` meets
/// a use that raises on None: each as a Python test of static values, or `always`; or why one
/// exists that is not static (`refused`).
Paths raising_paths(const Walk& w, const std::vector<Node>& stmts, std::size_t at, const std::string& name);

}  // namespace graphmend::rules::compile_skipped
