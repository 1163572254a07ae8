// Dynamo's settings for breaks no rewrite removes: see knowledge::setting_for in
// include/graphmend/knowledge.hpp.
#include "graphmend/knowledge.hpp"

namespace graphmend::knowledge {

// Measured with torch 2.12.1 by benchmarks/dynamo_settings.py (docs/results/dynamo-settings.json:
// ScalarRead covers `.item()`, `int()` as a size, integer `.tolist()`, a slice bound and a loop
// whose elements are sizes;
// tests/python/test_knowledge.py measures again): torch._dynamo.explain of one function per
// kind, with each setting through its environment variable (torch/_dynamo/config.py reads
// TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS and TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS).
// Costs: with either setting, a Python test on the captured value or size still breaks
// ("Could not guard on data-dependent expression", measured the same way).
SettingEffect setting_for(DataBreak kind) {
    switch (kind) {
    case DataBreak::ScalarRead:
        return {"torch._dynamo.config.capture_scalar_outputs = True", "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1",
                "the value becomes a symbol of the graph, whose sizes then follow the data, and a Python test on it "
                "still breaks"};
    case DataBreak::DynamicShape:
        return {"torch._dynamo.config.capture_dynamic_output_shape_ops = True",
                "TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS=1",
                "the op stays in the graph with a size known only when it runs, and a Python test on that size "
                "still breaks"};
    case DataBreak::IndexRead:
    case DataBreak::DataLoop:
        break;
    }
    return {};
}

}  // namespace graphmend::knowledge
