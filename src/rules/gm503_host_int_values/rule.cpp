// Rule GM503 host-int-values.
//
// What it does: finds Python ints read back from a tensor that was built from them, in code
// that runs under torch.compile (the multi-scale deformable attention of Grounding DINO,
// Deformable DETR, RT-DETR, ...):
//     spatial_shapes_list.append((height, width))
//     spatial_shapes = torch.as_tensor(spatial_shapes_list, dtype=torch.long, device=...)
//     ...
//     for level, (height, width) in enumerate(spatial_shapes):      # GB0124 where they are sizes
// and reads the list instead: where the tensor is made, through a sibling parameter that every
// call in the project passes the list in (`spatial_shapes_list`), or, for a helper that only
// iterates its parameter, by passing the list at each call (src/rules/gm503_host_int_values/host_ints.hpp,
// src/rules/gm503_host_int_values/host_ints.cpp say what is proven).
//
// Why: each element of the tensor is a 0-d tensor; used as a size, a slice bound or a step it
// is read into Python there (GB0124, unless capture_scalar_outputs).
//
// Fix safety: safe. The list holds the values the tensor was made from, neither changes
// afterwards, and each element is used only where a Python int and a 0-d long tensor give
// the same result. Refused, with the reason, where that is not shown.
#include "host_ints.hpp"
#include "graphmend/rule.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM503", "host-int-values", "ints read back from a tensor built from them use the Python values",
                     {.dynamic_shape = true}};

class HostIntValuesRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    // The reads its sites report (loops, comprehensions, `.tolist()`): those nodes only.
    void claim(const Context& ctx, Claims& out) const override {
        for (const Node& def : ctx.project.scope_of(ctx.file)) {
            for (const auto& read : match_host_reads(ctx, def)) {
                for (const Node& r : read.reads) out.add(r, ClaimKind::ReportedNode);
            }
        }
    }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for (const Node& def : ctx.project.scope_of(ctx.file)) {
            for (auto& read : match_host_reads(ctx, def)) {
                Site site = new_site(kInfo, read.site, one_line(read.what), "GB0124");
                if (!read.refused.empty()) {
                    site.reason = std::move(read.refused);
                } else {
                    site.fix = Fix{std::move(read.edits), Applicability::Safe, {}};
                    site.detail = std::move(read.detail);
                }
                out.push_back(std::move(site));
            }
        }
    }
};

}  // namespace

std::unique_ptr<Rule> make_host_int_values_rule() { return std::make_unique<HostIntValuesRule>(); }

}  // namespace graphmend::rules
