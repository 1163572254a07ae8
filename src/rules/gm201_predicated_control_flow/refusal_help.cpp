// GM201: the help line of a refused site (see predicated_control_flow.hpp): what the user can
// change in the code so that the `if` becomes a select. Keyed by the refusal's wording; a
// reason not listed gets no help line.
#include <array>
#include <utility>

#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

// (words the reason holds, help). The first whose words the reason holds wins.
constexpr std::array<std::pair<std::string_view, std::string_view>, 29> kHelp{{
    {"would also run", "make the op safe for every value on both paths (clamp the index, guard the divisor with "
                       "torch.where), so that running the untaken branch cannot raise"},
    {"is None where", "give it a tensor on every path (a zero tensor of the same shape where it would be None)"},
    {"different kinds", "return or assign the same kind on every path: a tensor of one shape and dtype on each"},
    {"is set to a Python constant", "make the value a tensor on every path (`torch.tensor(False)`), or use it only in "
                                    "truth tests (`if flag:`)"},
    {"a branch returns while another falls through",
     "return on every path (an `else:` with the rest of the function), or on none"},
    {"stores into", "compute the new value in the branches and store it once after the `if`"},
    {"has an effect", "move the effect after the `if`, under a test of a Python value, or make it a message "
                      "(print, logging, warnings), which is deferred"},
    {"changes", "work on a fresh local (`y = x.clone()` before the `if`), or use the out-of-place op"},
    {"reads tensor data into Python", "keep the value a tensor inside the branch (no `.item()`, `int()`, `float()`)"},
    {"boolean mask", "use torch.where with the mask instead of indexing with it"},
    {"which is not pure", "call it before the `if` on every path, or make its code one graphmend can read "
                          "(a function of the project with no side effects)"},
    {"not known to be pure", "call it before the `if` on every path, or make its code one graphmend can read "
                             "(a function of the project with no side effects)"},
    {"may update state or draw random numbers", "call the submodule before the `if`, on every path"},
    {"draws random numbers", "draw the random numbers before the `if`, on every path"},
    {"no value before", "give the name a value before the `if`"},
    {"may have no value", "give the name a value before the `if`"},
    {"may be unbound", "give the name a value before the `if`"},
    {"a call of a parameter whose function is not known",
     "pass the function the same way at every call, or compute the test where it is used"},
    {"computed from tensor data", "keep the value a tensor up to the test (no `.item()` on the way)"},
    {"read out of tensor data", "keep the value a tensor up to the test (no `.item()` on the way)"},
    {"whose length is not static", "loop over a range whose length does not depend on tensor data"},
    {"trip count is not static", "loop over a range whose length does not depend on tensor data"},
    {"a cache that grows", "size the cache once for the longest input, outside the compiled function"},
    {"bitwise operator", "use a comparison or a logical op (`and`, `or`, `not`) on the value instead"},
    {"the original stores the branch's own tensor", "store a copy (`.clone()`) in the branch"},
    {"of the function around it, and a branch assigns", "pass the value to the helper as an argument"},
    {"the active mask cannot gate", "move the effect or the store after the loop"},
    {"the active mask does not gate", "move the effect or the store after the loop"},
    {"which the active mask", "move the effect or the store after the loop"},
}};

}  // namespace

std::string refusal_help(std::string_view reason) {
    for (const auto& [words, help] : kHelp) {
        if (reason.find(words) != std::string_view::npos) return std::string(help);
    }
    return "";
}

}  // namespace graphmend::rules::control_flow
