// GM201: the names the branches assign that the code after the `if` reads (see
// predicated_control_flow.hpp), and the Python constants among their values.
#include <algorithm>
#include <set>

#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

// True when every branch (and an else) has a statement naming `name`.
bool set_everywhere(const Plan& plan, const std::string& name) {
    return plan.has_else && std::all_of(plan.branches.begin(), plan.branches.end(), [&](const Branch& b) {
               return std::any_of(b.body.begin(), b.body.end(), [&](const Statement& s) { return s.name == name; });
           });
}

// A live name that some branch sets to a Python constant: the runtime could never select
// it (it keeps Python values as they are), so say so here. Unless the constants are True /
// False, the name is the only live one, the function only ever tests it for truth, and it
// may be a tensor where no branch sets a constant (`accept_step = error_ratio <= 1`, then
// `if dt > self.max_step: accept_step = False`): then the runtime selects the constant as a
// one-element bool tensor (plan.truth), which every read answers alike.
std::string constant_refusal(const Context& ctx, const Node& def, Plan& plan, const std::string& name) {
    std::set<std::string> values;
    bool literal = false;
    bool all_bool = true;
    bool some_value = !set_everywhere(plan, name);  // the path that leaves the name as it was
    for (const auto& b : plan.branches) {
        for (const auto& st : b.body) {
            if (st.kind != Statement::Assign || st.name != name || !st.value) continue;
            const bool lit = is_literal(st.value);
            literal = literal || lit;
            some_value = some_value || !lit;
            all_bool = all_bool && (!lit || st.value.is("true") || st.value.is("false"));
            values.insert(text(st.value));
        }
    }
    if (!literal || (values.size() <= 1 && set_everywhere(plan, name))) return "";
    if (all_bool && some_value && plan.live.size() == 1) {
        if (const auto read = truth_reads_only(def, name); read && *read) {
            constexpr std::uint16_t python = analysis::kNumber | analysis::kBool | analysis::kNone | analysis::kStr;
            if (!ctx.values.eval(ctx.file, *read).only(python)) {
                plan.truth = name;
                return "";
            }
        }
    }
    return fmt::format("`{}` is set to a Python constant in a branch: a select cannot choose it without making it "
                       "a tensor",
                       name);
}

}  // namespace

// The names the branches assign that the code after the `if` reads: each with a value on
// every path, and none a Python constant.
std::string find_live(const Context& ctx, const Node& def, const Scope& scope, Plan& plan) {
    if (plan.all_return) return "";
    auto& live = plan.live;
    for (const auto& b : plan.branches) {
        for (const auto& st : b.body) {
            if (scope.read_outside.contains(st.name) && std::find(live.begin(), live.end(), st.name) == live.end()) {
                live.push_back(st.name);
            }
        }
    }
    if (live.empty() && plan.updates.empty()) return "no value of the branches is used after the `if`";
    for (const auto& name : live) {
        if (auto why = constant_refusal(ctx, def, plan, name); !why.empty()) return why;
    }
    for (const auto& name : live) {
        if (!set_everywhere(plan, name) && !scope.bound_before.contains(name)) {
            return fmt::format("`{}` has no value before the `if` on the path that does not assign it", name);
        }
    }
    return "";
}

}  // namespace graphmend::rules::control_flow
