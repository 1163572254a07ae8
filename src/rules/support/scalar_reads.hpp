// Python scalars read out of tensor data that a data-dependent test uses:
//     hits = x.sum().item()
//     if hits > 5: ...
// The graph break (GB0124, torch 2.12: `.item()` / `float(t)` / `int(t)` / `bool(t)`
// without capture_scalar_outputs) sits on the read, not on the test, so rewriting the
// test alone would be reported as fixed while the graphs stay as they were. Shared by the
// predicated-control-flow (GM201) and predicated-validation (GM301) rules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

/// A call that reads tensor data into Python: `T.item()`, `T.tolist()`, or `int(T)`,
/// `float(T)`, `bool(T)` (the builtins, not names the file imports) with T a tensor.
struct ScalarRead {
    std::string kind;     // "item", "tolist", "int", "float" or "bool"
    syntax::Node tensor;  // T
};
std::optional<ScalarRead> scalar_read(const Context& ctx, const syntax::Node& call);

struct ScalarReads {
    /// Edits that keep each read a tensor when traced: `hits = _graphmend_scalar("item", x.sum())`
    /// (eagerly, and for a value that is not a traced tensor, the read as written).
    std::vector<edits::Edit> edits;
    std::vector<std::string> lines;  // "line N" of each rewritten read, for the report
    std::string refused;             // why the site cannot be fixed ("" when it can)
};

/// The scalar reads behind `tests` (the test expressions of `stmt`, in function `def`).
/// A read can be rewritten when it is the only assignment of a local (`NAME = T.item()`,
/// `NAME = float(T)`, `int(T)`, `bool(T)` with T a tensor) and every read of that local
/// in the function lies inside `tests`; otherwise `refused` names the read and its line.
ScalarReads scalar_reads(const Context& ctx, const syntax::Node& def, const std::vector<syntax::Node>& tests);

/// Why a test's rewrite would not remove its break, or "": the test calls an op whose output
/// shape depends on the data (`len(torch.unique_consecutive(x)) > 1`, T5's eos check; the
/// knowledge layer's dynamic_shape_op). Dynamo breaks at that op (GB0036, which GM401 reports),
/// and the test after it reads a Python int: a select or a check there removes nothing.
std::string dynamic_shape_in_test(const Context& ctx, const syntax::Node& test);

/// Adds the reads to a site: refused with their reason (the break, GB0124, is at the
/// read), or their edits joined to the site's fix.
void with_scalar_reads(Site& site, const ScalarReads& reads);

}  // namespace graphmend::rules
