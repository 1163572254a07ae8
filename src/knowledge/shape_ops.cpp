// Sizes, data-dependent shapes, views and fresh tensors: see include/graphmend/knowledge.hpp.
// Where each entry is defined (Where) is checked against torch 2.12.1 by
// tests/python/test_knowledge.py; what an entry says of its op, by the tests its comment names.
#include <string>

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

// Calls of custom ops whose output shape depends on the data, by the dotted name they resolve
// to, and of their Python wrappers: torchvision's nms keeps the boxes that survive, as many as
// the data says (its fake kernel makes an unbacked size: torchvision/_meta_registrations.py,
// torchvision 0.27.1). Measured with torch 2.12.1: Dynamo breaks at `torchvision.ops.nms(...)`,
// `batched_nms(...)`, which calls it (torchvision/ops/boxes.py), and `torch.ops.torchvision.nms(...)`
// ("Dynamic shape operator", GB0036; tests/fixtures/data-dependent-shape/nms.py, run by
// tests/python/test_report_words.py).
constexpr auto kDynamicShapeCalls = std::to_array<Name>({
    {"torchvision.ops.batched_nms", kDotted}, {"torchvision.ops.boxes.batched_nms", kDotted},
    {"torchvision.ops.boxes.nms", kDotted}, {"torchvision.ops.nms", kDotted}, {"torchvision::nms", kOp},
});
static_assert(detail::sorted(kDynamicShapeCalls));

enum class Aliasing {
    View,        // a view of the receiver: its result shares the receiver's storage
    Storage,     // gives the receiver's storage, or its memory (numpy, data_ptr): no tensor
    Conversion,  // returns the receiver itself when it already is what is asked
};

struct AliasingOp {
    std::string_view name;
    std::uint32_t where;
    Aliasing kind;
    std::string_view dtype;  // a Conversion's dtype; "" when it keeps the dtype or takes another's
};

// Methods whose result may share the receiver's storage, or be the receiver. Sources, torch
// 2.12.1: docs/source/tensor_view.rst (the view ops; `real` and `imag` also as attributes,
// view_as_real and view_as_complex as torch functions; detach; the named-tensor methods
// rename, refine_names, align_as), Tensor.numpy ("shares the same underlying storage"),
// data_ptr and the storage accessors, and the conversions, which return `self` when the tensor
// already has the dtype, device or layout asked (Tensor.to; float, long, ...; contiguous, cpu,
// cuda, pin_memory, coalesce, requires_grad_). GM201 (a select hands out a new tensor where the
// `if` handed out an existing one) and GM503 (the list a tensor is built from stays its values
// while no view escapes) kept two lists: GM503's lacked moveaxis, unfold, hsplit, vsplit and the
// named-tensor methods, and listed `int`, which copies the int64 tensor it sees into int32.
constexpr auto kAliasing = std::to_array<AliasingOp>({
    {"align_as", kTensor, Aliasing::View, ""},
    {"as_strided", kTensor, Aliasing::View, ""},
    {"bfloat16", kTensor, Aliasing::Conversion, "bfloat16"},
    {"bool", kTensor, Aliasing::Conversion, "bool"},
    {"byte", kTensor, Aliasing::Conversion, "uint8"},
    {"char", kTensor, Aliasing::Conversion, "int8"},
    {"chunk", kTensor, Aliasing::View, ""},
    {"coalesce", kTensor, Aliasing::Conversion, ""},
    {"contiguous", kTensor, Aliasing::Conversion, ""},
    {"cpu", kTensor, Aliasing::Conversion, ""},
    {"cuda", kTensor, Aliasing::Conversion, ""},
    {"data_ptr", kTensor, Aliasing::Storage, ""},
    {"detach", kTensor, Aliasing::View, ""},
    {"diagonal", kTensor, Aliasing::View, ""},
    {"double", kTensor, Aliasing::Conversion, "float64"},
    {"expand", kTensor, Aliasing::View, ""},
    {"expand_as", kTensor, Aliasing::View, ""},
    {"flatten", kTensor, Aliasing::View, ""},
    {"float", kTensor, Aliasing::Conversion, "float32"},
    {"half", kTensor, Aliasing::Conversion, "float16"},
    {"hsplit", kTensor, Aliasing::View, ""},
    {"imag", kTensor, Aliasing::View, ""},
    {"int", kTensor, Aliasing::Conversion, "int32"},
    {"long", kTensor, Aliasing::Conversion, "int64"},
    {"moveaxis", kTensor, Aliasing::View, ""},
    {"movedim", kTensor, Aliasing::View, ""},
    {"narrow", kTensor, Aliasing::View, ""},
    {"numpy", kTensor, Aliasing::Storage, ""},
    {"permute", kTensor, Aliasing::View, ""},
    {"pin_memory", kTensor, Aliasing::Conversion, ""},
    {"real", kTensor, Aliasing::View, ""},
    {"refine_names", kTensor, Aliasing::View, ""},
    {"rename", kTensor, Aliasing::View, ""},
    {"requires_grad_", kTensor, Aliasing::Conversion, ""},
    {"reshape", kTensor, Aliasing::View, ""},
    {"reshape_as", kTensor, Aliasing::View, ""},
    {"select", kTensor, Aliasing::View, ""},
    {"short", kTensor, Aliasing::Conversion, "int16"},
    {"split", kTensor, Aliasing::View, ""},
    {"squeeze", kTensor, Aliasing::View, ""},
    {"storage", kTensor, Aliasing::Storage, ""},
    {"swapaxes", kTensor, Aliasing::View, ""},
    {"swapdims", kTensor, Aliasing::View, ""},
    {"t", kTensor, Aliasing::View, ""},
    {"tensor_split", kTensor, Aliasing::View, ""},
    {"to", kTensor, Aliasing::Conversion, ""},
    {"transpose", kTensor, Aliasing::View, ""},
    {"type", kTensor, Aliasing::Conversion, ""},
    {"type_as", kTensor, Aliasing::Conversion, ""},
    {"unbind", kTensor, Aliasing::View, ""},
    {"unflatten", kTensor, Aliasing::View, ""},
    {"unfold", kTensor, Aliasing::View, ""},
    {"unsqueeze", kTensor, Aliasing::View, ""},
    {"untyped_storage", kTensor, Aliasing::Storage, ""},
    {"view", kTensor, Aliasing::View, ""},
    {"view_as", kTensor, Aliasing::View, ""},
    {"view_as_complex", kTorch, Aliasing::View, ""},
    {"view_as_real", kTorch, Aliasing::View, ""},
    {"vsplit", kTensor, Aliasing::View, ""},
});
static_assert(detail::sorted(kAliasing));

// Tensor attributes that are views of it. Source: docs/source/tensor_view.rst, torch 2.12.1.
constexpr auto kViewAttributes = std::to_array<Name>({
    {"H", kTensor}, {"T", kTensor}, {"data", kTensor}, {"imag", kTensor}, {"mH", kTensor}, {"mT", kTensor},
    {"real", kTensor},
});
static_assert(detail::sorted(kViewAttributes));

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

bool dynamic_shape_call(std::string_view dotted) {
    std::string qualified;  // torch.ops.NS.NAME (or .NAME.default): the op NS::NAME
    if (dotted.starts_with("torch.ops.")) {
        std::string_view rest = dotted.substr(10);
        if (rest.ends_with(".default")) rest.remove_suffix(8);
        const auto dot = rest.find('.');
        if (dot == std::string_view::npos) return false;
        qualified = std::string(rest.substr(0, dot)) + "::" + std::string(rest.substr(dot + 1));
        dotted = qualified;
    }
    return detail::listed(kDynamicShapeCalls, dotted);
}

bool shape_call(std::string_view name) {
    return size_arguments(name) != nullptr || size_method(name) || detail::listed(kMoreShapeCalls, name);
}

bool shares_storage(std::string_view name, std::string_view dtype) {
    const AliasingOp* op = detail::find(std::span<const AliasingOp>(kAliasing), name);
    if (op == nullptr || (op->where & kTensor) == 0) return false;
    return op->kind != Aliasing::Conversion || op->dtype.empty() || op->dtype == dtype;
}

bool view_attribute(std::string_view name) { return detail::listed(kViewAttributes, name); }

bool may_alias(std::string_view name) {
    const AliasingOp* op = detail::find(std::span<const AliasingOp>(kAliasing), name);
    return op != nullptr && op->kind != Aliasing::Storage;
}
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
    out.push_back(table("dynamic_shape_calls", "torchvision 0.27.1 nms; Dynamo GB0036, torch 2.12.1",
                        kDynamicShapeCalls));
    out.push_back(table("aliasing", "torch 2.12.1 docs/source/tensor_view.rst; Tensor.numpy, storage; conversions",
                        kAliasing));
    out.push_back(table("view_attributes", "torch 2.12.1 docs/source/tensor_view.rst", kViewAttributes));
    out.push_back(table("fresh_tensors", "torch 2.12.1 factories, clone, Tensor.new_*, Tensor.repeat", kFreshTensors));
}

}  // namespace detail

}  // namespace graphmend::knowledge
