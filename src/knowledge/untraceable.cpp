// Calls Dynamo does not trace: see knowledge::untraceable_call in include/graphmend/knowledge.hpp.
#include <array>
#include <string>

#include "table.hpp"

namespace graphmend::knowledge {

namespace {

// Top-level modules every function of which Dynamo skips: THIRDPARTY_SKIPLIST of
// torch/_dynamo/trace_rules.py (torch 2.12.1), less numpy, whose calls Dynamo traces
// through torch._numpy. Sorted.
constexpr std::array<Name, 16> kSkippedModules{{
    {"fx2trt_oss", kDotted},
    {"hypothesis", kDotted},
    {"networkx", kDotted},
    {"onnx", kDotted},
    {"onnx_tf", kDotted},
    {"onnxruntime", kDotted},
    {"pandas", kDotted},
    {"sklearn", kDotted},
    {"tabulate", kDotted},
    {"tensorflow", kDotted},
    {"tensorrt", kDotted},
    {"torch2trt", kDotted},
    {"tqdm", kDotted},
    {"tree", kDotted},
    {"tvm", kDotted},
    {"xarray", kDotted},
}};
static_assert(detail::sorted(kSkippedModules));

// Functions implemented in C that Dynamo cannot trace into, by dotted name: measured with
// torch 2.12.1 (GB0007, "Attempted to call function marked as skipped"): bisect.bisect on a
// list of floats; scipy.integrate.quad (scipy 1.17.1: its Python part calls the C
// quadrature _quadpack._qagse). The bisect module's other functions are the same C module.
// Sorted.
constexpr std::array<Name, 7> kCFunctions{{
    {"bisect.bisect", kDotted},
    {"bisect.bisect_left", kDotted},
    {"bisect.bisect_right", kDotted},
    {"bisect.insort", kDotted},
    {"bisect.insort_left", kDotted},
    {"bisect.insort_right", kDotted},
    {"scipy.integrate.quad", kDotted},
}};
static_assert(detail::sorted(kCFunctions));

}  // namespace

std::optional<UntraceableCall> untraceable_call(std::string_view dotted) {
    if (detail::listed(kCFunctions, dotted)) return UntraceableCall{UntraceableCall::Kind::CFunction, std::string(dotted)};
    const std::string_view top = dotted.substr(0, dotted.find('.'));
    if (top.size() < dotted.size() && detail::listed(kSkippedModules, top)) {
        return UntraceableCall{UntraceableCall::Kind::SkippedModule, std::string(top)};
    }
    return std::nullopt;
}

namespace detail {

void add_untraceable_tables(std::vector<Table>& out) {
    out.push_back(table("skipped_modules", "torch 2.12.1 torch/_dynamo/trace_rules.py THIRDPARTY_SKIPLIST, less numpy",
                        kSkippedModules));
    out.push_back(table("c_functions", "measured: Dynamo GB0007, torch 2.12.1 (bisect; scipy 1.17.1 quad)",
                        kCFunctions));
}

}  // namespace detail

}  // namespace graphmend::knowledge
