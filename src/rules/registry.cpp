// The rule registry: the rules of src/rules/registry.def, one line each, in its order.
#include "graphmend/rule.hpp"

namespace graphmend::rules {

#define GRAPHMEND_RULE(code, name) std::unique_ptr<Rule> make_##name##_rule();
#include "rules/registry.def"
#undef GRAPHMEND_RULE

const std::vector<std::unique_ptr<Rule>>& registry() {
    static const std::vector<std::unique_ptr<Rule>> rules = [] {
        std::vector<std::unique_ptr<Rule>> r;
#define GRAPHMEND_RULE(code, name) r.push_back(make_##name##_rule());
#include "rules/registry.def"
#undef GRAPHMEND_RULE
        return r;
    }();
    return rules;
}

}  // namespace graphmend::rules
