// Tests that read tensor values: whether an `if` / `assert` / conditional expression test
// is data-dependent (a graph break under TorchDynamo: GB0170, GB0124 for `.item()`), and
// its rewrite into the predicate helpers of src/runtime/predicated_control_flow.py.
// Shared by the predicated-control-flow (GM201) and predicated-validation (GM301) rules.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "graphmend/liveness.hpp"
#include "graphmend/syntax.hpp"
#include "graphmend/values.hpp"

namespace graphmend::rules {

/// True for a method or torch function whose result reads tensor values (`any`, `max`,
/// `isnan`, `equal`, ...).
bool is_data_read(std::string_view name);

/// True when an identifier node is read (see include/graphmend/liveness.hpp).
using analysis::is_read;

/// Locals of `function` (in `file`) assigned from a torch call or a data read (tensor-valued),
/// by spelling; an assignment whose value `values` knows to be a Python value (no tensor, no
/// unknown: `torch.numel(x)`, `not torch.is_autocast_enabled()`) does not count. Calls of
/// `torch.is_*`, `has_*`, `get_*`, `set_*` and `torch._*` query state and do not count.
std::set<std::string> tensor_locals(const syntax::Node& function, const analysis::Values& values, std::size_t file);

/// True when `test` reads tensor values: it calls a data read, takes `float()` / `int()` /
/// `bool()` of a tensor-valued local, or compares a local in `tensor_names`.
bool reads_data(const syntax::Node& test, const std::set<std::string>& tensor_names);
/// reads_data, not counting a name where an isinstance test shows it is no tensor
/// (Values::narrowed_to_python).
bool reads_data(const syntax::Node& test, const std::set<std::string>& tensor_names, const analysis::Values& values,
                std::size_t file);

/// `test` with tensor `and` / `or` / `not`, `.item()`, `float()` / `int()` / `bool()` and
/// `torch.equal` rewritten to the _graphmend_and / _or / _not / _scalar / _equal helpers,
/// which keep Python's semantics for operands that are not tensors.
std::string predicate(const syntax::Node& test);

/// `if TEST: raise ...` with no elif/else: a check owned by the predicated-validation
/// rule (GM301), which other rules leave alone.
bool is_raise_check(const syntax::Node& stmt);

/// A rebuilt copy of `n` in which `replace(node)` may substitute the text of any node.
template <typename Replace>
std::string rebuild(const syntax::Node& n, Replace&& replace) {
    if (auto r = replace(n)) return *r;
    if (n.child_count() == 0) return std::string(n.text());
    const std::string_view src = n.source().text();
    std::string out;
    std::uint32_t cursor = n.begin();
    for (const syntax::Node& c : n.children()) {
        out += src.substr(cursor, c.begin() - cursor);
        out += rebuild(c, replace);
        cursor = c.end();
    }
    out += src.substr(cursor, n.end() - cursor);
    return out;
}

}  // namespace graphmend::rules
