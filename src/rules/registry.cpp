// The rule registry: one line per rule.
#include "graphmend/rule.hpp"

namespace graphmend::rules {

std::unique_ptr<Rule> make_deferred_side_effect_rule();
std::unique_ptr<Rule> make_predicated_control_flow_rule();
std::unique_ptr<Rule> make_compile_skipped_default_rule();
std::unique_ptr<Rule> make_predicated_validation_rule();
std::unique_ptr<Rule> make_static_expert_dispatch_rule();
std::unique_ptr<Rule> make_data_dependent_shape_rule();
std::unique_ptr<Rule> make_static_row_subset_rule();
std::unique_ptr<Rule> make_host_int_values_rule();
std::unique_ptr<Rule> make_static_span_loop_rule();

const std::vector<std::unique_ptr<Rule>>& registry() {
    static const std::vector<std::unique_ptr<Rule>> rules = [] {
        std::vector<std::unique_ptr<Rule>> r;
        r.push_back(make_deferred_side_effect_rule());
        r.push_back(make_predicated_control_flow_rule());
        r.push_back(make_compile_skipped_default_rule());
        r.push_back(make_predicated_validation_rule());
        r.push_back(make_data_dependent_shape_rule());
        r.push_back(make_static_expert_dispatch_rule());
        r.push_back(make_static_row_subset_rule());
        r.push_back(make_host_int_values_rule());
        r.push_back(make_static_span_loop_rule());
        return r;
    }();
    return rules;
}

}  // namespace graphmend::rules
