// The runtime call that keeps a data-dependent check in the FX graph and still raises:
//     raise E(ARGS)    under test PRED   ->
//     _graphmend_check(PRED, E, lambda: _graphmend_args(ARGS))
// (src/runtime/deferred_effects.py; GB0170 at torch 2.12). Shared by the
// predicated-validation rule (GM301) and by predicated-control-flow (GM201), which keeps a
// check inside a branch it turns into a select, gated by the branch's test.
#pragma once

#include <string>
#include <string_view>

#include "graphmend/syntax.hpp"

namespace graphmend::rules {

struct CheckCall {
    std::string arguments;  // what follows the test: `, E, lambda: _graphmend_args(ARGS))`
    std::string refused;    // why the raise cannot be carried through the graph

    /// The _graphmend_check(...) call raising when `pred` (Python text of a test) holds;
    /// only when `refused` is empty.
    [[nodiscard]] std::string text(std::string_view pred) const;
};

/// `raise_stmt` (a raise_statement) as a check, under a test given later (CheckCall::text).
/// Refused: a bare `raise`, `raise ... from CAUSE` other than None, raising an object
/// rather than calling an exception class.
CheckCall check_call(const syntax::Node& raise_stmt);

}  // namespace graphmend::rules
