// The host-int matcher's parts, shared by the files of this folder only (see host_ints.hpp for
// what the matcher finds, and host_ints.cpp for what it proves before a read uses the list):
// - names.cpp: what a function binds, its parameters, the argument a call passes for one, and
//   ints computed from shapes;
// - call_sites.cpp: every call of a function in the project (Matcher::call_sites);
// - changes.cpp: whether a tensor, a list or an element read back may be changed;
// - origin.cpp: where a tensor read back comes from (Matcher::origin);
// - element_uses.cpp: whether the elements read back are used where a Python int gives the
//   same result as a 0-d long tensor;
// - host_ints.cpp: the reads of a function (match_host_reads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "graphmend/rule.hpp"
#include "rules/support/tensor_test.hpp"  // is_read

namespace graphmend::rules::host_ints {

using syntax::Node;

inline std::uint32_t line_of(const Node& n) { return n.position().line; }

// --- names.cpp: syntax and bindings ----------------------------------------------------------

// The outermost parentheses around `n` (`n` itself when there are none).
Node outer(Node n);

// True when `inner` lies in `outer_node` (false when `outer_node` is invalid).
bool within(const Node& inner, const Node& outer_node);

// A function, class or lambda: a scope of its own.
bool is_scope(const Node& n);

// A list, generator, set or dictionary comprehension.
bool is_comprehension(const Node& n);

// The identifiers a target pattern binds.
std::vector<Node> target_names(const Node& target);

// The statements (or expressions) of `def`'s own scope that bind `name`, comprehensions
// excluded (they have a scope of their own).
std::vector<Node> bindings(const Node& def, std::string_view name);

struct Param {
    std::string name;
    bool positional = true;
};

// The parameters of `def` in order (`*args` and what follows are keyword-only).
std::vector<Param> params_of(const Node& def);

// True when `name` is a parameter of `def`.
bool is_param(const Node& def, std::string_view name);

// True when `def` is a method called with its receiver bound (not a staticmethod).
bool bound_method(const Node& def);

// The argument `call` passes for parameter `param` of `def`; invalid when it passes none.
// `ok` is false when the arguments cannot be matched to the parameters (`*a`, `**k`).
Node argument_for(const Node& call, const Node& def, std::string_view param, bool& ok);

// The parameter of `def` that the argument `arg` (a keyword_argument, or a positional argument
// of the argument_list `args`) binds; "" when none does by name or position.
std::string parameter_taking(const Node& def, const Node& args, const Node& arg);

// True when `e` (in `def`) is an int computed from shapes: literals, `x.shape[k]`, `x.size(k)`,
// `len(...)`, `x.dim()`, names so bound (`h, w = x.shape`), and + - * // of these. `depth`
// bounds the bindings followed.
bool int_expr(const Node& def, Node e, int depth = 0);

// Calls `visit(node, def)` on every node under `root`, with `def` the innermost
// function_definition around it (invalid at module level); `visit` returns false to stop
// descending. Finding the function of a node by climbing parents costs a descent from the root
// per step in tree-sitter: this walk knows it as it goes.
template <typename Visit>
void walk_with_function(const Node& root, const Node& def, Visit&& visit) {
    syntax::walk(root, [&](const Node& n) {
        if (n.is("function_definition") && !(n == root)) {
            if (!visit(n, def)) return false;
            walk_with_function(n, n, visit);
            return false;
        }
        return visit(n, def);
    });
}

// --- the matcher: calls, changes, origins ----------------------------------------------------

struct CallSite {
    std::size_t file = 0;
    Node call;
};

// Where a tensor read back comes from.
struct Origin {
    bool found = false;          // the name holds a tensor built from a list of ints
    std::string refused;         // why the list cannot stand for it ("" when it can)
    std::string list;            // the list's expression in the function ("" when none there)
    int rank = 0;                // 1: a list of ints; 2: a list of tuples
    std::size_t width = 0;       // rank 2: the tuples' length
    Node list_node;              // the list's local (origin where it is made)
};

// The project-wide questions about one tensor or list; `visiting` stops the recursion through
// calls (cleared before each question).
struct Matcher {
    const Context& ctx;
    std::set<std::tuple<std::size_t, std::uint32_t, std::string>> visiting;

    // The base name of file `f`'s path.
    std::string file_name(std::size_t f) const;

    // True when `call` is to a torch function (not in place, no `out=`).
    bool torch_call(std::size_t f, const Node& call) const;

    // The project function `call` (in file `f`) calls, a local iterating modules included.
    std::optional<analysis::FunctionRef> project_callee(std::size_t f, const Node& call) const;

    // The forward of the modules a local iterates: `for i, layer in enumerate(self.layers)`
    // with `self.layers = nn.ModuleList([Layer(...) for ...])` (or a list of Layer(...)) in
    // the class's __init__.
    std::optional<analysis::FunctionRef> module_var_forward(std::size_t f, const Node& id,
                                                            const Node& enclosing = {}) const;

    // call_sites.cpp: every call of `def` (in `file`) in the project's files, and why they
    // cannot all be known ("" when they can).
    std::vector<CallSite> call_sites(std::size_t file, const Node& def, std::string& why) const;

    // changes.cpp: why the elements of `name` a loop or comprehension binds may be changed
    // (views of it).
    std::string element_changes(std::size_t f, const Node& loop, const std::string& name) const;

    // changes.cpp: why the tensor `name`, a local or parameter of `def`, may be changed in `def`
    // or a project function it is passed to ("" when it is only read).
    std::string tensor_changes(std::size_t f, const Node& def, const std::string& name, int depth);

    // changes.cpp: why the list `name` may be changed in `def` (after byte `made`, where the
    // tensor is made; 0: anywhere) or in a project function it is passed to ("" when it is
    // only read).
    std::string list_changes(std::size_t f, const Node& def, const std::string& name, std::uint32_t made, int depth);

    // origin.cpp: the list local `L` a host tensor is made from, in `def`: its elements' rank and
    // width.
    Origin list_origin(std::size_t f, const Node& def, const std::string& list, std::uint32_t made);

    // origin.cpp: where the tensor `name` (read in `def` of file `f`) comes from. `depth` bounds
    // the calls followed.
    Origin origin(std::size_t f, const Node& def, const std::string& name, int depth);

    // origin.cpp: a parameter: every call in the project passes a host tensor; the sibling
    // parameter that every call passes the matching list in, if any.
    Origin param_origin(std::size_t f, const Node& def, const std::string& name, int depth);

   private:
    // call_sites.cpp: the steps of call_sites.
    std::vector<std::size_t> files_naming(std::size_t file, const Node& def) const;
    void direct_calls(std::size_t file, const Node& def, const std::vector<std::size_t>& naming,
                      std::vector<CallSite>& out, std::string& why) const;
    std::string splat_calls(std::size_t file, const Node& def, const std::vector<std::size_t>& naming) const;
};

// --- element_uses.cpp: the elements read back ------------------------------------------------

// Why using Python ints for the names `names` (elements read back, bound in `scope`) may give
// other results than 0-d long tensors ("" when it cannot). `scope` is the loop or comprehension
// whose target binds them; `def` the function.
std::string element_uses(const Context& ctx, const Node& def, const Node& scope, std::vector<std::string> names);

// True when a name of `names` (or a value computed from one in its statement) is read into
// Python where it is used: a slice bound, a size of a torch factory or a shape method. A loop
// whose elements feed none of these does not break the graph (GM401's `feeds` likewise).
bool feeds_sizes(const Context& ctx, const Node& region, const std::set<std::string>& names);

}  // namespace graphmend::rules::host_ints
