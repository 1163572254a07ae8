// Rule GM402 untraceable-call.
//
// What it does: finds calls, in code that runs under torch.compile, of functions Dynamo does
// not trace (knowledge::untraceable_call): a function implemented in C that it cannot trace
// into (`bisect.bisect(grid, t)`, `integrate.quad(f, a, b)` of scipy), or any function of a
// module in its third-party skip list (`tqdm.tqdm(...)`, `pandas.*`, `sklearn.*`). It reports
// each one, refused; it emits nothing.
//
// Why: Dynamo wraps such a function as skipped and breaks the graph at the call (GB0007,
// "Attempted to call function marked as skipped", torch 2.12.1): the call runs eagerly
// between two graphs, with a graph break per call (scipy's quad: one per C call inside it).
//
// Fix safety: refused always. No source rewrite keeps the call's behaviour in the graph:
// the result comes from C code or another library. The report says what would remove the
// break: the same computation in torch ops, or the call moved out of the compiled function.
//
// The rule's page is docs/rules/GM402.md, its golden fixtures tests/fixtures/untraceable-call/.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graphmend/knowledge.hpp"
#include "graphmend/rule.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{.code = "GM402",
                     .name = "untraceable-call",
                     .summary = "calls Dynamo does not trace (C functions, skipped libraries), reported"};

class UntraceableCallRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& /*def*/) {
            if (!n.is("call")) return true;
            const Node fn = n.field("function");
            const std::string dotted = ctx.project.external_name(ctx.file, fn);
            if (dotted.empty()) return true;
            const auto call = knowledge::untraceable_call(dotted);
            if (!call) return true;
            Site site = new_site(kInfo, n, one_line(fmt::format("{}(...)", fn.text())), "GB0007");
            const bool c_code = call->kind == knowledge::UntraceableCall::Kind::CFunction;
            site.reason = c_code ? fmt::format("`{}` runs C code, which Dynamo cannot trace: the call runs eagerly "
                                               "between two graphs",
                                               dotted)
                                 : fmt::format("Dynamo skips every function of `{}` (its third-party skip list): "
                                               "the call runs eagerly between two graphs",
                                               call->name);
            site.help = c_code ? "the same computation in torch ops, or the call moved out of the compiled "
                                 "function, would remove the break"
                               : "the call moved out of the compiled function would leave the graph whole";
            out.push_back(std::move(site));
            return true;
        });
    }
};

}  // namespace

std::unique_ptr<Rule> make_untraceable_call_rule() { return std::make_unique<UntraceableCallRule>(); }

}  // namespace graphmend::rules
