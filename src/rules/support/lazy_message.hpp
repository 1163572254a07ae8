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
#include <vector>

#include "graphmend/syntax.hpp"

namespace graphmend::rules {

/// The rewritten text of a message expression, or nullopt when nothing in it needs
/// deferring. The result spans exactly as many '\n' as the original node's text.
std::optional<std::string> defer_message_expression(const syntax::Node& expr);

/// The expressions of a message argument whose values the runtime is handed when Dynamo
/// traces it: the argument itself, or, through the forms defer_message_expression rewrites
/// (and tuples and lists), the operands it defers (`x` of `f"{x}"` and `x.item()`), appended
/// to `out`. A tensor among them that requires grad makes the runtime make the original call.
void message_values(const syntax::Node& expr, std::vector<syntax::Node>& out);

}  // namespace graphmend::rules
