// Rule GM504 static-span-loop.
//
// What it does: finds loops over the separators of a 2-D mask, `for i in range(IDX.shape[0])`
// with `IDX = torch.nonzero(M)`, whose body writes points and spans between consecutive
// separators into tensors made before the loop (Grounding DINO's attention mask and position
// ids between special tokens; src/rules/gm504_static_span_loop/span_loop.hpp says what the form is and why
// its static form is equal). It rewrites (src/runtime/span_loop.py):
//     IDX = _graphmend_span_index(M)
//     for i in _graphmend_span_range(IDX, PREV, lambda ROW, COL, PREV: ((X, KIND, VALUE, GUARD), ...), CHECK):
// Traced by torch.compile, with M 2-D and every target of the shape, device and (no) grad the
// write needs, the writes are made on every position at once (masked by the separator that owns
// the position, the test, and the span) and the loop runs no iteration; otherwise, eagerly too,
// IDX is torch.nonzero(M) and the loop runs as written.
//
// Why: nonzero has a data-dependent output shape (GB0036), and every iteration tests and
// slices with 0-d tensors read into Python (GB0170, GB0124).
//
// Fix safety: safe. The values written are integers and bools, computed exactly; a write of
// torch.arange that would raise raises the same RuntimeError (through GM301's check), before
// any write.
#include <fmt/format.h>

#include "graphmend/emit.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/site.hpp"
#include "span_loop.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

const RuleInfo kInfo{"GM504", "static-span-loop", "spans between a mask's separators written all at once",
                     {.dynamic_shape = true, .fallback_block = runtime::stem::span_loop}};

class StaticSpanLoopRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    // The index call its sites report, fixed or not, and a fixed loop whole: its static form
    // evaluates every test in it on every separator.
    void claim(const Context& ctx, Claims& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (!n.is("for_statement")) return !n.is("lambda");
            if (const auto d = match_span_loop(ctx, def, n)) {
                out.add(d->index_call, ClaimKind::Reported);
                if (d->refused.empty()) {
                    out.add(n, ClaimKind::Reported);
                    out.add(n, ClaimKind::Rewritten);
                }
            }
            return true;
        });
    }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (!n.is("for_statement")) return !n.is("lambda");
            if (auto d = match_span_loop(ctx, def, n)) out.push_back(site_for(*d));
            return true;
        });
    }

private:
    static Site site_for(const SpanLoop& d) {
        Site site = new_site(kInfo, d.index_call, one_line(d.index_call.text()), "GB0036");
        if (!d.refused.empty()) {
            site.reason = d.refused;
            return site;
        }
        std::vector<edits::Edit> edits;
        edits.push_back({d.index_call.begin(), d.index_call.end(),
                         emit::call(runtime::name::span_index, {d.mask.text()})});
        const Node it = d.loop.field("right");
        edits.push_back({it.begin(), it.end(), d.iterable});
        std::vector<std::string> runtime{runtime::stem::span_loop};
        if (d.raises) runtime.emplace_back(runtime::stem::deferred_effects);
        site.fix = Fix{std::move(edits), Applicability::Safe, std::move(runtime)};
        // What the runtime's index() and static_writes() ask (src/runtime/span_loop.py); otherwise
        // the index is made and the loop runs as written, breaking as before.
        site.fix->condition = fmt::format("a 2-D mask{}, targets of the written shapes on its device not requiring grad",
                                          d.prev.empty() ? "" : fmt::format(", `{}` starting at -1 or above", d.prev));
        site.detail = fmt::format(
            "under torch.compile, the loop at line {} writes every separator's points and spans at once and runs no "
            "iteration (with a 2-D mask, and targets of the shapes written on its device, not requiring grad); "
            "otherwise it runs as written",
            d.loop.position().line);
        return site;
    }
};

}  // namespace

std::unique_ptr<Rule> make_static_span_loop_rule() { return std::make_unique<StaticSpanLoopRule>(); }

}  // namespace graphmend::rules
