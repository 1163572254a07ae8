// Rule GM501 static-expert-dispatch.
//
// What it does: finds expert dispatch loops in code that runs under torch.compile (the
// mixture-of-experts form of Mixtral, Qwen-MoE, OLMoE, PhiMoE, Jamba, DBRX, DeepSeek-V3 and
// their Hub copies; see src/rules/gm501_static_expert_dispatch/expert_dispatch.hpp):
//     for e in range(N):                                   # or `for e in hit:` over the
//         idx, top_x = torch.where(expert_mask[e])         # experts a one_hot mask hits
//         ... rows gathered by top_x, computed on row by row ...
//         out.index_add_(0, top_x, SRC)
// and rewrites three spans of it (src/runtime/static_dispatch.py):
//     (idx, top_x), _graphmend_valid = _graphmend_pairs(expert_mask[e], N)
//     out.index_add_(0, top_x, _graphmend_keep(_graphmend_valid, SRC))
//     hit = range(len(expert_mask)) if _graphmend_dispatch_all(expert_mask) else <as written>
// or, for transformers 5.x's loop over the rows of `hit = C.nonzero()`, the hit list's statement
// becomes `_graphmend_hits = C` and the loop's iterable
//     [[e] for e in range(len(_graphmend_hits))] if _graphmend_dispatch_all(...) else _graphmend_hits.nonzero()
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
#include <fmt/ranges.h>

#include "expert_dispatch.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/site.hpp"
#include "split_dispatch.hpp"
#include <algorithm>

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM501", "static-expert-dispatch", "mixture-of-experts dispatch loops rewritten to static shapes",
                     {.dynamic_shape = true, .fallback_block = runtime::stem::static_dispatch}};

// When the split-size and sorted-slices forms remove their break (the runtime's cost rule:
// rows are the rows every expert runs on in the static form).
constexpr std::string_view kRowsCondition = "no autograd, experts x rows <= 64, experts <= rows";

// The local holding the tensor a hit list is taken from (`C` of `C.nonzero(...)...tolist()`).
constexpr std::string_view kHits = "_graphmend_hits";

class StaticExpertDispatchRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    // What its sites report and rewrite: the sizes a split-size dispatch reads out; a sorted-slices
    // walk's readout, iterable and slices (fixed or not), and its `if N == 0: continue` test,
    // which a fix rewrites to `_graphmend_no_rows(N)`; a mask dispatch's pairs call, the reads
    // and writes its masks pick rows for and, fixed, its hit list or iterable.
    void claim(const Context& ctx, Claims& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (n.is("expression_statement")) {
                if (const auto d = match_split_dispatch(ctx, def, n)) out.add(d->tolist, ClaimKind::Reported);
                return false;
            }
            if (!n.is("for_statement")) return true;
            if (const auto d = match_sorted_slices(ctx, def, n)) {
                out.add(d->readout, ClaimKind::Reported);
                out.add(n.field("right"), ClaimKind::Reported);
                for (const Node& s : d->slices) out.add(s, ClaimKind::Reported);
                if (d->refused.empty() && d->skip) out.add(d->skip, ClaimKind::Rewritten);
                return true;
            }
            if (const auto d = match_expert_dispatch(ctx, def, n)) {
                if (d->pairs_call) out.add(d->pairs_call, ClaimKind::Reported);
                for (const auto& [g, pos] : d->gathers) out.add(g, ClaimKind::Reported);
                for (const auto& [p, pos] : d->puts) out.add(p.field("left"), ClaimKind::Reported);
                if (d->refused.empty() && d->hit_list) out.add(d->hit_list, ClaimKind::Reported);
                if (d->refused.empty() && d->hit_rows) out.add(d->loop.field("right"), ClaimKind::Reported);
            }
            return true;
        });
    }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (n.is("expression_statement")) {
                if (auto d = match_split_dispatch(ctx, def, n)) out.push_back(split_site(*d));
                return true;
            }
            if (!n.is("for_statement")) return true;
            if (auto d = match_sorted_slices(ctx, def, n)) {
                out.push_back(sorted_site(*d));
                return true;
            }
            if (auto d = match_expert_dispatch(ctx, def, n)) out.push_back(site_for(*d));
            return true;
        });
    }

private:
    // `, lambda e: (_graphmend_has(X, e),)` (and `, True` when it takes the loop's row): the
    // static form runs every index of the hit mask only where each one picks an element.
    static std::string picks_argument(const ExpertDispatch& d) {
        if (d.picks.empty()) return "";
        return fmt::format(", {}{}", d.picks, d.picks_row ? ", True" : "");
    }

    static Site site_for(const ExpertDispatch& d) {
        const bool pairs = d.kind == ExpertDispatch::Kind::Pairs;
        const std::string what = pairs ? fmt::format("expert dispatch over {}", d.pairs_call.text())
                                       : fmt::format("expert dispatch by the mask {}", d.anchor.text());
        Site site = new_site(kInfo, d.anchor, one_line(what), "GB0036");
        if (!d.refused.empty()) {
            site.reason = d.refused;
            return site;
        }
        // The arguments every helper call of this loop ends with: the trip count, the hit
        // list's gate, and the module whose eval mode a Dropout needs.
        std::string tail = d.steps;
        if (d.hit_list) tail += fmt::format(", {}[{}]", kHits, d.hit_index);
        if (d.needs_eval) tail += ", module=self";
        std::vector<edits::Edit> edits;
        if (d.hit_rows) {
            // `hit = C.nonzero()` keeps C, and the loop picks its rows: every index as `[e]`, or
            // C's rows as written (`.nonzero()` moved to the loop, outside any `torch.no_grad()`
            // around the hit list, so that the choice sees the loop's grad mode).
            const Node a = d.hit_list.named_children()[0];
            const Node right = a.field("right");
            std::string rows(right.text());
            rows.replace(d.hits_node.begin() - right.begin(), d.hits_node.end() - d.hits_node.begin(), kHits);
            edits.push_back({a.begin(), a.end(), fmt::format("{} = {}", kHits, d.hits)});
            const Node it = d.loop.field("right");
            edits.push_back({it.begin(), it.end(),
                             fmt::format("([[_graphmend_e] for _graphmend_e in range(len({0}))] if "
                                         "{5}({1}, {2}, {0}{4}) else {3})",
                                         kHits, d.stacked, d.dim, rows, picks_argument(d), runtime::name::dispatch_all)});
        } else if (d.hit_list) {
            const Node a = d.hit_list.named_children()[0];
            edits.push_back({a.begin(), a.end(),
                             fmt::format("{0} = {1}; {2} = range(len({0})) if {7}({3}, {4}, {0}{6}) else {5}",
                                         kHits, d.hits, a.field("left").text(), d.stacked, d.dim,
                                         a.field("right").text(), picks_argument(d), runtime::name::dispatch_all)});
        }
        if (pairs) {
            const Node a = d.pairs.named_children()[0];
            const Node left = a.field("left");
            const std::string targets = left.is("pattern_list") ? fmt::format("({})", left.text()) : text(left);
            edits.push_back({a.begin(), a.end(),
                             fmt::format("{}, _graphmend_valid = {}({}, {})", targets, runtime::name::pairs,
                                         d.mask.text(), tail)});
            edits.push_back({d.source.begin(), d.source.end(),
                             fmt::format("{}(_graphmend_valid, {})", runtime::name::keep, d.source.text())});
        } else {
            mask_edits(d, tail, edits);
        }
        // The 5.x form is unsafe: on Switch Transformers at transformers 5.24.0 / torch 2.15.0
        // (sweep row, CPU) its static form's outputs differ from the original's eager run by
        // 1.43e-6, past the 1.31e-6 that separates the original compiled with Inductor from it,
        // and over 5 inputs its error against float64 is 1.18 times the eager original's
        // (benchmarks/moe_gaps.py; the forms above: 0.95 to 1.013 times).
        const Applicability applicability = d.hit_rows ? Applicability::Unsafe : Applicability::Safe;
        site.fix = Fix{std::move(edits), applicability, {runtime::stem::static_dispatch}};
        // What the runtime's static() and dispatch_all() ask (src/runtime/static_dispatch.py): the
        // loop runs as written, and breaks, otherwise. Rows per expert: the mask's elements of one
        // expert (top-k x tokens for a torch.where mask).
        site.fix->condition = fmt::format(
            "no autograd, experts x rows per expert <= 64, experts <= 4 x rows per expert{}{}",
            d.needs_eval ? ", the module in eval mode" : "",
            d.picks.empty() ? "" : ", every expert of the mask found in what the loop indexes by it");
        site.detail = fmt::format(
            "under torch.compile, without autograd recording{} and within the measured size limit{}, every "
            "candidate row is taken and the ones the mask does not pick are masked out; otherwise the loop runs as "
            "written",
            d.needs_eval ? ", in eval mode" : "",
            d.picks.empty() ? "" : ", where every expert of the mask picks an element of what the loop indexes by it");
        if (d.hit_rows) {
            site.detail += "; unsafe: its outputs may be further from the exact result than the original's (Switch "
                           "Transformers, transformers 5.24, 5 inputs: 1.18 times the eager original's error against "
                           "float64, within the compiled original's gap on 2)";
        }
        return site;
    }

    // The split-size form: the sizes stay a tensor, each consumer's split and concatenation
    // go through the runtime.
    static Site split_site(const SplitDispatch& d) {
        Site site = new_site(kInfo, d.tolist, one_line(fmt::format("expert dispatch by the split sizes {}", d.tolist.text())),
                             "GB0124");
        if (!d.refused.empty()) {
            site.reason = d.refused;
            return site;
        }
        std::vector<edits::Edit> edits;
        edits.push_back({d.tolist.begin(), d.tolist.end(), fmt::format("{}({})", runtime::name::sizes, d.tensor)});
        for (const SplitDispatch::Choice& c : d.choices) {
            edits.push_back({c.arg.begin(), c.arg.end(),
                             fmt::format("{0} := {2}({0}, {1})", c.arg.text(), c.rows, runtime::name::choose)});
        }
        for (const SplitConsumer& c : d.consumers) {
            edits.push_back({c.split_assignment.begin(), c.split_assignment.end(),
                             fmt::format("{}, {} = {}({}, {})", c.list, c.sizes, runtime::name::split, c.input, c.sizes)});
            edits.push_back({c.cat.begin(), c.cat.end(), fmt::format("{}({}, {})", runtime::name::join, c.outputs, c.sizes)});
        }
        site.fix = Fix{std::move(edits), Applicability::Safe, {runtime::stem::static_dispatch}};
        site.fix->condition = kRowsCondition;  // sizes_static() and choose()
        site.detail =
            "under torch.compile, without autograd recording, the sizes stay a tensor and every expert runs on every "
            "row, each row keeping its own expert's result; otherwise the sizes are read out and split as written";
        return site;
    }

    // The sorted-slices form: the counts stay a tensor, each slice reads every row, the skip of
    // an expert with no rows is not taken, and the concatenation goes through the runtime's join.
    static Site sorted_site(const SortedSlices& d) {
        Site site = new_site(kInfo, d.readout,
                             one_line(fmt::format("expert dispatch by slices of sorted rows {}", d.readout.text())),
                             "GB0124");
        if (!d.refused.empty()) {
            site.reason = d.refused;
            return site;
        }
        std::vector<edits::Edit> edits;
        edits.push_back({d.readout.begin(), d.readout.end(),
                         d.container.empty()
                             ? fmt::format("{}({}, {}, lambda: {})", runtime::name::counts, d.tensor, d.rows, d.readout.text())
                             : fmt::format("{}({}, {}, lambda: {}, {})", runtime::name::counts, d.tensor, d.rows,
                                           d.readout.text(), d.container)});
        if (d.skip) {
            edits.push_back({d.skip.begin(), d.skip.end(), fmt::format("{}({})", runtime::name::no_rows, d.count)});
        }
        for (const Node& s : d.slices) {
            const Node slice = s.named_children().back();
            const auto bounds = slice.named_children();
            edits.push_back({s.begin(), s.end(), fmt::format("{}({}, {}, {})", runtime::name::between, d.rows,
                                                             bounds[0].text(), bounds[1].text())});
        }
        edits.push_back({d.cat.begin(), d.cat.end(), fmt::format("{}({}, {})", runtime::name::join, d.outputs, d.sizes)});
        std::sort(edits.begin(), edits.end(), [](const edits::Edit& a, const edits::Edit& b) { return a.begin < b.begin; });
        site.fix = Fix{std::move(edits), Applicability::Safe, {runtime::stem::static_dispatch}};
        // counts(): also every expert there, where the container may hold None (expert parallelism).
        site.fix->condition = d.container.empty() ? std::string(kRowsCondition)
                                                  : fmt::format("{}, no expert None", kRowsCondition);
        site.detail =
            "under torch.compile, without autograd recording, the counts stay a tensor and every expert runs on every "
            "row, each row keeping its own expert's result; otherwise the counts are read out and sliced as written";
        return site;
    }

    // `_graphmend_rows(X, (INDICES), POS, TAIL)` for each read, `_graphmend_put(Y, (INDICES),
    // POS, VALUE, TAIL)` for each write (its value with the reads inside rewritten too).
    static void mask_edits(const ExpertDispatch& d, const std::string& tail, std::vector<edits::Edit>& edits) {
        auto rows = [&](const Node& g, int pos) {
            return fmt::format("{}({}, {}, {}, {})", runtime::name::rows, g.field("value").text(), indices(g), pos, tail);
        };
        auto with_reads = [&](const Node& n) {
            std::string out(n.text());
            for (auto it = d.gathers.rbegin(); it != d.gathers.rend(); ++it) {
                const Node& g = it->first;
                if (g.begin() < n.begin() || g.end() > n.end()) continue;
                out.replace(g.begin() - n.begin(), g.end() - g.begin(), rows(g, it->second));
            }
            return out;
        };
        std::vector<std::pair<std::uint32_t, std::uint32_t>> taken;
        for (const auto& [a, pos] : d.puts) {
            const Node left = a.field("left");
            edits.push_back({a.begin(), a.end(),
                             fmt::format("{}({}, {}, {}, {}, {})", runtime::name::put, left.field("value").text(),
                                         indices(left), pos, with_reads(a.field("right")), tail)});
            taken.emplace_back(a.begin(), a.end());
        }
        for (const auto& [g, pos] : d.gathers) {
            bool inside_put = false;
            for (const auto& [b, e] : taken) inside_put = inside_put || (b <= g.begin() && g.end() <= e);
            if (!inside_put) edits.push_back({g.begin(), g.end(), rows(g, pos)});
        }
    }

    // The indices of `x[a, :, ...]` as a Python tuple: `(a, slice(None), Ellipsis)`.
    static std::string indices(const Node& subscript) {
        std::vector<std::string> parts;
        for (const Node& i : subscript.named_children()) {
            if (i == subscript.field("value") || i.is("comment")) continue;
            if (i.is("slice") && i.named_children().empty()) {
                parts.emplace_back("slice(None)");
            } else if (i.is("ellipsis")) {
                parts.emplace_back("Ellipsis");
            } else {
                parts.emplace_back(i.text());
            }
        }
        return parts.size() == 1 ? fmt::format("({},)", parts[0]) : fmt::format("({})", fmt::join(parts, ", "));
    }

};

}  // namespace

std::unique_ptr<Rule> make_static_expert_dispatch_rule() { return std::make_unique<StaticExpertDispatchRule>(); }

}  // namespace graphmend::rules
