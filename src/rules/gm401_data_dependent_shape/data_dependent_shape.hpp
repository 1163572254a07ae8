// GM401 data-dependent-shape, private to src/rules/gm401_data_dependent_shape/ (the rule's
// description: rule.cpp). What a site's surroundings show, from its syntax:
//   site_context.cpp  in a data test or a deferred message; what a local feeds (sizes, slice
//                     bounds, loop bounds); parameters and bindings of a function
//   dynamo_reads.cpp  reads of tensor data only Dynamo's evidence shows (verify's --data-operator)
//   rule.cpp          the rule: the sites, each refused with what it feeds
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules::data_dependent_shape {

using syntax::Node;

// --- dynamo_reads.cpp: on a line where Dynamo met a data-dependent operator in the original
// run (SourceFile::data_operators: GB0033, passed by `graphmend verify`), constructs the
// analysis cannot show to read one. Each answers the refusal's reason and its help line, or
// nullopt.
/// `X[I]` with one index `I` that is no literal: Python reads I through Tensor.__index__
/// (PNDM's `self.alphas_cumprod[timestep]` with a 0-d tensor or NumPy timestep).
std::optional<std::pair<std::string, std::string>> dynamo_index_read(const Context& ctx, const Node& subscript);
/// Builtin `min(...)` / `max(...)` with an argument that may be a tensor (torchvision's
/// `max(box[0], 0)`): the comparison reads tensor values into Python.
std::optional<std::pair<std::string, std::string>> dynamo_builtin_compare(const Context& ctx, const Node& call);

// The help line of a GB0033 read Dynamo's settings do not remove: with capture_scalar_outputs a
// one-element mask still breaks and `narrow` with a tensor start makes Dynamo raise
// (InternalTorchDynamoError); measured, torch 2.12.1 (benchmarks/dynamo_settings.py).
inline constexpr const char* kNoSettingIndex =
    "no Dynamo setting removes it (measured, torch 2.12.1): a value known without the data, or a tensor op "
    "(`torch.where`, `index_select`) in place of the read, would";

// The innermost function_definition around `n` (lambdas skipped), or invalid.
Node function_of(const Node& n);

// True when `n` lies in the test of an if / elif / assert / conditional expression whose
// test reads data: the predicate rules own it (they rewrite `.item()` there, or refuse).
bool in_data_test(const Context& ctx, const Node& n);

// True when `n` is an argument of a print / logging / warnings call that the
// deferred-side-effect rule hands to the runtime (which defers `.item()` there).
bool in_message(const Context& ctx, const Node& n);

// True when `name` is a parameter of function `def`.
bool is_parameter(const Node& def, std::string_view name);

// True when `expr` is arithmetic on a parameter of a `forward` written with neither
// annotation nor default, directly or through the locals assigned such arithmetic
// (`start = (2 * seq_len - 1) // 2`): the value analysis takes such a parameter for a tensor
// when it finds no caller (a submodule called through an attribute bound to one of several
// classes), which is no evidence that a slice bound made of it is one (swin2sr's
// `height * self.upscale`, Mega's `seq_len`). A parameter read through an attribute, an item
// or a call (`x.shape[1]`, `ids[i]`) does not count.
bool arithmetic_on_bare_forward_parameter(const Node& def, const Node& expr, int depth = 0);

// Calls f(identifier) for each name an assignment target binds: the target itself, or the
// items of a tuple / list pattern. `y[a] = v` and `y.a = v` bind no name (`a` is read there).
template <typename F>
void each_bound_name(const Node& target, F&& f) {
    syntax::walk(target, [&](const Node& t) {
        if (t.is("subscript") || t.is("attribute")) return false;
        if (t.is("identifier")) f(t);
        return true;
    });
}

// True when `name` is bound anywhere in the body of `def` (not counting nested functions).
bool assigned_in_body(const Node& def, std::string_view name);

// The local a value is assigned to (`NAME = <n>`), or "".
std::string assigned_local(const Node& n);

// What the local `name` (and locals computed from it) feeds in `def`: shape arguments,
// slice bounds, loop bounds. Empty when nothing shows. The function's Flows are remembered
// (analysis::FunctionMemo): a function with many sites is walked once.
std::vector<std::string> feeds(const Node& def, const std::string& name);

}  // namespace graphmend::rules::data_dependent_shape
