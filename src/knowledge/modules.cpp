// torch.nn classes, Dynamo's APIs and the installed nn.Module classes: see
// include/graphmend/knowledge.hpp. Where each entry is defined (Where) is checked against
// torch 2.12.1 by tests/python/test_knowledge.py.
#include <string>

#include "graphmend/module_table.hpp"
#include "table.hpp"

namespace graphmend::knowledge {

namespace {

// torch.nn modules whose forward keeps no state and draws no random numbers (no running
// statistics, no dropout). Source: torch 2.12.1's torch/nn/modules/ (each forward).
constexpr auto kStatelessModules = std::to_array<Name>({
    {"Bilinear", kNn}, {"Conv1d", kNn}, {"Conv2d", kNn}, {"Conv3d", kNn}, {"ConvTranspose1d", kNn},
    {"ConvTranspose2d", kNn}, {"ConvTranspose3d", kNn}, {"ELU", kNn}, {"Embedding", kNn}, {"Flatten", kNn},
    {"GELU", kNn}, {"GroupNorm", kNn}, {"Hardtanh", kNn}, {"Identity", kNn}, {"LayerNorm", kNn},
    {"LeakyReLU", kNn}, {"Linear", kNn}, {"LogSoftmax", kNn}, {"Mish", kNn}, {"RMSNorm", kNn}, {"ReLU", kNn},
    {"SiLU", kNn}, {"Sigmoid", kNn}, {"Softmax", kNn}, {"Softplus", kNn}, {"Tanh", kNn}, {"Unflatten", kNn},
});
static_assert(detail::sorted(kStatelessModules));

// torch.nn modules whose forward returns one tensor (the losses whatever their reduction).
// Source: torch 2.12.1's torch/nn/modules/ (each forward's return).
constexpr auto kTensorModules = std::to_array<Name>({
    {"AdaptiveAvgPool1d", kNn}, {"AdaptiveAvgPool2d", kNn}, {"AvgPool1d", kNn}, {"AvgPool2d", kNn},
    {"BCELoss", kNn}, {"BCEWithLogitsLoss", kNn}, {"BatchNorm1d", kNn}, {"BatchNorm2d", kNn},
    {"BatchNorm3d", kNn}, {"Bilinear", kNn}, {"CTCLoss", kNn}, {"Conv1d", kNn}, {"Conv2d", kNn},
    {"Conv3d", kNn}, {"ConvTranspose1d", kNn}, {"ConvTranspose2d", kNn}, {"ConvTranspose3d", kNn},
    {"CosineEmbeddingLoss", kNn}, {"CrossEntropyLoss", kNn}, {"Dropout", kNn}, {"Dropout1d", kNn},
    {"Dropout2d", kNn}, {"ELU", kNn}, {"Embedding", kNn}, {"Flatten", kNn}, {"GELU", kNn},
    {"GaussianNLLLoss", kNn}, {"GroupNorm", kNn}, {"Hardtanh", kNn}, {"HingeEmbeddingLoss", kNn},
    {"HuberLoss", kNn}, {"Identity", kNn}, {"KLDivLoss", kNn}, {"L1Loss", kNn}, {"LayerNorm", kNn},
    {"LeakyReLU", kNn}, {"Linear", kNn}, {"LogSoftmax", kNn}, {"MSELoss", kNn}, {"MarginRankingLoss", kNn},
    {"MaxPool1d", kNn}, {"MaxPool2d", kNn}, {"Mish", kNn}, {"MultiLabelMarginLoss", kNn},
    {"MultiLabelSoftMarginLoss", kNn}, {"MultiMarginLoss", kNn}, {"NLLLoss", kNn}, {"PReLU", kNn},
    {"PoissonNLLLoss", kNn}, {"RMSNorm", kNn}, {"ReLU", kNn}, {"Sequential", kNn}, {"SiLU", kNn},
    {"Sigmoid", kNn}, {"SmoothL1Loss", kNn}, {"SoftMarginLoss", kNn}, {"Softmax", kNn}, {"Softplus", kNn},
    {"Tanh", kNn}, {"TripletMarginLoss", kNn}, {"Unflatten", kNn}, {"Upsample", kNn},
});
static_assert(detail::sorted(kTensorModules));

// torch.nn modules whose forward works on the last dimension of each row: Linear, the norms
// over the last dimension, and the activations. Source: torch 2.12.1's torch/nn/modules/.
constexpr auto kRowwiseModules = std::to_array<Name>({
    {"CELU", kNn}, {"ELU", kNn}, {"GELU", kNn}, {"GLU", kNn}, {"Hardsigmoid", kNn}, {"Hardswish", kNn},
    {"Hardtanh", kNn}, {"Identity", kNn}, {"LayerNorm", kNn}, {"LeakyReLU", kNn}, {"Linear", kNn},
    {"LogSigmoid", kNn}, {"Mish", kNn}, {"RMSNorm", kNn}, {"ReLU", kNn}, {"ReLU6", kNn}, {"SELU", kNn},
    {"SiLU", kNn}, {"Sigmoid", kNn}, {"Softplus", kNn}, {"Tanh", kNn},
});
static_assert(detail::sorted(kRowwiseModules));

// torch.nn modules that work element by element (the activations of torch 2.12.1's
// torch/nn/modules/activation.py without a dimension, and Identity).
constexpr auto kElementwiseModules = std::to_array<Name>({
    {"CELU", kNn}, {"ELU", kNn}, {"GELU", kNn}, {"Hardsigmoid", kNn}, {"Hardswish", kNn}, {"Hardtanh", kNn},
    {"Identity", kNn}, {"LeakyReLU", kNn}, {"LogSigmoid", kNn}, {"Mish", kNn}, {"ReLU", kNn}, {"ReLU6", kNn},
    {"SELU", kNn}, {"SiLU", kNn}, {"Sigmoid", kNn}, {"Softplus", kNn}, {"Tanh", kNn},
});
static_assert(detail::sorted(kElementwiseModules));

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

bool stateless_module(std::string_view class_name) { return detail::listed(kStatelessModules, class_name); }
bool tensor_module(std::string_view class_name) { return detail::listed(kTensorModules, class_name); }
bool rowwise_module(std::string_view class_name) { return detail::listed(kRowwiseModules, class_name); }
bool elementwise_module(std::string_view class_name) { return detail::listed(kElementwiseModules, class_name); }

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
    out.push_back(table("stateless_modules", "torch 2.12.1 torch/nn/modules/", kStatelessModules));
    out.push_back(table("tensor_modules", "torch 2.12.1 torch/nn/modules/", kTensorModules));
    out.push_back(table("rowwise_modules", "torch 2.12.1 torch/nn/modules/", kRowwiseModules));
    out.push_back(table("elementwise_modules", "torch 2.12.1 torch/nn/modules/activation.py", kElementwiseModules));
    out.push_back(table("other_torch_modules", "torch 2.12.1 torch/jit, torch/fx, torch/_dynamo", kOtherTorchModules));
    out.push_back(table("untraced_apis", "torch 2.12.1 torch/compiler, torch/_dynamo/decorators.py; torch 2.0-2.1",
                        kUntracedApis));
    out.push_back(table("opaque_apis", "torch 2.12.1 torch/compiler, torch/_dynamo/decorators.py", kOpaqueApis));
    out.push_back(table("compile_apis", "torch 2.12.1 torch/compiler/__init__.py", kCompileApis));
    out.push_back(table("compiler_factories", "torch 2.12.1 torch/_dynamo/eval_frame.py", kCompilerFactories));
}

}  // namespace detail

}  // namespace graphmend::knowledge
