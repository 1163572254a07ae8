// Rule GM101 deferred-side-effect.
//
// What it does: finds `print(...)`, logging calls on module-level loggers, bound in the file
// or imported from another (analysis::Project::imported_logger)
// (debug/info/warning/warn/warning_once/error/exception/critical/fatal/log) and
// `warnings.warn(...)` in code that runs under torch.compile, and hands each message to
// graphmend's runtime (src/runtime/deferred_effects.py), which delivers it from inside
// the FX graph when the graph runs.
//
// Why: Dynamo cannot trace these calls (torch 2.12: print GB0059, logging GB0291,
// warnings.warn GB0007 "skipped builtin"), so each one splits the graph.
//
// Example:  print(f"mean={h.mean():.4f}")
//     ->    _graphmend_print(_graphmend_lazy("fmt", "mean={0:.4f}", h.mean()))
//
// Fix safety: safe. Eagerly the helpers make the original call (same text, stream,
// logger, level, category and location). Compiled, the message is produced once per
// call, in program order, before the compiled call returns, formatted from the values
// the tensors had at the call; records and warnings carry the original file, line and
// function. Refused: calls whose value is used, `logger.exception` and `exc_info` /
// `stack_info` / `stacklevel` (they read the live stack or exception), warnings with a
// stacklevel other than 1 or a `source`, prints to a file other than sys.stdout /
// sys.stderr, and `**kwargs` whose keys cannot be checked.
#include <fmt/format.h>

#include <algorithm>

#include "rules/support/deferred_call.hpp"
#include "rules/support/lazy_message.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM101", "deferred-side-effect",
                     "print / logging / warnings.warn under torch.compile, delivered from inside the FX graph"};

// What the user can change so that a refused message can be deferred (its help line), keyed by
// the refusal's wording (src/rules/support/deferred_call.cpp), or "".
std::string refusal_help(std::string_view reason) {
    if (reason.starts_with("stacklevel=")) {
        return "drop stacklevel= (the warning then names this line), or warn outside the compiled function";
    }
    if (reason.find("the live stack or exception") != std::string_view::npos ||
        reason.starts_with("logger.exception")) {
        return "log outside the compiled function, where the stack and the exception are there to read";
    }
    if (reason.starts_with("print(file=")) return "print to sys.stdout or sys.stderr, or outside the compiled function";
    if (reason.starts_with("the call's value is used")) return "call it as a statement of its own, discarding its value";
    if (reason.starts_with("**kwargs")) return "pass the keyword arguments by name";
    return "";
}

class DeferredSideEffectRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node&) {
            if (!n.is("call")) return true;
            if (const auto deferred = deferred_call(ctx, n)) out.push_back(site_for(n, *deferred));
            return true;
        });
    }

private:
    static Site site_for(const Node& call, const DeferredCall& d) {
        const Node fn = call.field("function");
        Site site = new_site(kInfo, call, fmt::format("{}(...)", fn.text()),
                             d.kind == "print" ? "GB0059" : d.kind == "log" ? "GB0291" : "GB0007");
        site.reason = d.refused;
        if (!site.reason.empty()) {
            site.help = refusal_help(site.reason);
            return site;
        }
        site.detail = d.detail;

        Fix fix;
        fix.effect_only = true;
        fix.runtime.emplace_back(runtime::stem::deferred_effects);
        const Node open = call.field("arguments");
        if (d.kind == "print") {
            fix.edits.push_back({fn.begin(), fn.end(), std::string(runtime::name::print)});
        } else {
            // `_graphmend_log("logger", "method", lambda: None, "function", ` / `_graphmend_warn(lambda:
            // None, `: the lambda gives the runtime the call's line (DeferredCall::leading_in_place).
            const std::string_view helper = d.kind == "log" ? runtime::name::log : runtime::name::warn;
            fix.edits.push_back({fn.begin(), open.begin() + 1, fmt::format("{}({}, ", helper, d.leading_in_place)});
            auto& e = fix.edits.back();
            const std::string_view rest = std::string_view(call.source().text()).substr(open.begin() + 1);
            const auto args = open.named_children();
            if (std::all_of(args.begin(), args.end(), [](const Node& a) { return a.is("comment"); })) {
                e.text.resize(e.text.size() - 2);  // `f(, )` is not Python
            } else if (rest.starts_with("\n") || rest.starts_with("\r\n")) {
                e.text.pop_back();  // no trailing blank before the line break
            }
        }
        for (const Node& a : d.positional) {
            if (auto deferred = defer_message_expression(a)) fix.edits.push_back({a.begin(), a.end(), *deferred});
        }
        fix.condition = d.condition;
        site.fix = std::move(fix);
        return site;
    }
};

}  // namespace

std::unique_ptr<Rule> make_deferred_side_effect_rule() { return std::make_unique<DeferredSideEffectRule>(); }

}  // namespace graphmend::rules
