// Deferred message arguments: rewrites the parts of a message expression that would read
// a tensor's value where the call is made (an f-string, `%` or `.format` on a string, `+`
// joining a string with one of these,
// `.item()`, `.tolist()`, `str()` / `repr()` / `ascii()` / `float()` / `int()` / `bool()` /
// `format()`) into `_graphmend_lazy(OP, ...)` calls. Run eagerly, `_graphmend_lazy`
// returns exactly what the original expression gives; traced by Dynamo it returns a
// description that the runtime formats when the FX graph runs, with the values the
// tensors had at the call (src/runtime/deferred_effects.py).
//
// Only expressions in message position are rewritten: an argument of the deferred call
// and, recursively, the operands of a rewritten expression. Anything else is copied.
#pragma once

#include <optional>
#include <string>

#include "graphmend/syntax.hpp"

namespace graphmend::rules {

/// The rewritten text of a message expression, or nullopt when nothing in it needs
/// deferring. The result spans exactly as many '\n' as the original node's text.
std::optional<std::string> defer_message_expression(const syntax::Node& expr);

}  // namespace graphmend::rules
