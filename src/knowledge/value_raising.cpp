// The ops that raise for the values of an operand: see include/graphmend/knowledge.hpp.
// Each message below was seen with torch 2.12.1 (tests/python/test_value_raising.py runs every
// entry and checks that it raises).
#include <algorithm>
#include <array>

#include "graphmend/knowledge.hpp"

namespace graphmend::knowledge {

namespace {

using enum RaisingOperand;

constexpr std::string_view kZeroDivision = "RuntimeError: ZeroDivisionError (an integer divisor of 0)";
constexpr std::string_view kIndexBounds = "IndexError/RuntimeError: index out of bounds";

// Sorted by name (value_raising_op searches it).
constexpr std::array kOps{
    ValueRaisingOp{"%", Divisor, 1, "", "", kZeroDivision},
    ValueRaisingOp{"//", Divisor, 1, "", "", kZeroDivision},
    ValueRaisingOp{"bincount", Input, 0, "input", "", "RuntimeError: bincount only supports 1-d non-negative integral inputs"},
    ValueRaisingOp{"cholesky", Input, 0, "input", "", "torch.linalg.LinAlgError: the input is not positive-definite"},
    ValueRaisingOp{"div", Divisor, 1, "other", "rounding_mode", kZeroDivision},
    ValueRaisingOp{"embedding", Index, 0, "input", "", "IndexError: index out of range in self"},
    ValueRaisingOp{"floor_divide", Divisor, 1, "other", "", kZeroDivision},
    ValueRaisingOp{"fmod", Divisor, 1, "other", "", kZeroDivision},
    ValueRaisingOp{"gather", Index, 2, "index", "", kIndexBounds},
    ValueRaisingOp{"index_add", Index, 2, "index", "", kIndexBounds},
    ValueRaisingOp{"index_copy", Index, 2, "index", "", kIndexBounds},
    ValueRaisingOp{"index_fill", Index, 2, "index", "", kIndexBounds},
    ValueRaisingOp{"index_put", Index, 1, "indices", "", kIndexBounds},
    ValueRaisingOp{"index_select", Index, 2, "index", "", "IndexError: index out of range in self"},
    ValueRaisingOp{"inv", Input, 0, "A", "", "torch.linalg.LinAlgError: the matrix is singular"},
    ValueRaisingOp{"inverse", Input, 0, "input", "", "torch.linalg.LinAlgError: the matrix is singular"},
    ValueRaisingOp{"multinomial", Input, 0, "input", "", "RuntimeError: invalid multinomial distribution"},
    ValueRaisingOp{"narrow", Index, 2, "start", "", "IndexError: start out of range"},
    ValueRaisingOp{"one_hot", Index, 0, "tensor", "", "RuntimeError: Class values must be smaller than num_classes."},
    ValueRaisingOp{"remainder", Divisor, 1, "other", "", kZeroDivision},
    ValueRaisingOp{"repeat_interleave", Input, 1, "repeats", "", "RuntimeError: repeats can not be negative"},
    ValueRaisingOp{"scatter", Index, 2, "index", "", kIndexBounds},
    ValueRaisingOp{"scatter_add", Index, 2, "index", "", kIndexBounds},
    ValueRaisingOp{"scatter_reduce", Index, 2, "index", "", kIndexBounds},
    ValueRaisingOp{"solve", Input, 0, "A", "", "torch.linalg.LinAlgError: the matrix is singular"},
    ValueRaisingOp{"take", Index, 1, "index", "", "IndexError: out of range"},
    ValueRaisingOp{"take_along_dim", Index, 1, "indices", "", kIndexBounds},
};

constexpr ValueRaisingOp kEmbeddingModule{"Embedding", Index, 0, "input", "", "IndexError: index out of range in self"};

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

}  // namespace graphmend::knowledge
