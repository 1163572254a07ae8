// The ops that raise for the values of an operand: see include/graphmend/knowledge.hpp.
// Each message below was seen with torch 2.12.1 (tests/python/test_value_raising.py runs every
// entry and checks that it raises).
#include <algorithm>
#include <array>

#include "table.hpp"

namespace graphmend::knowledge {

namespace {

using enum RaisingOperand;

constexpr std::string_view kZeroDivision = "RuntimeError: ZeroDivisionError (an integer divisor of 0)";
constexpr std::string_view kIndexBounds = "IndexError/RuntimeError: index out of bounds";

// Sorted by name (value_raising_op searches it).
constexpr std::array kOps{
    ValueRaisingOp{"%", Divisor, 1, "", "", kZeroDivision, kOperator},
    ValueRaisingOp{"//", Divisor, 1, "", "", kZeroDivision, kOperator},
    ValueRaisingOp{"bincount", Input, 0, "input", "",
                   "RuntimeError: bincount only supports 1-d non-negative integral inputs", kTorch | kTensor},
    ValueRaisingOp{"cholesky", Input, 0, "input", "",
                   "torch.linalg.LinAlgError: the input is not positive-definite", kLinalg},
    ValueRaisingOp{"div", Divisor, 1, "other", "rounding_mode", kZeroDivision, kTorch | kTensor},
    ValueRaisingOp{"embedding", Index, 0, "input", "",
                   "IndexError: index out of range in self", kTorch | kFunctional},
    ValueRaisingOp{"floor_divide", Divisor, 1, "other", "", kZeroDivision, kTorch | kTensor},
    ValueRaisingOp{"fmod", Divisor, 1, "other", "", kZeroDivision, kTorch | kTensor},
    ValueRaisingOp{"gather", Index, 2, "index", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"index_add", Index, 2, "index", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"index_copy", Index, 2, "index", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"index_fill", Index, 2, "index", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"index_put", Index, 1, "indices", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"index_select", Index, 2, "index", "", "IndexError: index out of range in self", kTorch | kTensor},
    ValueRaisingOp{"inv", Input, 0, "A", "", "torch.linalg.LinAlgError: the matrix is singular", kLinalg},
    ValueRaisingOp{"inverse", Input, 0, "input", "",
                   "torch.linalg.LinAlgError: the matrix is singular", kTorch | kTensor},
    ValueRaisingOp{"multinomial", Input, 0, "input", "",
                   "RuntimeError: invalid multinomial distribution", kTorch | kTensor},
    ValueRaisingOp{"narrow", Index, 2, "start", "", "IndexError: start out of range", kTorch | kTensor},
    ValueRaisingOp{"one_hot", Index, 0, "tensor", "",
                   "RuntimeError: Class values must be smaller than num_classes.", kFunctional},
    ValueRaisingOp{"remainder", Divisor, 1, "other", "", kZeroDivision, kTorch | kTensor},
    ValueRaisingOp{"repeat_interleave", Input, 1, "repeats", "",
                   "RuntimeError: repeats can not be negative", kTorch | kTensor},
    ValueRaisingOp{"scatter", Index, 2, "index", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"scatter_add", Index, 2, "index", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"scatter_reduce", Index, 2, "index", "", kIndexBounds, kTorch | kTensor},
    ValueRaisingOp{"solve", Input, 0, "A", "", "torch.linalg.LinAlgError: the matrix is singular", kLinalg},
    ValueRaisingOp{"take", Index, 1, "index", "", "IndexError: out of range", kTorch | kTensor},
    ValueRaisingOp{"take_along_dim", Index, 1, "indices", "", kIndexBounds, kTorch | kTensor},
};
static_assert(detail::sorted(kOps));

constexpr ValueRaisingOp kEmbeddingModule{"Embedding", Index, 0, "input", "", "IndexError: index out of range in self",
                                          kNn};

}  // namespace

std::span<const ValueRaisingOp> value_raising_ops() { return kOps; }

const ValueRaisingOp* value_raising_op(std::string_view name) {
    const auto it = std::lower_bound(kOps.begin(), kOps.end(), name,
                                     [](const ValueRaisingOp& op, std::string_view n) { return op.name < n; });
    return it != kOps.end() && it->name == name ? &*it : nullptr;
}

const ValueRaisingOp* value_raising_module(std::string_view class_name) {
    return class_name == kEmbeddingModule.name ? &kEmbeddingModule : nullptr;
}

namespace detail {

void add_value_raising_tables(std::vector<Table>& out) {
    out.push_back(table("value_raising_ops", "torch 2.12.1 ATen checks; tests/python/test_value_raising.py", kOps));
    out.push_back(table("value_raising_modules", "torch 2.12.1 nn.Embedding",
                        std::array<ValueRaisingOp, 1>{kEmbeddingModule}));
}

}  // namespace detail

}  // namespace graphmend::knowledge
