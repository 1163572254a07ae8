// What ops compute, and whether they are pure: see include/graphmend/knowledge.hpp. Where each
// entry is defined (Where) is checked against torch 2.12.1 by tests/python/test_knowledge.py.
#include "table.hpp"

namespace graphmend::knowledge {

namespace {

struct ValueRead {
    std::string_view name;
    std::uint32_t where;
    bool python;  // the result is a Python value read from the data (not a tensor)
};

// Tensor methods whose result is computed from the tensor's values: the reductions, comparisons
// and arg-reductions give a tensor, which a test then reads (Dynamo: GB0170 "Data-dependent
// branching", torch 2.12.1); `item` (GB0124), `equal` and `allclose` give a Python value read
// from the data. Source: torch 2.12.1 (docs/source/torch.rst "Reduction Ops", "Comparison Ops";
// Tensor.item, Tensor.equal and Tensor.allclose return Python values). The value analysis and
// rules/support/tensor_test.cpp kept a list each: tensor_test's without allclose, argmax,
// argmin and logical_*, the analysis' without item and equal and with allclose taken for a
// tensor.
constexpr auto kValueReads = std::to_array<ValueRead>({
    {"abs", kTensor, false}, {"all", kTensor, false}, {"allclose", kTensor, true}, {"amax", kTensor, false},
    {"amin", kTensor, false}, {"any", kTensor, false}, {"argmax", kTensor, false}, {"argmin", kTensor, false},
    {"count_nonzero", kTensor, false}, {"eq", kTensor, false}, {"equal", kTensor, true}, {"ge", kTensor, false},
    {"gt", kTensor, false}, {"isfinite", kTensor, false}, {"isinf", kTensor, false}, {"isnan", kTensor, false},
    {"item", kTensor, true}, {"le", kTensor, false}, {"logical_and", kTensor, false},
    {"logical_not", kTensor, false}, {"logical_or", kTensor, false}, {"lt", kTensor, false},
    {"max", kTensor, false}, {"mean", kTensor, false}, {"min", kTensor, false}, {"ne", kTensor, false},
    {"norm", kTensor, false}, {"prod", kTensor, false}, {"std", kTensor, false}, {"sum", kTensor, false},
    {"var", kTensor, false},
});
static_assert(detail::sorted(kValueReads));

// Ops that return a tuple (or list) of tensors: the splits, unbind, meshgrid and
// broadcast_tensors. Source: torch 2.12.1 (docs/source/torch.rst "Indexing, Slicing, Joining,
// Mutating Ops"). The value analysis listed these in two `||` chains, the methods without
// split_with_sizes, both without hsplit, vsplit and dsplit.
constexpr auto kTensorSequences = std::to_array<Name>({
    {"broadcast_tensors", kTorch}, {"chunk", kTorch | kTensor}, {"dsplit", kTorch | kTensor},
    {"hsplit", kTorch | kTensor}, {"meshgrid", kTorch}, {"split", kTorch | kTensor},
    {"split_with_sizes", kTorch | kTensor}, {"tensor_split", kTorch | kTensor}, {"unbind", kTorch | kTensor},
    {"vsplit", kTorch | kTensor},
});
static_assert(detail::sorted(kTensorSequences));

// Tensor methods, and the torch functions of those names, that give a boolean tensor. Source:
// torch 2.12.1 (docs/source/torch.rst, "Comparison Ops", "Pointwise Ops": logical_*, isnan, ...).
constexpr auto kBooleanResults = std::to_array<Name>({
    {"all", kTorch | kTensor}, {"any", kTorch | kTensor}, {"bool", kTorch | kTensor},
    {"eq", kTorch | kTensor}, {"ge", kTorch | kTensor}, {"greater", kTorch | kTensor},
    {"greater_equal", kTorch | kTensor}, {"gt", kTorch | kTensor}, {"isfinite", kTorch | kTensor},
    {"isin", kTorch}, {"isinf", kTorch | kTensor}, {"isnan", kTorch | kTensor},
    {"isneginf", kTorch | kTensor}, {"isposinf", kTorch | kTensor}, {"le", kTorch | kTensor},
    {"less", kTorch | kTensor}, {"less_equal", kTorch | kTensor}, {"logical_and", kTorch | kTensor},
    {"logical_not", kTorch | kTensor}, {"logical_or", kTorch | kTensor}, {"logical_xor", kTorch | kTensor},
    {"lt", kTorch | kTensor}, {"ne", kTorch | kTensor}, {"not_equal", kTorch | kTensor},
});
static_assert(detail::sorted(kBooleanResults));

// Tensor methods that return a Python number (or a tuple of them), not a tensor. Source: torch
// 2.12.1 (docs/source/tensors.rst).
constexpr auto kNumberMethods = std::to_array<Name>({
    {"__len__", kTensor}, {"data_ptr", kTensor}, {"dim", kTensor}, {"element_size", kTensor},
    {"get_device", kTensor}, {"ndimension", kTensor}, {"nelement", kTensor}, {"numel", kTensor},
    {"storage_offset", kTensor}, {"stride", kTensor},
});
static_assert(detail::sorted(kNumberMethods));

// torch.NAME that returns no tensor: dtypes' info, devices, classes, grad modes, the compiler.
// Source: torch 2.12.1 (docs/source/torch.rst, docs/source/type_info.rst).
constexpr auto kPythonValuedTorch = std::to_array<Name>({
    {"Generator", kTorch}, {"Size", kTorch}, {"autocast", kTorch}, {"can_cast", kTorch}, {"compile", kTorch},
    {"device", kTorch}, {"dtype", kTorch}, {"enable_grad", kTorch}, {"finfo", kTorch},
    {"get_default_dtype", kTorch}, {"iinfo", kTorch}, {"inference_mode", kTorch}, {"no_grad", kTorch},
    {"numel", kTorch}, {"promote_types", kTorch}, {"result_type", kTorch}, {"set_grad_enabled", kTorch},
    {"typename", kTorch},
});
static_assert(detail::sorted(kPythonValuedTorch));

// Namespaces whose functions return tensors. Source: torch 2.12.1 (docs/source/torch.rst,
// nn.functional.rst, linalg.rst, fft.rst, special.rst).
constexpr auto kTensorNamespaces = std::to_array<Name>({
    {"torch", kDotted}, {"torch.Tensor", kDotted}, {"torch.fft", kDotted}, {"torch.linalg", kDotted},
    {"torch.nn.functional", kDotted}, {"torch.special", kDotted},
});
static_assert(detail::sorted(kTensorNamespaces));

// How a pointwise op treats dtypes: keeps its operands' (math, activations, clamps; no dtype is
// known, and math is taken to keep the floating-point dtype of model code), or converts to
// another (`to`, `float`, ...).
enum class Pointwise { Keeps, Converts };

struct PointwiseOp {
    std::string_view name;
    std::uint32_t where;
    Pointwise dtype;
    bool binary;  // its tensor arguments broadcast with the first (docs/source/notes/broadcasting.rst)
};

// Ops that work element by element: each element of the result from the elements at the same
// place (after broadcasting), as Tensor methods, torch functions or torch.nn.functional
// functions. Source: torch 2.12.1 (docs/source/torch.rst "Pointwise Ops"; nn.functional.rst
// "Non-linear activation functions"; Tensor.to and the dtype conversions; contiguous, clone and
// detach, which keep every element). rules/support/rowwise.cpp (rows stay rows), GM201 (a
// branch value keeps its source's layout) and row_layout (broadcast operands) kept five lists
// of this fact, each without some of the others' ops: rowwise's methods without clip,
// logical_not, bitwise_not, maximum, minimum; its functions without the rounding ops, clamps,
// masked_fill, nan_to_num, exp2, expm1, reciprocal; GM201's methods without log1p, expm1,
// maximum, minimum; its torch functions without cos, sin, log1p, expm1, exp2, reciprocal,
// celu, selu.
constexpr auto kPointwise = std::to_array<PointwiseOp>({
    {"abs", kTorch | kTensor, Pointwise::Keeps, false},
    {"add", kTorch | kTensor, Pointwise::Keeps, true},
    {"bfloat16", kTensor, Pointwise::Converts, false},
    {"bitwise_not", kTorch | kTensor, Pointwise::Keeps, false},
    {"bool", kTensor, Pointwise::Converts, false},
    {"ceil", kTorch | kTensor, Pointwise::Keeps, false},
    {"celu", kTorch | kFunctional, Pointwise::Keeps, false},
    {"clamp", kTorch | kTensor, Pointwise::Keeps, true},
    {"clamp_max", kTorch | kTensor, Pointwise::Keeps, true},
    {"clamp_min", kTorch | kTensor, Pointwise::Keeps, true},
    {"clip", kTorch | kTensor, Pointwise::Keeps, false},
    {"clone", kTorch | kTensor, Pointwise::Keeps, false},
    {"contiguous", kTensor, Pointwise::Keeps, false},
    {"cos", kTorch | kTensor, Pointwise::Keeps, false},
    {"detach", kTorch | kTensor, Pointwise::Keeps, false},
    {"div", kTorch | kTensor, Pointwise::Keeps, true},
    {"double", kTensor, Pointwise::Converts, false},
    {"elu", kFunctional, Pointwise::Keeps, false},
    {"erf", kTorch | kTensor, Pointwise::Keeps, false},
    {"exp", kTorch | kTensor, Pointwise::Keeps, false},
    {"exp2", kTorch | kTensor, Pointwise::Keeps, false},
    {"expm1", kTorch | kTensor, Pointwise::Keeps, false},
    {"float", kTensor, Pointwise::Converts, false},
    {"floor", kTorch | kTensor, Pointwise::Keeps, false},
    {"fmax", kTorch | kTensor, Pointwise::Keeps, true},
    {"fmin", kTorch | kTensor, Pointwise::Keeps, true},
    {"gelu", kFunctional, Pointwise::Keeps, false},
    {"half", kTensor, Pointwise::Converts, false},
    {"hardsigmoid", kFunctional, Pointwise::Keeps, false},
    {"hardswish", kFunctional, Pointwise::Keeps, false},
    {"hardtanh", kFunctional, Pointwise::Keeps, false},
    {"int", kTensor, Pointwise::Converts, false},
    {"leaky_relu", kFunctional, Pointwise::Keeps, false},
    {"log", kTorch | kTensor, Pointwise::Keeps, false},
    {"log1p", kTorch | kTensor, Pointwise::Keeps, false},
    {"logical_not", kTorch | kTensor, Pointwise::Keeps, false},
    {"logsigmoid", kFunctional, Pointwise::Keeps, false},
    {"long", kTensor, Pointwise::Converts, false},
    {"masked_fill", kTorch | kTensor, Pointwise::Keeps, true},
    {"maximum", kTorch | kTensor, Pointwise::Keeps, true},
    {"minimum", kTorch | kTensor, Pointwise::Keeps, true},
    {"mish", kFunctional, Pointwise::Keeps, false},
    {"mul", kTorch | kTensor, Pointwise::Keeps, true},
    {"nan_to_num", kTorch | kTensor, Pointwise::Keeps, false},
    {"neg", kTorch | kTensor, Pointwise::Keeps, false},
    {"pow", kTorch | kTensor, Pointwise::Keeps, true},
    {"reciprocal", kTorch | kTensor, Pointwise::Keeps, false},
    {"relu", kTorch | kTensor | kFunctional, Pointwise::Keeps, false},
    {"relu6", kFunctional, Pointwise::Keeps, false},
    {"round", kTorch | kTensor, Pointwise::Keeps, false},
    {"rsqrt", kTorch | kTensor, Pointwise::Keeps, false},
    {"selu", kTorch | kFunctional, Pointwise::Keeps, false},
    {"sigmoid", kTorch | kTensor | kFunctional, Pointwise::Keeps, false},
    {"sign", kTorch | kTensor, Pointwise::Keeps, false},
    {"silu", kFunctional, Pointwise::Keeps, false},
    {"sin", kTorch | kTensor, Pointwise::Keeps, false},
    {"softplus", kFunctional, Pointwise::Keeps, false},
    {"sqrt", kTorch | kTensor, Pointwise::Keeps, false},
    {"square", kTorch | kTensor, Pointwise::Keeps, false},
    {"sub", kTorch | kTensor, Pointwise::Keeps, true},
    {"tanh", kTorch | kTensor | kFunctional, Pointwise::Keeps, false},
    {"to", kTensor, Pointwise::Converts, false},
    {"trunc", kTorch | kTensor, Pointwise::Keeps, false},
    {"type", kTensor, Pointwise::Converts, false},
    {"type_as", kTensor, Pointwise::Converts, false},
});
static_assert(detail::sorted(kPointwise));

// Ops along a dimension that keep the layout (shape, dtype, device) of their input: softmax,
// cumulative sums, triangles, flips and rolls. Source: torch 2.12.1 (docs/source/torch.rst).
constexpr auto kAlongDimension = std::to_array<Name>({
    {"cumprod", kTorch | kTensor},
    {"cumsum", kTorch | kTensor},
    {"flip", kTorch | kTensor},
    {"log_softmax", kTorch | kTensor},
    {"roll", kTorch | kTensor},
    {"softmax", kTorch | kTensor},
    {"tril", kTorch | kTensor},
    {"triu", kTorch | kTensor},
});
static_assert(detail::sorted(kAlongDimension));

const PointwiseOp* pointwise(std::string_view name) {
    return detail::find(std::span<const PointwiseOp>(kPointwise), name);
}

bool along_dimension(std::string_view name, std::uint32_t where) {
    const Name* op = detail::find(std::span<const Name>(kAlongDimension), name);
    return op != nullptr && (op->where & where) != 0;
}

// Tensor methods and torch functions known to be pure (no state, no I/O, no randomness), besides
// the pointwise ops, the ops along a dimension, the comparisons and the reductions above, which
// pure_op counts too: shapes and views, factories that fill their values, matrix products,
// torch.nn.functional's layers, finfo and iinfo. Source: torch 2.12.1 (docs/source/torch.rst;
// the random sampling ops and `empty` are apart, below). GM201's list held many of the ops
// above, and not all: erf, exp2, trunc, bitwise_not, fmax, fmin, celu, selu, relu6,
// hardswish, hardsigmoid, logsigmoid, cumprod, flip, roll, count_nonzero and the comparisons
// by their long names (greater, less_equal, not_equal, ...), isin, isneginf, isposinf,
// logical_xor; and it listed `clamp_`, in place (and refused as such before the list is asked).
constexpr auto kPureOps = std::to_array<Name>({
    {"absolute", kTensor}, {"addmm", kTensor}, {"arange", kTorch}, {"as_tensor", kTorch}, {"bmm", kTensor},
    {"cat", kTorch}, {"chunk", kTensor}, {"conv1d", kTorch}, {"conv2d", kTorch}, {"conv3d", kTorch},
    {"cosine_similarity", kTorch}, {"dim", kTensor}, {"einsum", kTorch}, {"embedding", kTorch},
    {"expand", kTensor}, {"expand_as", kTensor}, {"finfo", kTorch}, {"flatten", kTensor}, {"full", kTorch},
    {"full_like", kTorch}, {"gather", kTensor}, {"group_norm", kTorch}, {"iinfo", kTorch},
    {"index_select", kTensor}, {"isclose", kTensor}, {"item", kTensor}, {"layer_norm", kTorch},
    {"linear", kFunctional}, {"log2", kTensor}, {"matmul", kTensor}, {"mm", kTensor}, {"narrow", kTensor},
    {"new_full", kTensor}, {"new_ones", kTensor}, {"new_zeros", kTensor}, {"normalize", kFunctional},
    {"numel", kTensor}, {"ones", kTorch}, {"ones_like", kTorch}, {"pad", kFunctional}, {"permute", kTensor},
    {"repeat", kTensor}, {"reshape", kTensor}, {"reshape_as", kTensor}, {"rms_norm", kTorch},
    {"select", kTensor}, {"size", kTensor}, {"split", kTensor}, {"squeeze", kTensor}, {"stack", kTorch},
    {"t", kTensor}, {"tensor", kTorch}, {"transpose", kTensor}, {"true_divide", kTensor},
    {"unflatten", kTensor}, {"unsqueeze", kTensor}, {"view", kTensor}, {"view_as", kTensor},
    {"where", kTensor}, {"zeros", kTorch}, {"zeros_like", kTorch},
});
static_assert(detail::sorted(kPureOps));

// Calls that draw random numbers (a rewrite that runs them more often, or on other shapes, shifts
// the random stream): torch 2.12.1's "Random sampling" and "In-place random sampling"
// (docs/source/torch.rst), and the dropouts and rrelu of torch.nn.functional (random in
// training). GM201's list and rules/support/rowwise.cpp's were two (rowwise's without the
// dropouts but F.dropout, and rrelu; GM201's without the in-place samplers, which it refuses as
// in-place calls anyway).
constexpr auto kRandomOps = std::to_array<Name>({
    {"alpha_dropout", kTorch | kFunctional}, {"bernoulli", kTorch}, {"bernoulli_", kTensor},
    {"cauchy_", kTensor}, {"dropout", kTorch | kFunctional}, {"dropout1d", kFunctional},
    {"dropout2d", kFunctional}, {"dropout3d", kFunctional}, {"exponential_", kTensor},
    {"feature_alpha_dropout", kTorch | kFunctional}, {"geometric_", kTensor}, {"log_normal_", kTensor},
    {"multinomial", kTorch}, {"normal", kTorch}, {"normal_", kTensor}, {"poisson", kTorch}, {"rand", kTorch},
    {"rand_like", kTorch}, {"randint", kTorch}, {"randint_like", kTorch}, {"randn", kTorch},
    {"randn_like", kTorch}, {"random_", kTensor}, {"randperm", kTorch}, {"rrelu", kTorch | kFunctional},
    {"uniform_", kTensor},
});
static_assert(detail::sorted(kRandomOps));

// torch functions that touch global state (the random seed, files) or whose values are whatever
// the memory held (`empty`): impure besides the random ones (GM201). Source: torch 2.12.1
// (docs/source/torch.rst "Generators", "Serialization", "Creation Ops").
constexpr auto kGlobalState = std::to_array<Name>({
    {"empty", kTorch}, {"empty_like", kTorch}, {"load", kTorch}, {"manual_seed", kTorch}, {"save", kTorch},
    {"seed", kTorch},
});
static_assert(detail::sorted(kGlobalState));

// Operations whose gradient can be inf/NaN where their value is finite or unused (a select's
// gradient flows through the branch it did not take): the derivatives in torch 2.12.1's
// tools/autograd/derivatives.yaml (1/x, 1/sqrt(x), log's 1/x, pow's x^(y-1), ...).
constexpr auto kGradUnsafe = std::to_array<Name>({
    {"acos", kTensor}, {"asin", kTensor}, {"atan2", kTensor}, {"atanh", kTensor}, {"digamma", kTensor},
    {"div", kTensor}, {"exp", kTensor}, {"expm1", kTensor}, {"lgamma", kTensor}, {"log", kTensor},
    {"log10", kTensor}, {"log1p", kTensor}, {"log2", kTensor}, {"norm", kTensor}, {"normalize", kFunctional},
    {"pow", kTensor}, {"reciprocal", kTensor}, {"rsqrt", kTensor}, {"sqrt", kTensor}, {"std", kTensor},
    {"tan", kTensor}, {"true_divide", kTensor}, {"var", kTensor},
});
static_assert(detail::sorted(kGradUnsafe));

}  // namespace

bool reads_values(std::string_view name) { return detail::listed(kValueReads, name); }

bool value_reduction(std::string_view name) {
    const ValueRead* entry = detail::find(std::span<const ValueRead>(kValueReads), name);
    return entry != nullptr && !entry->python;
}
bool tensor_sequence(std::string_view name, std::uint32_t where) {
    const Name* op = detail::find(std::span<const Name>(kTensorSequences), name);
    return op != nullptr && (op->where & where) != 0;
}

bool boolean_result(std::string_view name) { return detail::listed(kBooleanResults, name); }
bool number_method(std::string_view name) { return detail::listed(kNumberMethods, name); }
bool python_valued_torch(std::string_view name) { return detail::listed(kPythonValuedTorch, name); }
bool tensor_namespace(std::string_view dotted) { return detail::listed(kTensorNamespaces, dotted); }
bool elementwise_method(std::string_view name) {
    const PointwiseOp* op = pointwise(name);
    return op != nullptr && (op->where & kTensor) != 0;
}

bool elementwise_function(std::string_view name) {
    const PointwiseOp* op = pointwise(name);
    return op != nullptr && (op->where & (kTorch | kFunctional)) != 0;
}

bool broadcast_method(std::string_view name) {
    const PointwiseOp* op = pointwise(name);
    return op != nullptr && op->binary && (op->where & kTensor) != 0;
}

bool same_layout_method(std::string_view name) {
    const PointwiseOp* op = pointwise(name);
    if (op != nullptr) return op->dtype == Pointwise::Keeps && (op->where & kTensor) != 0;
    return along_dimension(name, kTensor);
}

bool same_layout_function(std::string_view name) {
    const PointwiseOp* op = pointwise(name);
    if (op != nullptr) return op->dtype == Pointwise::Keeps && (op->where & kTorch) != 0;
    return along_dimension(name, kTorch);
}

bool pure_op(std::string_view name) {
    return detail::listed(kPureOps, name) || pointwise(name) != nullptr || along_dimension(name, kTorch | kTensor) ||
           boolean_result(name) || value_reduction(name);
}
bool impure_torch(std::string_view name) { return random_op(name) || detail::listed(kGlobalState, name); }
bool random_op(std::string_view name) { return detail::listed(kRandomOps, name); }
bool grad_unsafe(std::string_view name) { return detail::listed(kGradUnsafe, name); }

// torch's in-place ops end in an underscore (docs/source/tensors.rst: "methods which mutate a
// tensor are marked with an underscore suffix"), Python's special methods in two.
bool in_place(std::string_view name) { return name.ends_with('_') && !name.starts_with("__"); }
// Source: torch 2.12.1 docs/source/tensors.rst (Tensor.set_: "the tensor shares the storage").
bool keeps_argument(std::string_view name) { return name == "set_"; }

namespace detail {

void add_tensor_tables(std::vector<Table>& out) {
    out.push_back(table("value_reads", "torch 2.12.1 reductions, comparisons, item, equal, allclose", kValueReads));
    out.push_back(table("tensor_sequences", "torch 2.12.1 docs/source/torch.rst", kTensorSequences));
    out.push_back(table("boolean_results", "torch 2.12.1 docs/source/torch.rst, comparison ops", kBooleanResults));
    out.push_back(table("number_methods", "torch 2.12.1 docs/source/tensors.rst", kNumberMethods));
    out.push_back(table("python_valued_torch", "torch 2.12.1 docs/source/torch.rst, type_info.rst",
                        kPythonValuedTorch));
    out.push_back(table("tensor_namespaces", "torch 2.12.1 docs", kTensorNamespaces));
    out.push_back(table("pointwise", "torch 2.12.1 pointwise ops, activations, conversions", kPointwise));
    out.push_back(table("along_dimension", "torch 2.12.1 docs/source/torch.rst", kAlongDimension));
    out.push_back(table("pure_ops", "torch 2.12.1 docs/source/torch.rst", kPureOps));
    out.push_back(table("random_ops", "torch 2.12.1 random sampling, in-place random sampling, dropouts, rrelu",
                        kRandomOps));
    out.push_back(table("global_state", "torch 2.12.1 generators, serialization, empty", kGlobalState));
    out.push_back(table("grad_unsafe", "torch 2.12.1 tools/autograd/derivatives.yaml", kGradUnsafe));
}

}  // namespace detail

}  // namespace graphmend::knowledge
