// graphmend knowledge layer: the facts about torch and its ecosystem that rules and the analysis
// share (op names, torch.nn classes, Dynamo's APIs, logging and warnings, Python builtins), each
// table with where it comes from. A rule asks here instead of keeping its own list.
//
// src/knowledge/: shape_ops.cpp (sizes, data-dependent shapes, views, fresh tensors),
// tensor_ops.cpp (what ops compute: reads of values, elementwise, layouts, purity, randomness,
// gradients), modules.cpp (torch.nn classes, Dynamo's APIs, the installed nn.Module classes of
// module_table.txt), loggers.cpp (logging and warnings), python.cpp (builtins and container
// methods), value_raising.cpp (ops that raise for values). Every table is listed by tables():
// `graphmend_knowledge` (tools/knowledge.cpp) prints them as JSON and
// tests/python/test_knowledge.py checks that each entry exists where it says, in torch 2.12.1.
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

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace graphmend::knowledge {

// --- Every table, for the dump and its check against torch -------------------------------------

/// Where a listed name is defined (bits; an entry may name several). The check
/// (tests/python/test_knowledge.py) looks each one up there.
enum Where : std::uint32_t {
    kTorch = 1U << 0,        // torch.NAME
    kTensor = 1U << 1,       // torch.Tensor.NAME, a method or attribute
    kFunctional = 1U << 2,   // torch.nn.functional.NAME
    kLinalg = 1U << 3,       // torch.linalg.NAME
    kNn = 1U << 4,           // torch.nn.NAME, a class
    kNnModule = 1U << 5,     // torch.nn.Module.NAME, a method
    kOp = 1U << 6,           // torch.ops.NS.NAME, written NS::NAME (a custom op: torchvision::nms)
    kDotted = 1U << 7,       // a dotted name: a module, or an attribute of one (torch.compiler.disable)
    kBuiltin = 1U << 8,      // builtins.NAME
    kList = 1U << 9,         // list.NAME
    kDict = 1U << 10,        // dict.NAME
    kSet = 1U << 11,         // set.NAME
    kFile = 1U << 12,        // io.TextIOBase.NAME (a file's method)
    kLogger = 1U << 13,      // logging.Logger.NAME (with transformers' warning_once, which
                             // transformers.utils.logging adds to logging.Logger)
    kOperator = 1U << 14,    // a Python operator (`%`, `//`)
    kOlderTorch = 1U << 15,  // with kDotted: a spelling of an older torch, gone from torch 2.12.1
                             // (the check finds its module, and not the name)
};

struct Name {
    std::string_view name;
    std::uint32_t where;
};

struct Table {
    std::string_view name;    // what it is called in the dump
    std::string_view source;  // where its facts come from
    std::vector<Name> names;
};

/// Every table of this layer, in a fixed order.
const std::vector<Table>& tables();

// --- Sizes and shapes (shape_ops.cpp) ----------------------------------------------------------

/// A torch function whose arguments are sizes, and which: `position` the place of its size
/// among the positional arguments, and `keyword` its keyword name; position -1: every positional
/// argument (`torch.zeros(2, n)`, `torch.arange(start, end)`, the SymInts of `torch.randint`).
struct SizeArguments {
    std::string_view name;
    std::uint32_t where;
    int position;
    std::string_view keyword;
};

/// The entry for a torch factory (`zeros`, `arange`, `linspace`, ...) or torch.nn.functional's
/// `one_hot`, or nullptr.
const SizeArguments* size_arguments(std::string_view name);

/// True for a torch.NAME factory whose positional arguments are sizes (or a range's bounds and
/// steps): the entries of size_arguments that torch itself defines.
bool size_factory(std::string_view name);

/// True for a Tensor method whose arguments are sizes (`view`, `split`, `new_zeros`, ...).
bool size_method(std::string_view name);

/// True for a torch function or Tensor method whose output shape depends on the data
/// (`nonzero`, `argwhere`, `unique`, `unique_consecutive`, `masked_select`, and `bincount`,
/// whose length is the largest value plus one): Dynamo breaks there (GB0036 "Dynamic shape
/// operator", torch 2.12.1, unless capture_dynamic_output_shape_ops; bincount measured on
/// torchvision's equalize, `torch.bincount(x, minlength=256)`). `nonzero_static` takes its size as an argument and is
/// not one.
bool dynamic_shape_op(std::string_view name);

/// True for a call, by the dotted name it resolves to, of a custom op whose output shape depends
/// on the data, or of its Python wrapper: `torch.ops.torchvision.nms` (torchvision::nms),
/// `torchvision.ops.nms`, `torchvision.ops.batched_nms` (GB0036, torch 2.12.1).
bool dynamic_shape_call(std::string_view dotted);

/// A call Dynamo does not trace: it runs between two graphs (GB0007, "Attempted to call
/// function marked as skipped"). `name`: the function (CFunction) or the top-level module
/// (SkippedModule).
struct UntraceableCall {
    enum class Kind { CFunction, SkippedModule };
    Kind kind;
    std::string name;
};

/// What Dynamo does with a call, by the dotted name it resolves to (Project::external_name):
/// a function implemented in C it cannot trace into (`bisect.bisect`, `scipy.integrate.quad`;
/// measured, torch 2.12.1), or any function of a module in its third-party skip list
/// (`tqdm.tqdm`, `pandas.*`, `sklearn.*`; trace_rules.py THIRDPARTY_SKIPLIST at torch 2.12.1,
/// numpy left out: Dynamo traces it through torch._numpy). nullopt for any other call.
std::optional<UntraceableCall> untraceable_call(std::string_view dotted);

/// A kind of graph break that no rewrite of graphmend removes (GM401's reports), as Dynamo's own
/// settings treat it: a value read out of a tensor into Python (`.item()`, `int(t)`, an integer
/// `.tolist()`, a tensor given as a size: GB0124), an op whose output shape depends on the data
/// (`nonzero`, one-argument `torch.where`, `unique`, a boolean mask, `torchvision::nms`: GB0036),
/// a tensor read as a Python index (`x[t]` with `t` a NumPy or 0-d tensor value: GB0033), a loop
/// whose test reads tensor data (GB0170).
enum class DataBreak { ScalarRead, DynamicShape, IndexRead, DataLoop };

/// The setting that removes a kind of break, as the line to write (`setting`) and as the
/// environment variable torch reads for it (`env`), and what it costs; all empty when no
/// setting removes it (IndexRead: capture_scalar_outputs makes the index an unbacked symbol,
/// which breaks all the same; DataLoop). Measured with torch 2.12.1 (src/knowledge/dynamo_settings.cpp).
struct SettingEffect {
    std::string_view setting;
    std::string_view env;
    std::string_view cost;
};
SettingEffect setting_for(DataBreak kind);

/// Calls whose arguments are sizes or shapes, by their last name (GM401's report of what a
/// value read into Python feeds).
bool shape_call(std::string_view name);

/// Whether a method's result may be, or share the storage of, its receiver (one table): a view
/// (`view`, `transpose`, `unfold`, ...), the storage or memory (`numpy`, `data_ptr`), or a
/// conversion that returns the receiver when it already is what is asked (`.to`, `.float()`,
/// `.contiguous()`). shares_storage: for a receiver of dtype `dtype` (GM503's int64 tensor:
/// `.long()` may be itself, `.float()` is a copy); may_alias: the result may be the receiver
/// itself or a view of it, whatever its dtype (GM201: a select hands out a new tensor; torch
/// functions too: `torch.view_as_real`). view_attribute: the attributes that are views (`T`,
/// `mT`, `real`, ...).
bool shares_storage(std::string_view name, std::string_view dtype);
bool may_alias(std::string_view name);
bool view_attribute(std::string_view name);

/// Calls that make a new tensor, with storage of its own (one table): by attribute name
/// (`torch.zeros`, `x.new_zeros`, `x.clone()`: fresh_tensor), by torch function
/// (allocating_function, the full dotted name `torch.zeros`) and by Tensor method
/// (allocating_method, `x.repeat(...)`).
bool fresh_tensor(std::string_view name);
bool allocating_function(std::string_view dotted);
bool allocating_method(std::string_view name);

// --- What ops compute (tensor_ops.cpp) ---------------------------------------------------------

/// Tensor methods whose result is computed from the tensor's values (one table): a test of it
/// reads data (`x.any()`, `x.sum() > 0`, `x.item()`, `x.equal(y)`): reads_values; and those of
/// them that give a tensor (reductions, comparisons, arg-reductions), which on a receiver of
/// unknown kind still mark a tensor (the value analysis): value_reduction.
bool reads_values(std::string_view name);
bool value_reduction(std::string_view name);

/// Ops that return a tuple or list of tensors (`split`, `chunk`, `unbind`, `meshgrid`, ...), as
/// a torch function (kTorch) or a Tensor method (kTensor), as `where` asks.
bool tensor_sequence(std::string_view name, std::uint32_t where);

/// Tensor methods (and the torch functions of those names) that give a boolean tensor.
bool boolean_result(std::string_view name);

/// Tensor methods that return a Python number, not a tensor (`dim`, `numel`, `stride`, ...).
bool number_method(std::string_view name);

/// torch.NAME that returns no tensor (`finfo`, `device`, `no_grad`, ...).
bool python_valued_torch(std::string_view name);

/// Namespaces whose functions return tensors (`torch`, `torch.nn.functional`, ...).
bool tensor_namespace(std::string_view dotted);

/// Pointwise ops (one table, with the ops along a dimension that keep a layout): Tensor methods
/// that work element by element, dtype conversions included (elementwise_method); torch.NAME /
/// torch.nn.functional.NAME that do (elementwise_function); binary Tensor methods whose
/// arguments broadcast with the receiver (broadcast_method); Tensor methods and torch.NAME whose
/// result has the layout (shape, dtype, device) of their first operand when every other operand
/// is a Python number or has that layout (same_layout_method, same_layout_function: the pointwise
/// ops that keep the dtype, and softmax, cumsum, tril, flip, roll, ...).
bool elementwise_method(std::string_view name);
bool elementwise_function(std::string_view name);
bool broadcast_method(std::string_view name);
bool same_layout_method(std::string_view name);
bool same_layout_function(std::string_view name);

/// Tensor methods and torch functions known to be pure: no state, no I/O, no randomness (the
/// pointwise ops, the ops along a dimension, comparisons and reductions among them).
bool pure_op(std::string_view name);
/// Calls that draw random numbers (the dropouts and the in-place samplers `uniform_`, ... included).
bool random_op(std::string_view name);
/// torch functions that draw random numbers, touch global state (seeds, files) or give
/// uninitialized values (`empty`) (GM201).
bool impure_torch(std::string_view name);
/// True for the name of an in-place op: torch's convention, a trailing underscore (`add_`,
/// `masked_fill_`, `copy_`; docs/source/tensors.rst, torch 2.12.1), a Python special method
/// (`__add__`) not being one.
bool in_place(std::string_view name);
/// In-place ops that keep an argument rather than read its values: `set_` makes the receiver
/// share the argument's storage (GM201 hoists other in-place calls out of the branches of a
/// select, handing them a selected copy of their argument).
bool keeps_argument(std::string_view name);
/// Operations whose gradient can be inf/NaN where their value is finite or unused.
bool grad_unsafe(std::string_view name);

// --- torch.nn classes and Dynamo's APIs (modules.cpp) ------------------------------------------

/// What a torch.nn module's forward does, by class name (one table, each kind within the next):
/// it works element by element (elementwise_module) < on the last dimension of each row
/// (rowwise_module) < it keeps no state and draws no random numbers (stateless_module) < it
/// returns one tensor (tensor_module).
bool elementwise_module(std::string_view class_name);
bool rowwise_module(std::string_view class_name);
bool stateless_module(std::string_view class_name);
bool tensor_module(std::string_view class_name);
/// torch.nn classes whose forward always returns a new tensor with storage of its own (never its
/// input, a view of it or a parameter: Linear, the convolutions and norms, GELU, ...).
bool new_tensor_module(std::string_view class_name);

/// nn.Module classes of torch outside torch.nn (`torch.jit.ScriptModule`, `torch.fx.GraphModule`,
/// ...), by dotted name; torch.ao.nn's too.
bool other_torch_module(std::string_view dotted);

/// Decorators and calls that make Dynamo skip a function (it runs eagerly, untraced).
bool untraced_api(std::string_view dotted);
/// Dynamo puts a call to these in the graph without tracing the body.
bool opaque_api(std::string_view dotted);
/// torch.compile and its spellings; with `factory`, also the APIs that only make a compiler
/// to call (`torch._dynamo.optimize(...)(f)`).
bool compile_api(std::string_view dotted, bool factory);

/// The installed nn.Module classes graphmend ships (src/knowledge/module_table.txt, made by
/// tools/module_table.cpp): class name -> the modules that bind it.
const std::unordered_map<std::string, std::vector<std::string>>& installed_module_classes();

// --- logging and warnings (loggers.cpp) --------------------------------------------------------

/// What a logger factory returns, by the module it comes from and its name: a logging.Logger
/// (`logging.getLogger`; the `get_logger` of transformers', diffusers' and huggingface_hub's
/// `utils.logging`, which call it), something else (accelerate.logging's `get_logger` returns a
/// MultiProcessAdapter, a logging.LoggerAdapter without makeRecord or handle, which graphmend's
/// runtime calls to replay a deferred record), or not known. `module` is the dotted module the
/// name is imported from ("" for a name the file binds itself).
enum class LoggerFactory { Logger, NotLogger, Unknown };
LoggerFactory logger_factory(std::string_view module, std::string_view name);

/// The methods of a logging.Logger that log a record (`info`, `warning`, transformers'
/// `warning_once`, ...).
bool logger_method(std::string_view name);

/// The warnings API a call of `module`.`name` is (`warnings`.`warn`).
bool warning_function(std::string_view module, std::string_view name);

// --- Python (python.cpp) -----------------------------------------------------------------------

/// Python builtins that have no effect on the values a model passes them (GM201's branches, the
/// row rewrites' calls that run for more rows).
bool pure_builtin(std::string_view name);
/// Builtins a model calls (not project functions) (GM503).
bool common_builtin(std::string_view name);
/// List methods that leave the list as it is.
bool list_read(std::string_view name);
/// Methods that change their receiver: of lists, dicts, sets, files and nn.Modules.
bool mutating_method(std::string_view name);
/// Names of builtins a class may derive from (never an nn.Module): the classes listed, and any
/// name ending in Error, Exception or Warning, and the exception groups.
bool builtin_class(std::string_view name);
/// Packages outside the inputs whose classes graphmend knows to be nn.Modules or not: torch and
/// the standard library modules classes come from, by their top-level name.
bool known_package(std::string_view top_level);

// --- Ops that raise for values (value_raising.cpp) ---------------------------------------------

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
    /// Where the name is defined (Where bits).
    std::uint32_t where;
};

/// Every value-raising op graphmend knows, in one table (src/knowledge/value_raising.cpp).
std::span<const ValueRaisingOp> value_raising_ops();

/// The entry for a torch function, Tensor method or operator name, or nullptr.
const ValueRaisingOp* value_raising_op(std::string_view name);

/// torch.nn modules whose forward raises for the values of its input (nn.Embedding: an index
/// out of range), by class name; nullptr for any other class.
const ValueRaisingOp* value_raising_module(std::string_view class_name);

}  // namespace graphmend::knowledge
