// Sizes, data-dependent shapes, views and fresh tensors: see include/graphmend/knowledge.hpp.
// Where each entry is defined (Where) is checked against torch 2.12.1 by
// tests/python/test_knowledge.py; what an entry says of its op, by the tests its comment names.
#include "table.hpp"

namespace graphmend::knowledge {

namespace {

// torch factories whose arguments are sizes, and F.one_hot's class count. Source: their
// signatures in torch 2.12.1 (aten/src/ATen/native/native_functions.yaml: `SymInt[] size`,
// `Scalar start, Scalar end`, `int steps`, `SymInt n`, randint's `SymInt low, SymInt high`);
// measured with Dynamo (torch 2.12.1): a 0-d tensor in any of these places is read into Python
// ("Data dependent operator"), while linspace's and logspace's start and end, and full's fill
// value, are traced (tests/fixtures/data-dependent-shape/fill_values.py and size_factories.py,
// run by tests/python/test_report_words.py).
constexpr auto kSizeArguments = std::to_array<SizeArguments>({
    {"arange", kTorch, -1, ""},
    {"empty", kTorch, -1, ""},
    {"eye", kTorch, -1, ""},
    {"full", kTorch, 0, "size"},
    {"linspace", kTorch, 2, "steps"},
    {"logspace", kTorch, 2, "steps"},
    {"one_hot", kFunctional, 1, "num_classes"},
    {"ones", kTorch, -1, ""},
    {"rand", kTorch, -1, ""},
    {"randint", kTorch, -1, ""},
    {"randn", kTorch, -1, ""},
    {"randperm", kTorch, -1, ""},
    {"zeros", kTorch, -1, ""},
});
static_assert(detail::sorted(kSizeArguments));

// Tensor methods whose arguments are sizes. Source: native_functions.yaml, torch 2.12.1
// (`SymInt[] size`, `SymInt[] split_sizes`, `SymInt start, SymInt length`, ...).
constexpr auto kSizeMethods = std::to_array<Name>({
    {"chunk", kTensor}, {"expand", kTensor}, {"narrow", kTensor}, {"new_empty", kTensor},
    {"new_full", kTensor}, {"new_ones", kTensor}, {"new_zeros", kTensor}, {"repeat", kTensor},
    {"reshape", kTensor}, {"split", kTensor}, {"split_with_sizes", kTensor}, {"tensor_split", kTensor},
    {"unflatten", kTensor}, {"view", kTensor},
});
static_assert(detail::sorted(kSizeMethods));

// More calls whose arguments are sizes or shapes (GM401's report of what a read feeds): F.pad's
// pad widths, F.interpolate's size, repeat_interleave's repeats, topk's k. Source: their
// signatures, torch 2.12.1.
constexpr auto kMoreShapeCalls = std::to_array<Name>({
    {"interpolate", kFunctional}, {"pad", kFunctional}, {"repeat_interleave", kTorch | kTensor},
    {"topk", kTorch | kTensor},
});
static_assert(detail::sorted(kMoreShapeCalls));

// Data-dependent output shapes. Source: Dynamo, torch 2.12.1: GB0036 "Dynamic shape operator"
// (raised when a fake tensor kernel has no static output shape: aten.nonzero, aten.unique*,
// aten.masked_select, aten.argwhere, aten.bincount; tests/python/test_break_ids.py and
// test_report_words.py).
constexpr auto kDynamicShapeOps = std::to_array<Name>({
    {"argwhere", kTorch | kTensor}, {"bincount", kTorch | kTensor}, {"masked_select", kTorch | kTensor},
    {"nonzero", kTorch | kTensor}, {"unique", kTorch | kTensor}, {"unique_consecutive", kTorch | kTensor},
});
static_assert(detail::sorted(kDynamicShapeOps));

// Methods whose result may share the storage of their receiver, for GM503's int64 tensor built
// from a list: views (docs/source/tensor_view.rst, torch 2.12.1), `numpy`, `data_ptr` and the
// storage accessors, and the conversions that return the tensor itself when it already is what
// is asked (`to`, `long`, `contiguous`, `cpu`, `cuda`, ...).
constexpr auto kViewMethods = std::to_array<Name>({
    {"as_strided", kTensor}, {"chunk", kTensor}, {"contiguous", kTensor}, {"cpu", kTensor}, {"cuda", kTensor},
    {"data_ptr", kTensor}, {"detach", kTensor}, {"diagonal", kTensor}, {"expand", kTensor},
    {"expand_as", kTensor}, {"flatten", kTensor}, {"int", kTensor}, {"long", kTensor}, {"movedim", kTensor},
    {"narrow", kTensor}, {"numpy", kTensor}, {"permute", kTensor}, {"reshape", kTensor},
    {"reshape_as", kTensor}, {"select", kTensor}, {"split", kTensor}, {"squeeze", kTensor},
    {"storage", kTensor}, {"swapaxes", kTensor}, {"swapdims", kTensor}, {"t", kTensor},
    {"tensor_split", kTensor}, {"to", kTensor}, {"transpose", kTensor}, {"type", kTensor},
    {"unbind", kTensor}, {"unflatten", kTensor}, {"unsqueeze", kTensor}, {"untyped_storage", kTensor},
    {"view", kTensor}, {"view_as", kTensor},
});
static_assert(detail::sorted(kViewMethods));

// Tensor attributes that are views of it. Source: docs/source/tensor_view.rst, torch 2.12.1.
constexpr auto kViewAttributes = std::to_array<Name>({
    {"H", kTensor}, {"T", kTensor}, {"data", kTensor}, {"imag", kTensor}, {"mH", kTensor}, {"mT", kTensor},
    {"real", kTensor},
});
static_assert(detail::sorted(kViewAttributes));

// Methods whose result may be the receiver itself or a view of it, whatever its dtype (GM201):
// views (docs/source/tensor_view.rst), the conversions that return self when nothing changes
// (`Tensor.to`, `.float()`, `.contiguous()`, ... in torch 2.12.1), `.detach()`, and the
// named-tensor and sparse methods that return self.
constexpr auto kMayAlias = std::to_array<Name>({
    {"align_as", kTensor}, {"as_strided", kTensor}, {"bfloat16", kTensor}, {"bool", kTensor}, {"byte", kTensor},
    {"char", kTensor}, {"chunk", kTensor}, {"coalesce", kTensor}, {"contiguous", kTensor}, {"cpu", kTensor},
    {"cuda", kTensor}, {"detach", kTensor}, {"diagonal", kTensor}, {"double", kTensor}, {"expand", kTensor},
    {"expand_as", kTensor}, {"flatten", kTensor}, {"float", kTensor}, {"half", kTensor}, {"hsplit", kTensor},
    {"imag", kTensor}, {"int", kTensor}, {"long", kTensor}, {"moveaxis", kTensor}, {"movedim", kTensor},
    {"narrow", kTensor}, {"permute", kTensor}, {"pin_memory", kTensor}, {"real", kTensor},
    {"refine_names", kTensor}, {"rename", kTensor}, {"requires_grad_", kTensor}, {"reshape", kTensor},
    {"reshape_as", kTensor}, {"select", kTensor}, {"short", kTensor}, {"split", kTensor}, {"squeeze", kTensor},
    {"swapaxes", kTensor}, {"swapdims", kTensor}, {"t", kTensor}, {"tensor_split", kTensor}, {"to", kTensor},
    {"transpose", kTensor}, {"type", kTensor}, {"type_as", kTensor}, {"unbind", kTensor}, {"unflatten", kTensor},
    {"unfold", kTensor}, {"unsqueeze", kTensor}, {"view", kTensor}, {"view_as", kTensor},
    {"view_as_complex", kTorch}, {"view_as_real", kTorch}, {"vsplit", kTensor},
});
static_assert(detail::sorted(kMayAlias));

// Calls that make a new tensor with storage of its own: torch 2.12.1's factories (`torch.zeros`,
// `torch.arange`, `torch.eye`, the `*_like` ones), `clone` (a function and a method), and the
// Tensor methods `new_*` and `repeat` (which copies the tensor's data, unlike `expand`). Asked by
// attribute name (GM201: a fresh local only a `copy_` writes), by dotted torch function and by
// Tensor method (GM504: a buffer the loop fills is allocated in the function). GM201's list and
// GM504's were two (without arange, eye and repeat, and without torch.clone).
constexpr auto kFreshTensors = std::to_array<Name>({
    {"arange", kTorch}, {"clone", kTorch | kTensor}, {"empty", kTorch}, {"empty_like", kTorch}, {"eye", kTorch},
    {"full", kTorch}, {"full_like", kTorch}, {"new_empty", kTensor}, {"new_full", kTensor},
    {"new_ones", kTensor}, {"new_zeros", kTensor}, {"ones", kTorch}, {"ones_like", kTorch},
    {"repeat", kTensor}, {"zeros", kTorch}, {"zeros_like", kTorch},
});
static_assert(detail::sorted(kFreshTensors));

}  // namespace

const SizeArguments* size_arguments(std::string_view name) {
    return detail::find(std::span<const SizeArguments>(kSizeArguments), name);
}

bool size_factory(std::string_view name) {
    const SizeArguments* entry = size_arguments(name);
    return entry != nullptr && (entry->where & kTorch) != 0;
}

bool size_method(std::string_view name) { return detail::listed(kSizeMethods, name); }

bool dynamic_shape_op(std::string_view name) { return detail::listed(kDynamicShapeOps, name); }

bool shape_call(std::string_view name) {
    return size_arguments(name) != nullptr || size_method(name) || detail::listed(kMoreShapeCalls, name);
}

bool view_method(std::string_view name) { return detail::listed(kViewMethods, name); }
bool view_attribute(std::string_view name) { return detail::listed(kViewAttributes, name); }
bool may_alias(std::string_view name) { return detail::listed(kMayAlias, name); }
bool fresh_tensor(std::string_view name) { return detail::listed(kFreshTensors, name); }

bool allocating_function(std::string_view dotted) {
    if (!dotted.starts_with("torch.")) return false;
    const Name* entry = detail::find(std::span<const Name>(kFreshTensors), dotted.substr(6));
    return entry != nullptr && (entry->where & kTorch) != 0;
}

bool allocating_method(std::string_view name) {
    const Name* entry = detail::find(std::span<const Name>(kFreshTensors), name);
    return entry != nullptr && (entry->where & kTensor) != 0;
}

namespace detail {

void add_shape_tables(std::vector<Table>& out) {
    out.push_back(table("size_arguments", "torch 2.12.1 signatures (native_functions.yaml); Dynamo, measured",
                        kSizeArguments));
    out.push_back(table("size_methods", "torch 2.12.1 signatures (native_functions.yaml)", kSizeMethods));
    out.push_back(table("more_shape_calls", "torch 2.12.1 signatures", kMoreShapeCalls));
    out.push_back(table("dynamic_shape_ops", "Dynamo GB0036, torch 2.12.1", kDynamicShapeOps));
    out.push_back(table("view_methods", "docs/source/tensor_view.rst, torch 2.12.1", kViewMethods));
    out.push_back(table("view_attributes", "docs/source/tensor_view.rst, torch 2.12.1", kViewAttributes));
    out.push_back(table("may_alias", "docs/source/tensor_view.rst; Tensor.to and the conversions, torch 2.12.1",
                        kMayAlias));
    out.push_back(table("fresh_tensors", "torch 2.12.1 factories, clone, Tensor.new_*, Tensor.repeat", kFreshTensors));
}

}  // namespace detail

}  // namespace graphmend::knowledge
