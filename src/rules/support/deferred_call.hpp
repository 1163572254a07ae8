// The calls the deferred-side-effect rule (GM101) hands to graphmend's runtime
// (print / logging / warnings.warn), as every rule sees them: GM101 rewrites them in place,
// GM201 defers such a call together with the data-dependent test of the `if` around it
// (`_graphmend_when(TEST, KIND, (LEADING,), lambda: _graphmend_args(ARGUMENTS))`), GM301
// and GM401 pass over them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

struct DeferredCall {
    std::string kind;       // "print", "log" or "warn"
    std::string leading;    // the helper's leading arguments: `"logger", "warning", 30, "forward"`, `30`, or ""
    /// The same for a helper call that takes the original call's place: the line is `lambda:
    /// None`, whose code the runtime reads it from (co_firstlineno), so that it stays right when
    /// lines above are added or removed, and copies of the code get the same text. The literal
    /// line where the call's line is not its first (`logger\n    .warning(...)`).
    std::string leading_in_place;
    /// The leading arguments with `lambda: None` for the line wherever the call sits, and the
    /// line (Python's: that of the call's last name) where a helper call written with them must
    /// sit for the lambda to give it (GM201's `_graphmend_when` lays its calls out so).
    std::string leading_marked;
    std::uint32_t line = 0;
    std::string arguments;  // the call's argument list without its parentheses, message arguments deferred
    std::string refused;    // why the call cannot be deferred ("" when it can)
    std::string detail;     // what was found or assumed of an imported logger ("" otherwise)
    std::vector<syntax::Node> positional;  // the call's positional arguments (its messages among them)
    /// message_condition of the call's arguments: "" or the condition under which the runtime
    /// defers the call (and its break is gone).
    std::string condition;
};

/// The condition (rules::Fix::condition) under which the runtime defers a message whose
/// arguments (positional ones and keyword values) are `arguments`: traced, a tensor it hands
/// the op that requires grad makes it make the original call instead (the text would lose
/// `grad_fn=`), which breaks as before (src/runtime/deferred_effects.py, describe()). "" when
/// no argument carries a tensor, as far as the value analysis sees.
std::string message_condition(const Context& ctx, const std::vector<syntax::Node>& arguments);

/// The arguments of `call` a deferred message carries: positional ones and keyword values.
std::vector<syntax::Node> message_arguments(const syntax::Node& call);

/// The deferred form of `call` when it is a print / logging / warnings.warn site in the
/// compiled scope (src/rules/support/deferred_call.cpp; the user doc of GM101 lists what
/// is refused), or nullopt when it is not such a call. Its text keeps the call's newlines.
std::optional<DeferredCall> deferred_call(const Context& ctx, const syntax::Node& call);

}  // namespace graphmend::rules
