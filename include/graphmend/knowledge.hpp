// graphmend knowledge layer: facts about torch ops that the rules share, each with where it
// comes from. A rule asks here instead of keeping its own list (src/knowledge/).
//
// Value-raising ops (value_raising_ops). A select (GM201) evaluates every branch, also the one
// the original `if` did not take. An op that raises for the *values* of an operand, not for
// its shape, can then raise where the original returned: torchvision 0.27.1's `equalize` runs
// `torch.div(..., step, rounding_mode="floor")` on integers after `if step == 0: return
// img_chan`, and a select of the two divides by zero on a constant channel. Each entry names
// the operand whose values decide and what torch raises. Measured with torch 2.12.1 on CPU,
// eager and compiled (aot_eager and Inductor raise too; Inductor's index checks raise a
// RuntimeError from its kernel where eager raises IndexError); the messages are those of
// ATen's checks (aten/src/ATen/native/BinaryOps.cpp `ZeroDivisionError` for integral
// div_floor/div_trunc/remainder/fmod; TensorAdvancedIndexing.cpp, Embedding.cpp, Onehot.cpp,
// SummaryOps.cpp (bincount), Repeat.cpp, BatchLinearAlgebra.cpp).
#pragma once

#include <span>
#include <string_view>

namespace graphmend::knowledge {

/// Which operand's values make the op raise.
enum class RaisingOperand {
    Divisor,  // an integer divisor of 0: RuntimeError "ZeroDivisionError" (a float one gives inf/nan)
    Index,    // an index out of range (or negative where only non-negative ones are taken)
    Input,    // the input itself (a matrix that is singular or not positive-definite, a bad distribution)
};

struct ValueRaisingOp {
    /// The torch function or Tensor method (`div`, `gather`), or the Python operator (`//`, `%`).
    std::string_view name;
    RaisingOperand operand;
    /// The operand's place among the positional arguments of the function form
    /// (`torch.gather(input, dim, index)`: 2); the method form (`x.gather(dim, index)`) takes
    /// it one place earlier. -1: the operand is the receiver / first argument itself.
    int position;
    /// The operand's keyword name (`index`, `other`), "" when it has none.
    std::string_view keyword;
    /// A keyword argument the call must pass for the op to raise (`rounding_mode` of `div`:
    /// true division by zero gives inf), "" when it always can.
    std::string_view only_with;
    /// What torch 2.12.1 raises, for the report.
    std::string_view raises;
};

/// Every value-raising op graphmend knows, in one table (src/knowledge/value_raising.cpp).
std::span<const ValueRaisingOp> value_raising_ops();

/// The entry for a torch function, Tensor method or operator name, or nullptr.
const ValueRaisingOp* value_raising_op(std::string_view name);

/// True for a torch function or Tensor method whose output shape depends on the data
/// (`nonzero`, `argwhere`, `unique`, `unique_consecutive`, `masked_select`, and `bincount`,
/// whose length is the largest value plus one): Dynamo breaks there (GB0036 "Dynamic shape
/// operator", torch 2.12.1, unless capture_dynamic_output_shape_ops; bincount measured on
/// torchvision's equalize, `torch.bincount(x, minlength=256)`). `nonzero_static` takes its size as an argument and is
/// not one.
bool dynamic_shape_op(std::string_view name);

/// What a logger factory returns, by the module it comes from and its name: a logging.Logger
/// (`logging.getLogger`; the `get_logger` of transformers', diffusers' and huggingface_hub's
/// `utils.logging`, which call it), something else (accelerate.logging's `get_logger` returns a
/// MultiProcessAdapter, a logging.LoggerAdapter without makeRecord or handle, which graphmend's
/// runtime calls to replay a deferred record), or not known. `module` is the dotted module the
/// name is imported from ("" for a name the file binds itself).
enum class LoggerFactory { Logger, NotLogger, Unknown };
LoggerFactory logger_factory(std::string_view module, std::string_view name);

/// torch.nn modules whose forward raises for the values of its input (nn.Embedding: an index
/// out of range), by class name; nullptr for any other class.
const ValueRaisingOp* value_raising_module(std::string_view class_name);

}  // namespace graphmend::knowledge
