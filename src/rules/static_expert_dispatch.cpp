// Rule GM501 static-expert-dispatch.
//
// What it does: finds expert dispatch loops in code that runs under torch.compile (the
// mixture-of-experts form of Mixtral, Qwen-MoE, OLMoE, PhiMoE, Jamba, DBRX, DeepSeek-V3 and
// their Hub copies; see include/graphmend/expert_dispatch.hpp):
//     for e in range(N):                                   # or `for e in hit:` over the
//         idx, top_x = torch.where(expert_mask[e])         # experts a one_hot mask hits
//         ... rows gathered by top_x, computed on row by row ...
//         out.index_add_(0, top_x, SRC)
// and rewrites three spans of it (src/runtime/static_dispatch.py):
//     (idx, top_x), _graphmend_valid = _graphmend_pairs(expert_mask[e], N)
//     out.index_add_(0, top_x, _graphmend_keep(_graphmend_valid, SRC))
//     hit = range(len(expert_mask)) if _graphmend_dispatch_all(expert_mask) else <as written>
// Traced without autograd recording, and within the measured cost limit, every pair of the
// mask is taken and the ones it does not hold add zeros: static shapes, no graph break.
// Otherwise (eagerly too) the loop runs as written.
//
// Why: one-argument torch.where / nonzero have data-dependent output shapes (GB0036), and
// the hit list is read out with .tolist() (GB0124); a break inside a loop makes Dynamo skip
// the whole frame (GB7000).
//
// Fix safety: safe. Each pair's row is computed by the same row-wise operations and added in
// the same order, and the extra pairs add zeros. Only the rows of an expert's matrix
// products change in number, which on some BLAS kernels changes the last bits of a row
// (docs/RESULTS.md gives the per-model comparison). Refused, with the reason, where that
// cannot be shown: computation that is not row by row (or a Dropout), a value computed from
// the pairs read after the loop, a statement the extra pairs would repeat, a loop over
// anything but a range or a hit list.
#include <fmt/format.h>

#include "graphmend/expert_dispatch.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/runtime_sources.hpp"
#include "graphmend/site.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM501", "static-expert-dispatch",
                     "mixture-of-experts dispatch loops rewritten to static shapes"};

std::string text(const Node& n) { return std::string(n.text()); }

class StaticExpertDispatchRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (!n.is("for_statement")) return true;
            if (auto d = match_expert_dispatch(ctx, def, n)) out.push_back(site_for(*d));
            return true;
        });
    }

private:
    static Site site_for(const ExpertDispatch& d) {
        Site site = new_site(kInfo, d.pairs_call,
                             one_line(fmt::format("expert dispatch over {}", d.pairs_call.text())), "GB0036");
        if (!d.refused.empty()) {
            site.reason = d.refused;
            return site;
        }
        const Node a = d.pairs.named_children()[0];
        const Node left = a.field("left");
        const std::string targets = left.is("pattern_list") ? fmt::format("({})", left.text()) : text(left);
        std::vector<edits::Edit> edits;
        if (d.hit_list) {
            const Node right = assignment_right(d.hit_list);
            edits.push_back({right.begin(), right.end(),
                             fmt::format("range(len({0})) if _graphmend_dispatch_all({0}) else {1}", d.stacked,
                                         right.text())});
        }
        edits.push_back({a.begin(), a.end(),
                         fmt::format("{}, _graphmend_valid = _graphmend_pairs({}, {})", targets, d.mask.text(),
                                     d.steps)});
        edits.push_back({d.source.begin(), d.source.end(),
                         fmt::format("_graphmend_keep(_graphmend_valid, {})", d.source.text())});
        site.fix = Fix{std::move(edits), Applicability::Safe, {runtime::stem::static_dispatch}};
        site.detail = fmt::format(
            "every candidate pair of the mask is taken, the others adding zeros, when no gradient is recorded and "
            "{} x the mask's size is within the measured limit; otherwise the loop runs as written",
            d.steps);
        return site;
    }

    static Node assignment_right(const Node& stmt) { return stmt.named_children()[0].field("right"); }
};

}  // namespace

std::unique_ptr<Rule> make_static_expert_dispatch_rule() { return std::make_unique<StaticExpertDispatchRule>(); }

}  // namespace graphmend::rules
