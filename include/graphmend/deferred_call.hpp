// The calls the deferred-side-effect rule (GM101) hands to graphmend's runtime, as other
// rules need them: GM201 defers such a call together with the data-dependent test of the
// `if` around it (`_graphmend_when(TEST, KIND, (LEADING,), lambda: _graphmend_args(ARGUMENTS))`).
#pragma once

#include <optional>
#include <string>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

struct DeferredCall {
    std::string kind;       // "print", "log" or "warn"
    std::string leading;    // the helper's leading arguments: `"logger", "warning", 30, "forward"`, `30`, or ""
    std::string arguments;  // the call's argument list without its parentheses, message arguments deferred
    std::string refused;    // why the call cannot be deferred ("" when it can)
};

/// The deferred form of `call` when it is a print / logging / warnings.warn site in the
/// compiled scope (see src/rules/deferred_side_effect.cpp), or nullopt when it is not
/// such a site. Its text keeps the call's newlines.
std::optional<DeferredCall> deferred_call(const Context& ctx, const syntax::Node& call);

}  // namespace graphmend::rules
