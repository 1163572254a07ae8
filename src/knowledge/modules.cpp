// torch.nn classes, Dynamo's APIs and the installed nn.Module classes: see
// include/graphmend/knowledge.hpp. Where each entry is defined (Where) is checked against
// torch 2.12.1 by tests/python/test_knowledge.py.
#include <string>

#include "graphmend/module_table.hpp"
#include "table.hpp"

namespace graphmend::knowledge {

namespace {

// What a torch.nn module's forward does, each kind within the next: it works element by element
// (the activations without a dimension, Identity) < on the last dimension of each row (Linear,
// the norms over it, GLU) < it keeps no state and draws no random numbers < it returns one
// tensor (the losses whatever their reduction, the pools, BatchNorm, Dropout). Source: torch
// 2.12.1's torch/nn/modules/ (each forward). GM201 (stateless), the value analysis (one
// tensor), rules/support/rowwise.cpp (rowwise) and row_layout (elementwise) kept four lists,
// and the stateless and one-tensor lists lacked activations the others had: ReLU6, SELU, CELU,
// Hardswish, Hardsigmoid, LogSigmoid and GLU.
enum class ModuleKind { Elementwise, Rowwise, Stateless, OneTensor };

struct ModuleClass {
    std::string_view name;
    std::uint32_t where;
    ModuleKind kind;
};

constexpr auto kModuleClasses = std::to_array<ModuleClass>({
    {"AdaptiveAvgPool1d", kNn, ModuleKind::OneTensor},
    {"AdaptiveAvgPool2d", kNn, ModuleKind::OneTensor},
    {"AvgPool1d", kNn, ModuleKind::OneTensor},
    {"AvgPool2d", kNn, ModuleKind::OneTensor},
    {"BCELoss", kNn, ModuleKind::OneTensor},
    {"BCEWithLogitsLoss", kNn, ModuleKind::OneTensor},
    {"BatchNorm1d", kNn, ModuleKind::OneTensor},
    {"BatchNorm2d", kNn, ModuleKind::OneTensor},
    {"BatchNorm3d", kNn, ModuleKind::OneTensor},
    {"Bilinear", kNn, ModuleKind::Stateless},
    {"CELU", kNn, ModuleKind::Elementwise},
    {"CTCLoss", kNn, ModuleKind::OneTensor},
    {"Conv1d", kNn, ModuleKind::Stateless},
    {"Conv2d", kNn, ModuleKind::Stateless},
    {"Conv3d", kNn, ModuleKind::Stateless},
    {"ConvTranspose1d", kNn, ModuleKind::Stateless},
    {"ConvTranspose2d", kNn, ModuleKind::Stateless},
    {"ConvTranspose3d", kNn, ModuleKind::Stateless},
    {"CosineEmbeddingLoss", kNn, ModuleKind::OneTensor},
    {"CrossEntropyLoss", kNn, ModuleKind::OneTensor},
    {"Dropout", kNn, ModuleKind::OneTensor},
    {"Dropout1d", kNn, ModuleKind::OneTensor},
    {"Dropout2d", kNn, ModuleKind::OneTensor},
    {"ELU", kNn, ModuleKind::Elementwise},
    {"Embedding", kNn, ModuleKind::Stateless},
    {"Flatten", kNn, ModuleKind::Stateless},
    {"GELU", kNn, ModuleKind::Elementwise},
    {"GLU", kNn, ModuleKind::Rowwise},
    {"GaussianNLLLoss", kNn, ModuleKind::OneTensor},
    {"GroupNorm", kNn, ModuleKind::Stateless},
    {"Hardsigmoid", kNn, ModuleKind::Elementwise},
    {"Hardswish", kNn, ModuleKind::Elementwise},
    {"Hardtanh", kNn, ModuleKind::Elementwise},
    {"HingeEmbeddingLoss", kNn, ModuleKind::OneTensor},
    {"HuberLoss", kNn, ModuleKind::OneTensor},
    {"Identity", kNn, ModuleKind::Elementwise},
    {"KLDivLoss", kNn, ModuleKind::OneTensor},
    {"L1Loss", kNn, ModuleKind::OneTensor},
    {"LayerNorm", kNn, ModuleKind::Rowwise},
    {"LeakyReLU", kNn, ModuleKind::Elementwise},
    {"Linear", kNn, ModuleKind::Rowwise},
    {"LogSigmoid", kNn, ModuleKind::Elementwise},
    {"LogSoftmax", kNn, ModuleKind::Stateless},
    {"MSELoss", kNn, ModuleKind::OneTensor},
    {"MarginRankingLoss", kNn, ModuleKind::OneTensor},
    {"MaxPool1d", kNn, ModuleKind::OneTensor},
    {"MaxPool2d", kNn, ModuleKind::OneTensor},
    {"Mish", kNn, ModuleKind::Elementwise},
    {"MultiLabelMarginLoss", kNn, ModuleKind::OneTensor},
    {"MultiLabelSoftMarginLoss", kNn, ModuleKind::OneTensor},
    {"MultiMarginLoss", kNn, ModuleKind::OneTensor},
    {"NLLLoss", kNn, ModuleKind::OneTensor},
    {"PReLU", kNn, ModuleKind::OneTensor},
    {"PoissonNLLLoss", kNn, ModuleKind::OneTensor},
    {"RMSNorm", kNn, ModuleKind::Rowwise},
    {"ReLU", kNn, ModuleKind::Elementwise},
    {"ReLU6", kNn, ModuleKind::Elementwise},
    {"SELU", kNn, ModuleKind::Elementwise},
    {"Sequential", kNn, ModuleKind::OneTensor},
    {"SiLU", kNn, ModuleKind::Elementwise},
    {"Sigmoid", kNn, ModuleKind::Elementwise},
    {"SmoothL1Loss", kNn, ModuleKind::OneTensor},
    {"SoftMarginLoss", kNn, ModuleKind::OneTensor},
    {"Softmax", kNn, ModuleKind::Stateless},
    {"Softplus", kNn, ModuleKind::Elementwise},
    {"Tanh", kNn, ModuleKind::Elementwise},
    {"TripletMarginLoss", kNn, ModuleKind::OneTensor},
    {"Unflatten", kNn, ModuleKind::Stateless},
    {"Upsample", kNn, ModuleKind::OneTensor},
});
static_assert(detail::sorted(kModuleClasses));

// True for a torch.nn class of `kind` or of a kind within it.
bool module_within(std::string_view class_name, ModuleKind kind) {
    const ModuleClass* m = detail::find(std::span<const ModuleClass>(kModuleClasses), class_name);
    return m != nullptr && m->kind <= kind;
}

// torch.nn classes whose forward always returns a new tensor with storage of its own: never its
// input (Identity, Dropout in eval, an activation built with inplace=True), a view of it
// (Flatten, Unflatten) or a parameter. Source: torch 2.12.1's torch/nn/modules/ (each forward).
// GM201: a local made by one is fresh, so a branch may change a copy of it instead.
constexpr auto kNewTensorModules = std::to_array<Name>({
    {"BatchNorm1d", kNn}, {"BatchNorm2d", kNn}, {"BatchNorm3d", kNn}, {"Bilinear", kNn}, {"Conv1d", kNn},
    {"Conv2d", kNn}, {"Conv3d", kNn}, {"ConvTranspose1d", kNn}, {"ConvTranspose2d", kNn},
    {"ConvTranspose3d", kNn}, {"Embedding", kNn}, {"GELU", kNn}, {"GLU", kNn}, {"GroupNorm", kNn},
    {"LayerNorm", kNn}, {"Linear", kNn}, {"LogSigmoid", kNn}, {"LogSoftmax", kNn}, {"RMSNorm", kNn},
    {"Sigmoid", kNn}, {"Softmax", kNn}, {"Softplus", kNn}, {"Tanh", kNn},
});
static_assert(detail::sorted(kNewTensorModules));

// nn.Module classes of torch outside torch.nn (besides torch.ao.nn's, by prefix). Source:
// torch 2.12.1 (torch/jit/_script.py, torch/fx/graph_module.py, torch/_dynamo/eval_frame.py).
constexpr auto kOtherTorchModules = std::to_array<Name>({
    {"torch._dynamo.OptimizedModule", kDotted}, {"torch._dynamo.eval_frame.OptimizedModule", kDotted},
    {"torch.fx.GraphModule", kDotted}, {"torch.fx.graph_module.GraphModule", kDotted},
    {"torch.jit.RecursiveScriptModule", kDotted}, {"torch.jit.ScriptModule", kDotted},
});
static_assert(detail::sorted(kOtherTorchModules));

// Decorators and calls that make Dynamo skip a function: torch 2.12.1's torch/compiler/__init__.py
// (disable), torch/_dynamo/decorators.py, torch/_compile.py (_disable_dynamo); torch 2.0 and 2.1
// defined disable in torch/_dynamo/eval_frame.py.
constexpr auto kUntracedApis = std::to_array<Name>({
    {"torch._disable_dynamo", kDotted}, {"torch._dynamo.decorators.disable", kDotted},
    {"torch._dynamo.disable", kDotted}, {"torch._dynamo.eval_frame.disable", kDotted | kOlderTorch},
    {"torch.compiler.disable", kDotted},
});
static_assert(detail::sorted(kUntracedApis));

// Dynamo puts a call to these in the graph without tracing the body: torch 2.12.1's
// torch/compiler/__init__.py (allow_in_graph), torch/_dynamo/decorators.py.
constexpr auto kOpaqueApis = std::to_array<Name>({
    {"torch._dynamo.allow_in_graph", kDotted}, {"torch._dynamo.nonstrict_trace", kDotted},
    {"torch.compiler.allow_in_graph", kDotted},
});
static_assert(detail::sorted(kOpaqueApis));

// torch.compile and its alias (torch/compiler/__init__.py), and the APIs that only return a
// compiler to call (`torch._dynamo.optimize(backend)(f)`, torch/_dynamo/eval_frame.py), torch 2.12.1.
constexpr auto kCompileApis = std::to_array<Name>({
    {"torch.compile", kDotted}, {"torch.compiler.compile", kDotted},
});
static_assert(detail::sorted(kCompileApis));
constexpr auto kCompilerFactories = std::to_array<Name>({
    {"torch._dynamo.optimize", kDotted}, {"torch._dynamo.optimize_assert", kDotted},
});
static_assert(detail::sorted(kCompilerFactories));

}  // namespace

bool elementwise_module(std::string_view class_name) { return module_within(class_name, ModuleKind::Elementwise); }
bool rowwise_module(std::string_view class_name) { return module_within(class_name, ModuleKind::Rowwise); }
bool stateless_module(std::string_view class_name) { return module_within(class_name, ModuleKind::Stateless); }
bool tensor_module(std::string_view class_name) { return module_within(class_name, ModuleKind::OneTensor); }
bool new_tensor_module(std::string_view class_name) { return detail::listed(kNewTensorModules, class_name); }

bool other_torch_module(std::string_view dotted) {
    return dotted.starts_with("torch.ao.nn.") || detail::listed(kOtherTorchModules, dotted);
}

bool untraced_api(std::string_view dotted) { return detail::listed(kUntracedApis, dotted); }
bool opaque_api(std::string_view dotted) { return detail::listed(kOpaqueApis, dotted); }

bool compile_api(std::string_view dotted, bool factory) {
    return detail::listed(kCompileApis, dotted) || (factory && detail::listed(kCompilerFactories, dotted));
}

// The shipped table (src/knowledge/module_table.txt): lines are `module: Class Class ...`; `#`
// starts a comment line.
const std::unordered_map<std::string, std::vector<std::string>>& installed_module_classes() {
    static const auto classes = [] {
        std::unordered_map<std::string, std::vector<std::string>> t;
        std::string_view text = table::module_table_txt;
        while (!text.empty()) {
            const auto eol = text.find('\n');
            std::string_view line = text.substr(0, eol);
            text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
            const auto colon = line.find(':');
            if (line.empty() || line.front() == '#' || colon == std::string_view::npos) continue;
            const std::string module(line.substr(0, colon));
            std::string_view rest = line.substr(colon + 1);
            while (!rest.empty()) {
                const auto start = rest.find_first_not_of(' ');
                if (start == std::string_view::npos) break;
                rest = rest.substr(start);
                const auto end = rest.find(' ');
                t[std::string(rest.substr(0, end))].push_back(module);
                rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
            }
        }
        return t;
    }();
    return classes;
}

namespace detail {

void add_module_tables(std::vector<Table>& out) {
    out.push_back(table("module_classes", "torch 2.12.1 torch/nn/modules/", kModuleClasses));
    out.push_back(table("new_tensor_modules", "torch 2.12.1 torch/nn/modules/", kNewTensorModules));
    out.push_back(table("other_torch_modules", "torch 2.12.1 torch/jit, torch/fx, torch/_dynamo", kOtherTorchModules));
    out.push_back(table("untraced_apis", "torch 2.12.1 torch/compiler, torch/_dynamo/decorators.py; torch 2.0-2.1",
                        kUntracedApis));
    out.push_back(table("opaque_apis", "torch 2.12.1 torch/compiler, torch/_dynamo/decorators.py", kOpaqueApis));
    out.push_back(table("compile_apis", "torch 2.12.1 torch/compiler/__init__.py", kCompileApis));
    out.push_back(table("compiler_factories", "torch 2.12.1 torch/_dynamo/eval_frame.py", kCompilerFactories));
}

}  // namespace detail

}  // namespace graphmend::knowledge
